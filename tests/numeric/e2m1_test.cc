// E2M1 FP4 (§2.1): the 16-entry table, RNE on the grid with even-code ties, nibble packing.
#include "numeric/e2m1.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "reference_formats.h"

namespace dsv4 {
namespace {

TEST(E2m1, TableIsTheSpecTable) {
  const float want[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0f, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (unsigned c = 0; c < 16; ++c) {
    EXPECT_EQ(e2m1_to_f32(static_cast<std::uint8_t>(c)), want[c]) << c;
    EXPECT_EQ(std::signbit(e2m1_to_f32(static_cast<std::uint8_t>(c))), c >= 8) << c;
    EXPECT_EQ(e2m1_table()[c], want[c]);
  }
  EXPECT_EQ(e2m1_to_f32(0xF3), 1.5f) << "only the low nibble is read";
}

TEST(E2m1, All16CodesRoundTrip) {
  for (unsigned c = 0; c < 16; ++c)
    EXPECT_EQ(e2m1_from_f32(e2m1_to_f32(static_cast<std::uint8_t>(c))), c) << c;
}

TEST(E2m1, ThresholdsAndEvenCodeTies) {
  struct Case {
    float v;
    float want;
  };
  // The ties listed in §2.1, then one fp32 ulp either side of each threshold.
  const Case ties[] = {{0.25f, 0.0f}, {0.75f, 1.0f}, {1.25f, 1.0f}, {1.75f, 2.0f},
                       {2.5f, 2.0f},  {3.5f, 4.0f},  {5.0f, 4.0f}};
  const float below[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f};
  const float above[] = {0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int i = 0; i < 7; ++i) {
    const float t = ties[i].v;
    EXPECT_EQ(e2m1_to_f32(e2m1_from_f32(t)), ties[i].want) << t;
    EXPECT_EQ(e2m1_to_f32(e2m1_from_f32(-t)), -ties[i].want) << -t;
    EXPECT_EQ(e2m1_to_f32(e2m1_from_f32(std::nextafter(t, 0.0f))), below[i]) << t;
    EXPECT_EQ(e2m1_to_f32(e2m1_from_f32(std::nextafter(t, 9.0f))), above[i]) << t;
    EXPECT_EQ(e2m1_to_f32(e2m1_from_f32(-std::nextafter(t, 9.0f))), -above[i]) << t;
  }
}

TEST(E2m1, SignOfZeroAndSaturation) {
  EXPECT_EQ(e2m1_from_f32(0.0f), 0u);
  EXPECT_EQ(e2m1_from_f32(-0.0f), 8u);
  EXPECT_EQ(e2m1_from_f32(-1e-30f), 8u);  // −tiny → −0
  EXPECT_EQ(e2m1_from_f32(-0.25f), 8u);
  EXPECT_EQ(e2m1_from_f32(1e-30f), 0u);
  EXPECT_EQ(e2m1_from_f32(6.0f), 7u);
  EXPECT_EQ(e2m1_from_f32(-6.0f), 15u);
  // Outside the [−6, 6] contract the grid saturates.
  EXPECT_EQ(e2m1_from_f32(7.0f), 7u);
  EXPECT_EQ(e2m1_from_f32(-std::numeric_limits<float>::infinity()), 15u);
  // NaN is outside the contract; documented to give the zero code of its sign.
  EXPECT_EQ(e2m1_from_f32(std::numeric_limits<float>::quiet_NaN()), 0u);
  EXPECT_EQ(e2m1_from_f32(-std::numeric_limits<float>::quiet_NaN()), 8u);
}

TEST(E2m1, DenseSweepMatchesNearestSearchAndTiesAreExercised) {
  // Every multiple of 2^-10 in [−6.5, 6.5] (all thresholds are on this grid), plus neighbours.
  std::size_t away_differs = 0;
  for (int i = -6656; i <= 6656; ++i) {
    const float g = std::ldexp(static_cast<float>(i), -10);
    for (float f : {g, std::nextafter(g, -9.0f), std::nextafter(g, 9.0f)}) {
      const unsigned want = ref::e2m1_nearest(f);
      ASSERT_EQ(e2m1_from_f32(f), want) << f;
      if (ref::e2m1_nearest(f, ref::Tie::AwayFromZero) != want) ++away_differs;
    }
  }
  // Ties-away disagrees at 0.25, 1.25, 2.5 and 5 (both signs): the sweep would catch that mutant.
  EXPECT_EQ(away_differs, 8u);
}

TEST(E2m1, PackingPutsEvenElementsInTheLowNibble) {
  for (unsigned b = 0; b < 256; ++b) {
    const auto byte = static_cast<std::uint8_t>(b);
    ASSERT_EQ(e2m1_pack(e2m1_lo(byte), e2m1_hi(byte)), b);
    ASSERT_EQ(e2m1_lo(byte), b & 0xFu);
    ASSERT_EQ(e2m1_hi(byte), b >> 4);
  }
  // A row [1, −0.5, 6, 0] packs as bytes {lo=code(1), hi=code(−0.5)}, {lo=code(6), hi=code(0)}.
  const float row[4] = {1.0f, -0.5f, 6.0f, 0.0f};
  std::uint8_t packed[2];
  for (int j = 0; j < 2; ++j)
    packed[j] = e2m1_pack(e2m1_from_f32(row[2 * j]), e2m1_from_f32(row[2 * j + 1]));
  EXPECT_EQ(packed[0], 0x92);
  EXPECT_EQ(packed[1], 0x07);
  EXPECT_EQ(e2m1_to_f32(e2m1_lo(packed[0])), 1.0f);
  EXPECT_EQ(e2m1_to_f32(e2m1_hi(packed[0])), -0.5f);
  EXPECT_EQ(e2m1_pack(0x1F, 0x2E), 0xEF) << "out-of-range nibbles are masked";
}

}  // namespace
}  // namespace dsv4
