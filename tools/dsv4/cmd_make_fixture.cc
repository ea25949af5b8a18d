// dsv4 make-fixture: write a synthetic model directory in the official checkpoint format.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "commands.h"
#include "make_fixture.h"
#include "io/checkpoint_validation.h"
#include "io/fixture.h"
#include "text/engram_token_map.h"
#include "util/error.h"
#include "util/human_format.h"

namespace dsv4::cli {
namespace {

namespace fs = std::filesystem;
using Args = MakeFixtureArgs;

}  // namespace

int make_fixture(const MakeFixtureArgs& a) {
  if (a.preset.empty() == a.config.empty()) fail("make-fixture needs exactly one of --preset NAME or --config FILE");
  ModelConfig c = a.preset.empty() ? load_model_config(a.config) : fixture_preset(a.preset);

  // Never write over an existing model: a fixture directory is either new or explicitly replaced.
  if (fs::exists(a.out) && !fs::is_directory(a.out)) fail("--out '{}' exists and is not a directory", a.out);
  if (fs::exists(a.out) && !fs::is_empty(a.out) && !a.force)
    fail("--out '{}' is not empty; pass --force to replace the model in it", a.out);

  FixtureOptions opt;
  opt.seed = a.seed;
  opt.out_dir = a.out;
  opt.max_shard_bytes = a.shard_mib > 0 ? a.shard_mib << 20 : (c.dim >= 1024 ? 2048ull << 20 : 16ull << 20);
  if (!a.tokenizer.empty()) {
    // Engram's compressed vocabulary is a property of the tokenizer (spec §8.2): the config must
    // carry the size the tokenizer gives, or the model would refuse to load.
    if (c.has_engram()) {
      EngramTokenMap map = build_engram_token_map(a.tokenizer);
      c.engram_compressed_vocab_size = map.compressed_vocab_size;
    }
    opt.extra_files.push_back({a.tokenizer, "tokenizer.json"});
    fs::path cfg = fs::path(a.tokenizer).parent_path() / "tokenizer_config.json";
    if (fs::exists(cfg)) opt.extra_files.push_back({cfg.string(), "tokenizer_config.json"});
  }
  if (!a.quiet)
    opt.progress = [](std::uint64_t done, std::uint64_t total) {
      std::fprintf(stderr, "\rwriting weights: %5.1f%%  %s / %s", 100.0 * static_cast<double>(done) / static_cast<double>(total),
                   human_bytes(done).c_str(), human_bytes(total).c_str());
      if (done == total) std::fputc('\n', stderr);
    };
  if (fs::exists(a.out) && a.force) {
    for (const auto& e : fs::directory_iterator(a.out))
      if (e.path().extension() == ".safetensors" || e.path().filename() == "model.safetensors.index.json") fs::remove(e.path());
  }
  write_fixture(c, opt);
  // The written directory must pass the same validation every model passes before use.
  ModelDirSummary s = validate_model_dir(a.out, c);
  if (!a.quiet || a.report == stdout)
    std::fprintf(a.report, "wrote %s: %s (seed %llu), %s tensors in %s shards, %s%s\n", a.out.c_str(), c.source.c_str(),
              static_cast<unsigned long long>(a.seed), with_commas(s.tensors).c_str(), with_commas(s.shards).c_str(),
              human_bytes(s.bytes).c_str(),
              a.tokenizer.empty() ? " (no tokenizer: add tokenizer.json before running Engram layers)"
                                  : fmt::format(", tokenizer with {} Engram keys", c.engram_compressed_vocab_size).c_str());
  return 0;
}

void register_make_fixture(CLI::App& app) {
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("make-fixture", "Write a synthetic model (random weights) in the official checkpoint format");
  sub->add_option("--preset", a->preset, fmt::format("a built-in configuration ({})", fmt::join(fixture_preset_names(), ", ")));
  sub->add_option("--config", a->config, "a config.json to build instead of a preset")->check(CLI::ExistingFile);
  sub->add_option("--seed", a->seed, "weights are a pure function of the seed")->required();
  sub->add_option("--out", a->out, "the model directory to create")->required();
  sub->add_option("--tokenizer", a->tokenizer, "a tokenizer.json to ship with the model (sets the Engram compressed vocab)")
      ->check(CLI::ExistingFile);
  sub->add_option("--shard-size", a->shard_mib, "maximum shard size in MiB (default 16 for small models, 2048 for wide ones)");
  sub->add_flag("--force", a->force, "replace the model in a non-empty --out directory");
  sub->add_flag("-q,--quiet", a->quiet, "no progress output");
  add_command(sub, [a] { return make_fixture(*a); });
}

}  // namespace dsv4::cli
