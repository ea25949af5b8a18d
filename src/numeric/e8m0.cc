// Checked E8M0 encoding (contract in e8m0.h).
#include "numeric/e8m0.h"

#include <bit>
#include <cstdint>

#include "util/error.h"

namespace dsv4 {

std::uint8_t e8m0_from_pow2(float p) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(p);
  const std::uint32_t exp = (u >> 23) & 0xFFu;
  const std::uint32_t man = u & 0x7FFFFFu;
  if (exp == 0xFFu && man != 0) return 0xFFu;  // NaN of either sign → the NaN code
  // Positive normal with an empty mantissa: 2^−126 .. 2^127, code = exponent field (1..254).
  // The field 0xFF with an empty mantissa is +inf and is rejected below.
  if ((u >> 31) == 0 && man == 0 && exp != 0 && exp != 0xFFu) return static_cast<std::uint8_t>(exp);
  if (u == 0x00400000u) return 0;  // 2^−127: the only subnormal E8M0 can hold
  fail("E8M0 scale must be a power of two in [2^-127, 2^127] or NaN, got {} (bits 0x{:08x})", p, u);
}

}  // namespace dsv4
