#pragma once
// FP8 E4M3FN (`float8_e4m3fn`, §2.1): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits.
// No infinities; 0x7F / 0xFF are the only NaNs; largest finite ±448 (0x7E / 0xFE); smallest normal
// 2^−6 (0x08); subnormals m·2^−9 for m = 1..7.
//
// The encoder is the kernels' cast: round to nearest, ties to even, saturating to ±448. The
// reference clamps to ±448 before every cast (§2.3, §2.4), so saturation only matters for callers
// that skip the clamp; it is built in so that no input can produce the NaN code by overflow.
// Everything is on integer bits, independent of the fp environment, and constexpr.
#include <array>
#include <bit>
#include <cstdint>

namespace dsv4 {

namespace detail {

// Value of one E4M3FN code, built from bits (normals) or an exact small product (subnormals).
constexpr float e4m3_decode_slow(std::uint8_t code) {
  const std::uint32_t sign = static_cast<std::uint32_t>(code & 0x80u) << 24;
  const std::uint32_t exp = (code >> 3) & 0xFu;
  const std::uint32_t man = code & 0x7u;
  if (exp == 0xFu && man == 0x7u) return std::bit_cast<float>(sign | 0x7FC00000u);  // NaN
  if (exp == 0) {
    const float mag = static_cast<float>(man) * 0x1p-9f;  // exact: 3-bit integer times 2^−9
    return sign ? -mag : mag;                             // keeps −0 for 0x80
  }
  // Normal: rebias 7 → 127 and move the 3 mantissa bits to the top of the fp32 mantissa.
  return std::bit_cast<float>(sign | ((exp + 120u) << 23) | (man << 20));
}

constexpr std::array<float, 256> make_e4m3_table() {
  std::array<float, 256> t{};
  for (unsigned c = 0; c < 256; ++c) t[c] = e4m3_decode_slow(static_cast<std::uint8_t>(c));
  return t;
}

}  // namespace detail

// All 256 decoded values, indexed by code; 0x7F and 0xFF hold quiet NaNs (sign kept).
inline constexpr std::array<float, 256> kE4m3Table = detail::make_e4m3_table();

// The decode table as a plain pointer for kernels (256 floats, lifetime of the program).
constexpr const float* e4m3_table() { return kE4m3Table.data(); }

constexpr float e4m3_to_f32(std::uint8_t code) { return kE4m3Table[code]; }

inline constexpr float kE4m3Max = 448.0f;

// fp32 → E4M3FN, RNE with saturation. Sign is always kept (−0 → 0x80, −NaN → 0xFF, and magnitudes
// that round to zero keep their sign).
constexpr std::uint8_t e4m3_from_f32(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint8_t sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7Fu;  // NaN → the NaN code
  // |f| ≥ 448 (0x43E00000), ±inf included: saturate. Below 448 nothing can round past 448, because
  // 464 (the midpoint to the would-be code 0x7F) ties to the even code 0x7E = 448 anyway.
  if (a >= 0x43E00000u) return sign | 0x7Eu;
  if (a >= 0x3C800000u) {  // |f| ≥ 2^−6: normal range
    // Round the 23-bit mantissa to 3 bits in place (RNE on the 20 dropped bits); a carry into the
    // exponent yields the correct next binade. Then rebias the exponent 127 → 7 (120 << 3 in code
    // units, since code = exp << 3 | mantissa).
    const std::uint32_t r = a + 0x7FFFFu + ((a >> 20) & 1u);
    return static_cast<std::uint8_t>(sign | ((r >> 20) - (120u << 3)));
  }
  // Subnormal range: code = RNE(|f| / 2^−9) ∈ [0, 8], where 8 is the smallest normal 0x08.
  // |f| = M·2^(e−150) with M the 24-bit significand, so |f|/2^−9 = M / 2^(141−e).
  const std::uint32_t e = a >> 23;
  if (e < 117) return sign;  // shift > 24: |f| < 2^−10 (fp32 subnormals and zero included) → ±0
  const std::uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 141u - e;  // 21..24 because e ≤ 120 here
  std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<std::uint8_t>(sign | q);
}

}  // namespace dsv4
