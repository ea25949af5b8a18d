// E4M3FN encode/decode (§2.1): RNE, saturation to ±448, NaN codes, subnormals.
#include "numeric/e4m3.h"

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
bool is_nan_code(unsigned c) { return (c & 0x7Fu) == 0x7Fu; }

// Inputs that decide rounding: for each pair of adjacent finite codes (both signs) the two values,
// the exact midpoint, the fp32 neighbours of the midpoint, and the fp32 neighbours of each value.
std::vector<float> interval_probes() {
  std::vector<float> v;
  for (unsigned c = 0; c < 0x7Eu; ++c) {
    const float lo = static_cast<float>(ref::e4m3_value(c));
    const float hi = static_cast<float>(ref::e4m3_value(c + 1));
    const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);  // exact
    for (float f : {lo, hi, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f),
                    std::nextafter(lo, 1e9f), std::nextafter(hi, 0.0f)}) {
      v.push_back(f);
      v.push_back(-f);
    }
  }
  return v;
}

TEST(E4m3, TableMatchesFieldFormulaForAll256Codes) {
  ASSERT_EQ(e4m3_table(), kE4m3Table.data());
  for (unsigned c = 0; c < 256; ++c) {
    const float f = e4m3_to_f32(static_cast<std::uint8_t>(c));
    if (is_nan_code(c)) {
      ASSERT_TRUE(std::isnan(f)) << c;
      ASSERT_TRUE(std::isnan(e4m3_table()[c])) << c;
      continue;
    }
    ASSERT_EQ(f, e4m3_table()[c]) << c;
    ASSERT_EQ(static_cast<double>(f), ref::e4m3_value(c)) << c;
    ASSERT_EQ(std::signbit(f), c >= 0x80) << c;
  }
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0xFE), -448.0f);
  EXPECT_EQ(e4m3_to_f32(0x08), 0x1p-6f);
  EXPECT_EQ(e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_EQ(e4m3_to_f32(0x07), 7 * 0x1p-9f);
  EXPECT_TRUE(std::signbit(e4m3_to_f32(0x80)));
  EXPECT_TRUE(std::signbit(e4m3_to_f32(0xFF)));
}

TEST(E4m3, All256CodesRoundTrip) {
  for (unsigned c = 0; c < 256; ++c) {
    const std::uint8_t back = e4m3_from_f32(e4m3_to_f32(static_cast<std::uint8_t>(c)));
    ASSERT_EQ(back, c) << c;  // NaN codes included: 0x7F → 0x7F, 0xFF → 0xFF
  }
}

