// dsv4 validate: check a model directory the way every command does before using it — config
// invariants, every tensor against the architecture manifest, the tokenizer against the config.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "io/checkpoint_validation.h"
#include "io/config.h"
#include "text/engram_token_map.h"
#include "util/error.h"
#include "util/human_format.h"

namespace dsv4::cli {

void register_validate(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("validate", "Check a model directory against its architecture");
  sub->add_option("-m,--model", *dir, "the model directory")->required()->check(CLI::ExistingDirectory);
  add_command(sub, [dir] {
    ModelConfig c = load_model_config_dir(*dir);
    ModelDirSummary s = validate_model_dir(*dir, c);
    std::string tok = "no tokenizer.json";
    if (s.has_tokenizer) {
      std::string path = (std::filesystem::path(*dir) / "tokenizer.json").string();
      if (c.has_engram()) {
        EngramTokenMap map = build_engram_token_map(path);
        if (map.compressed_vocab_size != c.engram_compressed_vocab_size)
          fail("'{}': its Engram token map has {} keys but the config says engram_compressed_vocab_size = {} (spec §8.2)",
               path, map.compressed_vocab_size, c.engram_compressed_vocab_size);
        tok = "tokenizer.json consistent with engram_compressed_vocab_size " + with_commas(map.compressed_vocab_size);
      } else {
        tok = "tokenizer.json present";
      }
    }
    std::printf("%s: valid — %s tensors in %s shards, %s; %s\n", dir->c_str(), with_commas(s.tensors).c_str(),
                with_commas(s.shards).c_str(), human_bytes(s.bytes).c_str(), tok.c_str());
    return 0;
  });
}

}  // namespace dsv4::cli
