#pragma once
// RoPE with YaRN — spec §2.8, the oracle's ops.rope_freqs / yarn_correction_range / yarn_ramp /
// rope_table / apply_rope (tests/oracle/dsv4_oracle/ops.py).
//
// Op splits (each fp32 op rounded once, strict transcendentals):
//   expo_i  = fp32(fp32(2i) / fp32(dim));  freq_i = fp32(1 / strict_pow(fp32(base), expo_i))
//   YaRN (yarn && original_seq_len > 0): (low, high) from yarn_correction_range in double
//     arithmetic (with the double base, as the reference's Python code); ramp_i =
//     clamp(fp32(fp32(i − fp32(low)) / fp32(span)), 0, 1) with span = high − low, or 0.001 when
//     high == low; smooth = fp32(1 − ramp); freq = fp32(fp32(fp32(freq/factor)·fp32(1 − smooth))
//     + fp32(freq·smooth)) in exactly this order.
//   angle = fp32(fp32(p)·freq_i); cos, sin = strict_cos / strict_sin of the fp32 angle.
//   apply: pair (a, b) = (x[D−2P+2j], x[D−2P+2j+1]); each output component is ONE correctly
//     rounded operation of the exact a·cos − b·sin (resp. a·sin + b·cos): the products of two
//     fp32 values are exact in double, so their double difference is RNE64 of the exact value
//     (an fma-based two-product would give the same bits), then RNE32, then bf16.
//     The inverse rotation uses the conjugate (sin → −sin). Dims before the last 2P are untouched.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace dsv4::kernels {

struct RopeParams {
  std::size_t dim = 64;               // rope_head_dim (even)
  double base = 10000.0;              // rope_theta or compress_rope_theta
  bool yarn = false;                  // apply the YaRN blend (when original_seq_len > 0)
  std::int64_t original_seq_len = 0;
  double factor = 1.0;                // rope_factor
  double beta_fast = 32.0;
  double beta_slow = 1.0;
};

// (low, high) of §2.8 step 2 (Python double arithmetic, math.floor / math.ceil).
std::pair<std::int64_t, std::int64_t> yarn_correction_range(double beta_fast, double beta_slow,
                                                            std::size_t dim, double base,
                                                            std::int64_t original_seq_len);
// ramp_i, i = 0..n−1.
std::vector<float> yarn_ramp(std::int64_t low, std::int64_t high, std::size_t n);
// freq_i, i = 0..dim/2 − 1.
std::vector<float> rope_freqs(const RopeParams& p);

// cos / sin [n_pos, dim/2] row-major (row = position).
struct RopeTable {
  std::size_t n_pos = 0;
  std::size_t half = 0;  // P = dim / 2 pairs
  std::vector<float> cos;
  std::vector<float> sin;
  std::span<const float> cos_row(std::size_t pos) const;
  std::span<const float> sin_row(std::size_t pos) const;
};
RopeTable rope_table(const RopeParams& p, std::size_t n_pos);

// Rotates, in place, the last 2P dims of each of the n_vec vectors x[t][v][0..d) of token t
// (x [tokens, n_vec, d]) with the table rows cos/sin [tokens, P] (one row per token, shared by
// its n_vec vectors, e.g. heads). Rotated components become bf16; the others are left as is.
void apply_rope(std::span<float> x, std::size_t tokens, std::size_t n_vec, std::size_t d,
                std::span<const float> cos, std::span<const float> sin, std::size_t half,
                bool inverse = false);
// Same, rows taken from a table at the given positions (positions.size() == tokens).
void apply_rope(std::span<float> x, std::size_t n_vec, std::size_t d, const RopeTable& table,
                std::span<const std::int64_t> positions, bool inverse = false);

}  // namespace dsv4::kernels
