// bf16 conversions (§2 intro: "bf16(x)" = RNE of an fp32 to bfloat16).
#include "numeric/bf16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "reference_formats.h"

namespace dsv4 {
namespace {

float f32_of(std::uint32_t u) { return std::bit_cast<float>(u); }
std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
bool is_nan_bf16(std::uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x7Fu) != 0; }

// Expected bf16 bits of an fp32 by the reference model (NaN → some quiet NaN, checked separately).
std::uint16_t expected_bits(float f, ref::Tie tie = ref::Tie::Even) {
  return ref::bf16_bits_of(ref::bf16_nearest(static_cast<double>(f), tie));
}

// The fp32 inputs that decide a rounding rule: for every finite bf16 pattern c (both signs) the
// value itself, one fp32 ulp above it, the exact midpoint to the next pattern and one fp32 ulp on
// either side of that midpoint.
std::vector<float> interval_probes() {
  std::vector<float> v;
  for (std::uint32_t c = 0; c < 0x10000u; ++c) {
    if ((c & 0x7F80u) == 0x7F80u) continue;  // inf / NaN
    const std::uint32_t base = c << 16;
    for (std::uint32_t off : {0u, 1u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      v.push_back(f32_of(base + off));
  }
  return v;
}

TEST(Bf16, LayoutIsTwoTrivialBytes) {
  static_assert(sizeof(BF16) == 2);
  static_assert(std::is_trivially_copyable_v<BF16>);
  constexpr BF16 one = bf16_from_f32(1.0f);  // usable in constant expressions
  static_assert(one.bits == 0x3F80);
  static_assert(bf16_to_f32(BF16{0x4049}) == 3.140625f);
}

TEST(Bf16, EveryPatternDecodesExactlyAndRoundTrips) {
  for (std::uint32_t c = 0; c < 0x10000u; ++c) {
    const auto b = static_cast<std::uint16_t>(c);
    const float f = bf16_to_f32(BF16{b});
    const double want = ref::bf16_value(b);
    if (is_nan_bf16(b)) {
      ASSERT_TRUE(std::isnan(f)) << c;
      const std::uint16_t back = bf16_from_f32(f).bits;
      ASSERT_TRUE(is_nan_bf16(back)) << c;
      ASSERT_EQ(back, b | 0x0040u) << "NaN must stay NaN, made quiet, sign and payload kept";
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << c;
    ASSERT_EQ(std::signbit(f), (b & 0x8000u) != 0) << c;
    ASSERT_EQ(bf16_from_f32(f).bits, b) << c;
  }
}

TEST(Bf16, NamedTiesAndNeighbours) {
  auto r = [](float f) { return bf16_from_f32(f).bits; };
  // 1 + 2^-8 is the midpoint between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(r(1.0f + 0x1p-8f), 0x3F80);
  // 1 + 3·2^-8 is the midpoint between 1 + 2^-7 (odd) and 1 + 2^-6 (even): goes up.
  EXPECT_EQ(r(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(bf16_to_f32(BF16{0x3F82}), 1.0f + 0x1p-6f);
  // Just above / below a tie leaves the tie rule out of it.
  EXPECT_EQ(r(std::nextafter(1.0f + 0x1p-8f, 2.0f)), 0x3F81);
  EXPECT_EQ(r(std::nextafter(1.0f + 3 * 0x1p-8f, 0.0f)), 0x3F81);
  EXPECT_EQ(r(-(1.0f + 0x1p-8f)), 0xBF80);
  EXPECT_EQ(r(-(1.0f + 3 * 0x1p-8f)), 0xBF82);
  // Carry across a binade: the largest value below 2 rounds up to 2.
  EXPECT_EQ(r(std::nextafter(2.0f, 0.0f)), 0x4000);
  EXPECT_EQ(r(0.0f), 0x0000);
  EXPECT_EQ(r(-0.0f), 0x8000);
  // fp32 subnormals round on the same grid (bf16 keeps subnormals; no flush to zero).
  EXPECT_EQ(r(f32_of(0x00008000u)), 0x0000);  // tie, even → 0
  EXPECT_EQ(r(f32_of(0x00018000u)), 0x0002);  // tie, odd 1 → even 2
  EXPECT_EQ(r(f32_of(0x00008001u)), 0x0001);
  EXPECT_EQ(r(f32_of(0x807F8000u)), 0x8080);  // largest negative subnormal tie → −2^-126
}

TEST(Bf16, OverflowToInfinityAtTheMidpointAboveTheLargestFinite) {
  auto r = [](float f) { return bf16_from_f32(f).bits; };
  const float max_bf16 = f32_of(0x7F7F0000u);  // (2 − 2^-7)·2^127
  const float threshold = 0x1.FFp127f;         // (2 − 2^-8)·2^127: midpoint, ties to "even" inf
  EXPECT_EQ(bits_of(threshold), 0x7F7F8000u);
  EXPECT_EQ(r(max_bf16), 0x7F7F);
  EXPECT_EQ(r(std::nextafter(threshold, 0.0f)), 0x7F7F);
  EXPECT_EQ(r(threshold), 0x7F80);
  EXPECT_EQ(r(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(r(-threshold), 0xFF80);
  EXPECT_EQ(r(-std::nextafter(threshold, 0.0f)), 0xFF7F);
  EXPECT_EQ(r(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(r(-std::numeric_limits<float>::infinity()), 0xFF80);
}

TEST(Bf16, NanStaysQuietNan) {
  for (std::uint32_t u : {0x7FC00000u, 0x7F800001u, 0x7F80FFFFu, 0x7FFFFFFFu, 0xFF800001u,
                          0xFFC00000u, 0x7FA00000u}) {
    const std::uint16_t b = bf16_from_f32(f32_of(u)).bits;
    EXPECT_TRUE(is_nan_bf16(b)) << std::hex << u;
    EXPECT_TRUE(b & 0x0040u) << "quiet bit set for " << std::hex << u;
    EXPECT_EQ(b & 0x8000u, (u >> 16) & 0x8000u) << "sign kept for " << std::hex << u;
    EXPECT_TRUE(std::isnan(round_bf16(f32_of(u))));
  }
}

TEST(Bf16, AllIntervalProbesMatchTheReferenceAndTiesAreExercised) {
  const std::vector<float> probes = interval_probes();
  std::size_t away_differs = 0, trunc_differs = 0;
  for (float f : probes) {
    const std::uint16_t got = bf16_from_f32(f).bits;
    ASSERT_EQ(got, expected_bits(f)) << std::hex << bits_of(f);
    ASSERT_EQ(bits_of(round_bf16(f)), static_cast<std::uint32_t>(got) << 16);
    // Mutants: the probe set must tell RNE from ties-away and from truncation.
    if (expected_bits(f, ref::Tie::AwayFromZero) != got) ++away_differs;
    if (static_cast<std::uint16_t>(bits_of(f) >> 16) != got) ++trunc_differs;
  }
  EXPECT_GT(away_differs, 30000u);  // the tie above every even-coded pattern
  EXPECT_GT(trunc_differs, 100000u);
}

TEST(Bf16, StridedSweepOverAllFp32PatternsMatchesTheReference) {
  // ~1M patterns spread over the whole 32-bit space (odd stride hits every low-bit residue).
  for (std::uint64_t u = 0; u < (1ull << 32); u += 4099) {
    const float f = f32_of(static_cast<std::uint32_t>(u));
    const std::uint16_t got = bf16_from_f32(f).bits;
    if (std::isnan(f)) {
      ASSERT_TRUE(is_nan_bf16(got));
      continue;
    }
    ASSERT_EQ(got, expected_bits(f)) << std::hex << u;
  }
}

}  // namespace
}  // namespace dsv4
