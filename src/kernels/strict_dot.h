#pragma once
// Dot products, matrix products and reductions of fp32 values — rule 2 of
// docs/strict-numerics.md, matching the oracle's strict.sdot / strict.smatmul / strict.ssum /
// strict.smean (tests/oracle/dsv4_oracle/strict.py).
//
// Strict results: every product of two fp32 values is exact in float64, the sum is the exact
// sum, and the output is RNE32(RNE64(exact)) (fsum semantics then one fp32 rounding). The
// mean is ONE operation: RNE32(RNE64(exact_sum / n)). Zero and non-finite conventions are those
// of exact_sum.h (exact zero → +0; NaN/inf → the IEEE float64 result).
//
// How: a float64 sum in any order plus the bound n·2^−52·Σ|t| decides almost every output; the
// rest go through the exact accumulator. The order of the float64 sum is free (the bound holds
// for every order), so the loops below use several independent partial sums for speed.
//
// Numerics::kFast is the engine's fast mode: fp32 accumulation in increasing k, no guarantee
// beyond being close to strict (it is compared with strict statistically).
#include <cstddef>
#include <span>

namespace dsv4::kernels {

// Σ a[i]·b[i] in float64 from exact products (two floats' product is exact in a double), in 16
// partial sums — lane l takes the indices ≡ l (mod 16), ascending — joined by the halving tree
// (l, l+8), (l, l+4), (l, l+2), (l, l+1). Inline so that callers built for wider vectors
// (function clones) vectorise it; the order is fixed, so every build gives the same bits.
// dot16_f64's last steps, for callers that run its 16 partial sums `acc` over the whole 16-element
// steps of a and b themselves (n − i < 16 elements left from i): the tail, then the tree.
inline double dot16_finish(double* acc, const float* a, const float* b, std::size_t i, std::size_t n) {
  for (std::size_t l = 0; i + l < n; ++l) acc[l] += static_cast<double>(a[i + l]) * static_cast<double>(b[i + l]);
  for (std::size_t h = 8; h > 0; h /= 2)
    for (std::size_t l = 0; l < h; ++l) acc[l] += acc[l + h];
  return acc[0];
}

inline double dot16_f64(const float* a, const float* b, std::size_t n) {
  double acc[16] = {};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (std::size_t l = 0; l < 16; ++l) acc[l] += static_cast<double>(a[i + l]) * static_cast<double>(b[i + l]);
  return dot16_finish(acc, a, b, i, n);
}

enum class Numerics { kStrict, kFast };

// Σ_k a[k]·b[k], a.size() == b.size().
float strict_dot(std::span<const float> a, std::span<const float> b);
// Same for float64 operands holding exact values whose products are exact in float64
// (dequantized FP8/FP4 weights and activations: ≤ 8 significant bits per product).
float strict_dot64(std::span<const double> a, std::span<const double> b);

// out[i, j] = Σ_k a[i, k]·b[j, k]: a [m, k], b [n, k] row-major, out [m, n] (strict.sdot with
// b as the weight, F.linear's layout).
void matmul_nt(std::span<const float> a, std::span<const float> b, std::span<float> out,
               std::size_t m, std::size_t n, std::size_t k, Numerics mode = Numerics::kStrict);

// Σ x (strict.ssum over one axis) and the mean Σ x / n (strict.smean, one rounding).
float strict_sum(std::span<const float> x);
float strict_mean(std::span<const float> x);
// mean(x²) with exact float64 squares, the RMSNorm / hc_mixes statistic
// (strict.smean(x64 * x64)).
float strict_mean_sq(std::span<const float> x);

}  // namespace dsv4::kernels