TEST(E4m3, SaturationAtTheTop) {
  EXPECT_EQ(e4m3_from_f32(448.0f), 0x7E);
  EXPECT_EQ(e4m3_from_f32(std::nextafter(448.0f, 1e9f)), 0x7E);
  EXPECT_EQ(e4m3_from_f32(464.0f), 0x7E);  // midpoint to the NaN slot: ties to even 448
  EXPECT_EQ(e4m3_from_f32(std::nextafter(464.0f, 1e9f)), 0x7E);
  EXPECT_EQ(e4m3_from_f32(480.0f), 0x7E);
  EXPECT_EQ(e4m3_from_f32(1e30f), 0x7E);
  EXPECT_EQ(e4m3_from_f32(std::numeric_limits<float>::max()), 0x7E);
  EXPECT_EQ(e4m3_from_f32(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(e4m3_from_f32(-464.0f), 0xFE);
  EXPECT_EQ(e4m3_from_f32(-480.0f), 0xFE);
  EXPECT_EQ(e4m3_from_f32(-std::numeric_limits<float>::infinity()), 0xFE);
  // Top interval: 416 (0x7D, odd) | 448 (0x7E, even); their midpoint 432 goes up.
  EXPECT_EQ(e4m3_from_f32(432.0f), 0x7E);
  EXPECT_EQ(e4m3_from_f32(std::nextafter(432.0f, 0.0f)), 0x7D);
}

TEST(E4m3, NanMapsToTheNanCodeKeepingTheSign) {
  EXPECT_EQ(e4m3_from_f32(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(e4m3_from_f32(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_EQ(e4m3_from_f32(f32_of(0x7F800001u)), 0x7F);  // signalling NaN
  EXPECT_EQ(e4m3_from_f32(f32_of(0xFFFFFFFFu)), 0xFF);
}

TEST(E4m3, SubnormalBoundaries) {
  const float step = 0x1p-9f;
  EXPECT_EQ(e4m3_from_f32(0.0f), 0x00);
  EXPECT_EQ(e4m3_from_f32(-0.0f), 0x80);
  EXPECT_EQ(e4m3_from_f32(0x1p-10f), 0x00);  // exactly half a step: tie to even 0
  EXPECT_EQ(e4m3_from_f32(-0x1p-10f), 0x80);
  EXPECT_EQ(e4m3_from_f32(std::nextafter(0x1p-10f, 1.0f)), 0x01);
  EXPECT_EQ(e4m3_from_f32(std::nextafter(0x1p-10f, 0.0f)), 0x00);
  EXPECT_EQ(e4m3_from_f32(-std::nextafter(0x1p-10f, 0.0f)), 0x80);  // −tiny keeps its sign
  EXPECT_EQ(e4m3_from_f32(1e-30f), 0x00);
  EXPECT_EQ(e4m3_from_f32(f32_of(0x00000001u)), 0x00);  // fp32 subnormal
  EXPECT_EQ(e4m3_from_f32(f32_of(0x80000001u)), 0x80);
  EXPECT_EQ(e4m3_from_f32(1.5f * step), 0x02);  // tie 1|2 → even 2
  EXPECT_EQ(e4m3_from_f32(2.5f * step), 0x02);  // tie 2|3 → even 2
  EXPECT_EQ(e4m3_from_f32(3.5f * step), 0x04);
  EXPECT_EQ(e4m3_from_f32(6.5f * step), 0x06);
  EXPECT_EQ(e4m3_from_f32(7.5f * step), 0x08);  // tie 7|8 → 8 = smallest normal
  EXPECT_EQ(e4m3_from_f32(std::nextafter(7.5f * step, 0.0f)), 0x07);
  EXPECT_EQ(e4m3_from_f32(std::nextafter(0x1p-6f, 0.0f)), 0x08);
  EXPECT_EQ(e4m3_from_f32(0x1p-6f), 0x08);
  // First normal interval: step is still 2^-9 between 2^-6 and 2^-5.
  EXPECT_EQ(e4m3_from_f32(0x1p-6f + 0.5f * step), 0x08);  // tie 8|9 → even 8
  EXPECT_EQ(e4m3_from_f32(0x1p-6f + 1.5f * step), 0x0A);  // tie 9|10 → even 10
}

TEST(E4m3, NormalTies) {
  EXPECT_EQ(e4m3_from_f32(1.0f), 0x38);
  EXPECT_EQ(e4m3_from_f32(1.0625f), 0x38);  // midpoint 1|1.125 → even (1)
  EXPECT_EQ(e4m3_from_f32(1.1875f), 0x3A);  // midpoint 1.125|1.25 → even (1.25)
  EXPECT_EQ(e4m3_from_f32(1.9375f), 0x40);  // midpoint 1.875|2 → even (2, carry to next binade)
  EXPECT_EQ(e4m3_from_f32(std::nextafter(1.0625f, 2.0f)), 0x39);
  EXPECT_EQ(e4m3_from_f32(std::nextafter(1.1875f, 0.0f)), 0x39);
  EXPECT_EQ(e4m3_from_f32(-1.0625f), 0xB8);
}

TEST(E4m3, IntervalProbesMatchExhaustiveSearchAndTiesAreExercised) {
  const std::vector<float> probes = interval_probes();
  std::size_t away_differs = 0;
  for (float f : probes) {
    const unsigned want = ref::e4m3_nearest(f);
    ASSERT_EQ(e4m3_from_f32(f), want) << std::hexfloat << f;
    if (ref::e4m3_nearest(f, ref::Tie::AwayFromZero) != want) ++away_differs;
  }
  // Every even code has a midpoint above it where ties-away would disagree: both signs.
  EXPECT_EQ(away_differs, 2u * 63u);
}

TEST(E4m3, RandomAndStridedInputsMatchExhaustiveSearch) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> wide(-600.0f, 600.0f);
  std::uniform_int_distribution<int> expo(-14, 10);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (int i = 0; i < 20000; ++i) {
    const float a = wide(rng);
    const float b = std::ldexp(mant(rng), expo(rng)) * (i % 2 ? -1.0f : 1.0f);
    ASSERT_EQ(e4m3_from_f32(a), ref::e4m3_nearest(a)) << std::hexfloat << a;
    ASSERT_EQ(e4m3_from_f32(b), ref::e4m3_nearest(b)) << std::hexfloat << b;
  }
  // A sweep over the whole fp32 space (NaNs, infinities, huge and tiny values included).
  for (std::uint64_t u = 0; u < (1ull << 32); u += 42949) {
    const float f = f32_of(static_cast<std::uint32_t>(u));
    ASSERT_EQ(e4m3_from_f32(f), ref::e4m3_nearest(f)) << std::hex << u;
  }
}

TEST(E4m3, UsableInConstantExpressions) {
  static_assert(e4m3_from_f32(448.0f) == 0x7E);
  static_assert(e4m3_to_f32(0x38) == 1.0f);
  static_assert(e4m3_from_f32(-0x1p-10f) == 0x80);
}

}  // namespace
}  // namespace dsv4
