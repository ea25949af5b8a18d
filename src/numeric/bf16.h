#pragma once
// bfloat16 storage and the fp32 → bf16 rounding used at every "bf16(x)" point of the spec (§2
// intro): round-to-nearest-even on the 16 dropped mantissa bits, overflow to ±inf, NaN kept as a
// quiet NaN.
//
// These are the hottest scalar helpers of the engine (every activation passes through them), so
// they are header-only, constexpr and branch-light. They work on bits only: no fp environment
// (rounding mode, FTZ/DAZ) can change their results, and subnormal bf16 values are kept exactly.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace dsv4 {

// One bfloat16 value: the upper 16 bits of the IEEE binary32 with the same sign and exponent.
// Kept a trivial, standard-layout 2-byte struct so spans of it alias checkpoint bytes directly.
struct BF16 {
  std::uint16_t bits;
};
static_assert(sizeof(BF16) == 2 && alignof(BF16) == 2);
static_assert(std::is_trivial_v<BF16> && std::is_standard_layout_v<BF16>);

// Exact widening: every bf16 value (including subnormals, ±0, ±inf, NaN payloads) is an fp32 value.
constexpr float bf16_to_f32(BF16 h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h.bits) << 16);
}

// fp32 → bf16, round to nearest, ties to even.
// Adding 0x7FFF plus the lowest kept bit to the 32-bit pattern rounds the magnitude in place: a
// carry out of the mantissa bumps the exponent, which is the correct next binade, and from the
// largest finite binade it lands exactly on the infinity pattern (the threshold is
// (2 − 2^−8)·2^127, the midpoint above the largest bf16, which ties to the even "code" = inf).
// The sign bit is never disturbed because the magnitude of a non-NaN never carries past 0x7F80xxxx.
// NaN must be special-cased: rounding could turn a NaN whose payload sits only in the low 16 bits
// into an infinity, so NaNs are truncated and forced quiet (bit 6 of the bf16 mantissa).
constexpr BF16 bf16_from_f32(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    return BF16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  }
  const std::uint32_t lsb = (u >> 16) & 1u;
  return BF16{static_cast<std::uint16_t>((u + 0x7FFFu + lsb) >> 16)};
}

// bf16(x) as the spec writes it: the fp32 value nearest to x that is representable in bf16.
constexpr float round_bf16(float f) { return bf16_to_f32(bf16_from_f32(f)); }

// The caches store bf16 values as their bit patterns (half the bytes of fp32, and what a decode
// step reads). Packing is exact for values that are bf16 values — everything a cache holds has
// been rounded or FP8/FP4-QDQ'd — and returns the index of the first value that is not one (a
// bug upstream, never rounded away silently), or n when all are.
inline std::size_t pack_bf16_exact(const float* src, std::size_t n, std::uint16_t* dst) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(src[i]);
    if ((u & 0xFFFFu) != 0) return i;
    dst[i] = static_cast<std::uint16_t>(u >> 16);
  }
  return n;
}
inline void unpack_bf16(const std::uint16_t* src, std::size_t n, float* dst) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(static_cast<std::uint32_t>(src[i]) << 16);
}

}  // namespace dsv4
