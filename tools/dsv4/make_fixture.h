#pragma once
// dsv4 make-fixture as a function, for the built-in default model as well.
#include <cstdint>
#include <cstdio>
#include <string>

namespace dsv4::cli {

struct MakeFixtureArgs {
  std::string preset, config, out, tokenizer;
  std::uint64_t seed = 0;
  std::uint64_t shard_mib = 0;
  bool force = false;
  bool quiet = false;
  std::FILE* report = stdout;  // where the one-line summary goes (the default model: stderr)
};

// Writes and validates the model directory; throws dsv4::Error on any problem.
int make_fixture(const MakeFixtureArgs& a);

}  // namespace dsv4::cli
