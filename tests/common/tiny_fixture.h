#pragma once
// A `tiny` preset model written into a fresh temporary directory for one test suite, with the
// downloaded tokenizer (its Engram compressed vocabulary set to match), removed by the owner.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "io/fixture.h"
#include "test_env.h"
#include "text/engram_token_map.h"

namespace dsv4::test {

// tokenizer: a file name in test_data_dir() ("tokenizer.json" or "tokenizer-v41.json"); with
// tokenizer_config, tokenizer_config.json (BOS/EOS names) is shipped too.
inline std::string write_tiny_fixture(const std::string& name, std::uint64_t seed, const std::string& tokenizer,
                                      bool tokenizer_config = false) {
  namespace fs = std::filesystem;
  const std::string dir = (fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  const std::string tok = test_data_dir() + "/" + tokenizer;
  ModelConfig c = fixture_preset("tiny");
  c.engram_compressed_vocab_size = build_engram_token_map(tok).compressed_vocab_size;
  FixtureOptions opt;
  opt.seed = seed;
  opt.out_dir = dir;
  opt.extra_files.push_back({tok, "tokenizer.json"});
  if (tokenizer_config) opt.extra_files.push_back({test_data_dir() + "/tokenizer_config.json", "tokenizer_config.json"});
  write_fixture(c, opt);
  return dir;
}

}  // namespace dsv4::test
