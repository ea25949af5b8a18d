#pragma once
// Synthetic checkpoints in the exact official format (spec §3.1), for tests and benchmarks: real
// weights (~475 GiB) are not available here, so every test runs on models written by this code,
// and the loader that reads them is the one a user runs on the real files.
//
// Weights are a pure function of (seed, tensor name, element index) — counter-based hashing, no
// sequential RNG — so a fixture is reproducible bit for bit whatever the shard layout, chunking
// or thread count. They are made to keep activations in range through every layer:
//   * FP8/FP4 linears: Gaussian-like values of std 1/√fan_in quantised with power-of-two block
//     scales chosen from the block's amax, like the release's E8M0 scales (one block in four uses
//     a scale one step coarser, as real checkpoints vary from block to block);
//   * norm weights near 1, small gate biases, attention sinks around 0;
//   * hyper-connections: projections that give O(1) mixes, and a comb base with a strong
//     diagonal so the Sinkhorn mixes stay non-degenerate (each copy keeps most of itself).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "io/config.h"

namespace dsv4 {

// Named configurations:
//   tiny — dim 256, 12 layers + 3 DSpark stages covering every layer role of spec §1.3
//          (window-only, ratio-2 kv+index sources with reusing layers, a ratio-1 candidate
//          source, re-indexing layers, reusing layers), Engram before a window layer and a kv
//          source, a 2-block ViT; window 32, index top-k 40, 12 candidate blocks of 4, so a few
//          dozen tokens wrap the ring and make selection and candidate masking matter, and
//          window + top-k > 64 (two 64-slot attention blocks). vocab_size 129280 so the real
//          DeepSeek tokenizer fits.
//   wide — the released per-layer widths (dim 5120, 64 heads × 512, q_lora 1280, 8 × 1024 output
//          groups, experts of 2304, indexer 32 × 128) with 6 layers, 16 routed experts and one
//          DSpark stage: about 6.5 GB, for benchmarks on a 24 GiB machine.
//   long — the released attention geometry per head (head_dim 512, window 128, index keys 128,
//          top-k 512, 2048 candidate blocks of 8) with 8 attention and 4 index heads, dim 1024,
//          4 layers (window, ratio-2 source, ratio-1 candidate source, ratio-1 candidate user)
//          and max_seq_len 40960: context-scaling benchmarks up to 32K tokens.
std::vector<std::string> fixture_preset_names();
// Throws dsv4::Error listing the known names for an unknown one.
ModelConfig fixture_preset(std::string_view name);

struct FixtureOptions {
  std::uint64_t seed = 0;
  std::string out_dir;
  // Files copied into the model directory verbatim: (source path, name in the directory), e.g.
  // a tokenizer file of any name shipped as tokenizer.json.
  std::vector<std::pair<std::string, std::string>> extra_files;
  // A new shard starts before a tensor that would push the current shard past this size.
  std::uint64_t max_shard_bytes = 64ull << 20;
  // Called now and then with (bytes written, total bytes).
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

// Writes config.json (inference style, every field), the sharded safetensors with
// model.safetensors.index.json, and the extra files. The config must be valid.
void write_fixture(const ModelConfig& c, const FixtureOptions& opt);

// The value generator, exposed for tests: the float a tensor element is drawn from before
// quantisation (deterministic in seed, name and index).
float fixture_normal(std::uint64_t seed, std::string_view name, std::uint64_t index);

}  // namespace dsv4
