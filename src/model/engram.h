#pragma once
// Engram (spec §8): n-gram hashes of compressed token ids index per-layer FP8 memory tables; a
// gate per hyper-connection copy decides how much of the read value joins the residual stream.
//
//   EngramHasher  — §8.1 layout (primes derived by the prime search, multipliers drawn as numpy
//                   draws them) and §8.3 NgramHash over a sequence's compressed-id history.
//   engram_forward — §8.4 for one Engram layer, with the op splits of the oracle's
//                   engram_forward (tests/oracle/dsv4_oracle/engram.py), each op rounded once.
#include <cstdint>
#include <span>
#include <vector>

#include "io/engram_layout.h"
#include "kernels/linear.h"
#include "text/engram_token_map.h"

namespace dsv4 {

struct ModelConfig;

// Multipliers of §8.1 for one layer: m = 2·v + 1, v = default_rng(10007·layer).integers(0,
// bound, max_ngram), bound = max(1, (2^63 − 1) // compressed_vocab_size // 2).
std::vector<std::int64_t> engram_hash_multipliers(const ModelConfig& c, std::int64_t layer_id);

class EngramHasher {
 public:
  // `map` must outlive the hasher; its size must equal engram_compressed_vocab_size (checked:
  // the reference asserts it).
  EngramHasher(const ModelConfig& c, const EngramTokenMap& map);

  std::size_t layers() const { return layout_.layers.size(); }
  std::size_t columns() const { return cols_; }  // (max_ngram − 1) · n_heads per layer

  // §8.3 for positions start_pos .. start_pos + S − 1: writes their compressed ids into
  // `history` (truncated to start_pos first; image tokens, mask 0, are DEAD = −1) and the
  // hashes [S, layers(), columns()] (row indices already offset by the column's base) to out.
  // mask empty = all text. A text id the tokenizer does not define throws dsv4::Error (§16.6).
  void hash(std::vector<std::int64_t>& history, std::span<const std::int64_t> ids,
            std::int64_t start_pos, std::span<const std::uint8_t> mask,
            std::span<std::int64_t> out) const;

  const EngramLayout& layout() const { return layout_; }
  const std::vector<std::vector<std::int64_t>>& multipliers() const { return mult_; }
  std::int64_t pad() const { return pad_; }

 private:
  const EngramTokenMap& map_;
  EngramLayout layout_;
  std::vector<std::vector<std::int64_t>> mult_;  // [layer][shift]
  std::int64_t pad_ = 0;
  std::size_t max_ngram_ = 0, n_heads_ = 0, cols_ = 0;
};

// One Engram layer's tensors (layers.L.engram.*).
struct EngramWeights {
  std::span<const std::uint8_t> table;        // E4M3 [rows, head_dim]
  std::span<const std::uint8_t> table_scale;  // E8M0 [rows, head_dim / 32]
  std::size_t rows = 0;
  kernels::WeightRef wkv;        // FP8 [(hc + 1)·dim, cols·head_dim]
  std::vector<float> wgt;        // fp32(q_weight) · fp32(k_weight) [hc, dim] (exact)
};

// §8.4: X [S, hc, dim] (bf16 values) → out [S, hc, dim]; hashes [S, cols] (this layer's slice);
// mask [S] (0 = image token: gate 0) or empty; gate_out [S, hc] if non-empty.
void engram_forward(std::span<const float> x, std::span<const std::int64_t> hashes,
                    std::span<const std::uint8_t> mask, const EngramWeights& w,
                    const ModelConfig& c, const kernels::LinearOptions& lin, std::size_t tokens,
                    std::span<float> out, std::span<float> gate_out = {});

}  // namespace dsv4
