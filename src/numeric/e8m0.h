#pragma once
// E8M0 (`float8_e8m0fnu`, §2.1): an unsigned biased exponent byte e with value 2^(e − 127); no
// sign, no zero, 0xFF is NaN. Every power-of-two ("ue8m0") scale of §2.3–2.5 is stored this way.
//
// Range: 0x00 = 2^−127, which is an fp32 *subnormal* (bit pattern 0x00400000); 0x01..0xFE are the
// fp32 normals 2^−126 .. 2^127, whose fp32 exponent field is exactly e. The run-time scales of
// §2.2 are always normal (amax floors), but checkpoint scales may use any code.
// Note for kernels: rebuilding a scale as the bit pattern e << 23 is right for e = 1..254 only;
// it turns code 0 into +0 instead of 2^−127 (spec §2.1 gives 2^(e−127) for every e, so code 0
// must be special-cased or decoded through e8m0_to_f32).
#include <bit>
#include <cstdint>

namespace dsv4 {

constexpr float e8m0_to_f32(std::uint8_t e) {
  if (e == 0xFFu) return std::bit_cast<float>(0x7FC00000u);
  if (e == 0) return std::bit_cast<float>(0x00400000u);  // 2^−127, fp32 subnormal
  return std::bit_cast<float>(static_cast<std::uint32_t>(e) << 23);
}

// Fast path for kernels: the code of a power of two p in [2^−127, 2^127] is the fp32 exponent field
// of p (this also holds for 2^−127, whose field is 0). Precondition, not checked: p is such a
// power of two (as pow2_ceil_scale() produces); any other input yields a meaningless code.
constexpr std::uint8_t e8m0_from_pow2_unchecked(float p) {
  return static_cast<std::uint8_t>((std::bit_cast<std::uint32_t>(p) >> 23) & 0xFFu);
}

// Checked encoder. Contract: p must be exactly 2^k for k in [−127, 127] (returns k + 127), or a
// NaN (returns 0xFF, the NaN code; the NaN's sign is ignored since E8M0 is unsigned). Anything
// else — zero, negative, ±inf, a non-power of two, or a power of two outside the range — throws
// dsv4::Error: E8M0 cannot represent it, and silently rounding a scale would corrupt every value
// that uses it.
std::uint8_t e8m0_from_pow2(float p);

}  // namespace dsv4
