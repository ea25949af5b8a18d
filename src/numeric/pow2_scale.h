#pragma once
// The power-of-two scale of §2.2 ("fast_round_scale"), shared by FP8 act_quant (§2.3) and the
// E8M0 FP4 QDQ (§2.4): scale = 2^ceil(log2 t) for t = fp32(amax · c), computed on t's bits exactly
// as the kernels do, so the result never depends on a libm log2/ceil.
#include <bit>
#include <cstdint>

namespace dsv4 {

// The reciprocal constants c of §2.2, correctly rounded to fp32 (an IEEE division of two exact
// constants is correctly rounded). Tests check that they also equal the fp32 rounding of the
// double 1/448 and 1/6, which is what a Python constant passed to a kernel would give.
inline constexpr float kFp8RecipMax = 1.0f / 448.0f;
inline constexpr float kFp4RecipMax = 1.0f / 6.0f;

// 2^ceil(log2 t): exponent field − 127, plus one when any mantissa bit is set, rebuilt as a bare
// exponent. Exact for powers of two (returns t itself).
//
// Domain: t a positive normal fp32 ≤ 2^127 — what the amax floors of §2.3/2.4 guarantee. Outside
// it the same bit formula is applied to |t| (sign ignored), with these consequences, documented so
// that callers can rely on them rather than on accident:
//   t in (2^127, +inf]   → +inf (exponent field 255, i.e. the E8M0 NaN code when stored);
//   t = ±0               → +0;   t subnormal → 2^−126;
//   t NaN                → t (quiet NaN passed through; the raw formula would yield −0).
constexpr float pow2_ceil_scale(float t) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(t);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return t;
  const std::uint32_t exp = (u >> 23) & 0xFFu;  // biased exponent: e_biased = exp (+1 if inexact)
  const std::uint32_t bump = (u & 0x7FFFFFu) != 0 ? 1u : 0u;
  return std::bit_cast<float>((exp + bump) << 23);
}

}  // namespace dsv4
