#pragma once
// FP4 E2M1 (§2.1): 4-bit code, bit 3 = sign, bits 0–2 index the magnitudes
// [0, 0.5, 1, 1.5, 2, 3, 4, 6]. No NaN, no infinity. Stored two per byte
// (`float4_e2m1fn_x2`, I8 in the checkpoint): element 2j in the LOW nibble, 2j+1 in the HIGH one.
#include <array>
#include <bit>
#include <cstdint>

namespace dsv4 {

inline constexpr std::array<float, 16> kE2m1Table = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                                     4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                                     -2.0f, -3.0f, -4.0f, -6.0f};

inline constexpr float kE2m1Max = 6.0f;

constexpr const float* e2m1_table() { return kE2m1Table.data(); }

// Only the low 4 bits of code are used.
constexpr float e2m1_to_f32(std::uint8_t code) { return kE2m1Table[code & 0xFu]; }

// fp32 → E2M1, round to nearest on the grid, ties to the even code (§2.1). Each comparison below
// is one midpoint of the grid; a tie goes to whichever neighbour has an even code (mantissa bit 0
// clear): 0.25→0, 0.75→1, 1.25→1, 1.75→2, 2.5→2, 3.5→4, 5→4. Hence ">" where the lower neighbour
// is even and ">=" where the upper one is.
//
// Contract: the reference only applies this to values already clamped to [−6, 6]. Outside that
// range the thresholds saturate naturally (|v| > 5 → ±6, ±inf included). NaN is outside the
// contract: every comparison is false, so it maps to the zero code of its sign bit (0 or 8);
// callers that must propagate NaN (the QDQ in qdq.cc does) test for it themselves.
// The sign is taken from the bit, so −0 and negative values that round to zero give code 8.
constexpr std::uint8_t e2m1_from_f32(float v) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(v);
  const float a = std::bit_cast<float>(u & 0x7FFFFFFFu);
  const unsigned idx = static_cast<unsigned>(a > 0.25f) + static_cast<unsigned>(a >= 0.75f) +
                       static_cast<unsigned>(a > 1.25f) + static_cast<unsigned>(a >= 1.75f) +
                       static_cast<unsigned>(a > 2.5f) + static_cast<unsigned>(a >= 3.5f) +
                       static_cast<unsigned>(a > 5.0f);
  return static_cast<std::uint8_t>(((u >> 28) & 0x8u) | idx);
}

// Packing: lo goes to bits 0–3 (element 2j), hi to bits 4–7 (element 2j+1).
constexpr std::uint8_t e2m1_pack(std::uint8_t lo, std::uint8_t hi) {
  return static_cast<std::uint8_t>((lo & 0xFu) | ((hi & 0xFu) << 4));
}
constexpr std::uint8_t e2m1_lo(std::uint8_t byte) { return byte & 0xFu; }
constexpr std::uint8_t e2m1_hi(std::uint8_t byte) { return static_cast<std::uint8_t>(byte >> 4); }

}  // namespace dsv4
