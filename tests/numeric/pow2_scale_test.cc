// §2.2 power-of-two scale and the reciprocal constants.
#include "numeric/pow2_scale.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "reference_formats.h"

namespace dsv4 {
namespace {

// c is the fp32 nearest to 1/d iff no fp32 neighbour is nearer; c·d − 1 is exact in double.
bool is_correctly_rounded_reciprocal(float c, double d) {
  auto err = [d](float v) { return std::fabs(static_cast<double>(v) * d - 1.0); };
  return err(c) < err(std::nextafter(c, 0.0f)) && err(c) < err(std::nextafter(c, 1.0f));
}

TEST(Pow2Scale, ReciprocalConstants) {
  EXPECT_TRUE(is_correctly_rounded_reciprocal(kFp8RecipMax, 448.0));
  EXPECT_TRUE(is_correctly_rounded_reciprocal(kFp4RecipMax, 6.0));
  // The same value a Python double constant cast to fp32 gives.
  EXPECT_EQ(kFp8RecipMax, static_cast<float>(1.0 / 448.0));
  EXPECT_EQ(kFp4RecipMax, static_cast<float>(1.0 / 6.0));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(kFp4RecipMax), 0x3E2AAAABu);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(kFp8RecipMax), 0x3B124925u);
}

TEST(Pow2Scale, PowersOfTwoAndTheirNeighboursOverTheWholeNormalRange) {
  for (int k = -126; k <= 127; ++k) {
    const float p = std::ldexp(1.0f, k);
    ASSERT_EQ(pow2_ceil_scale(p), p) << k;  // exact powers are kept
    const float up = std::nextafter(p, std::numeric_limits<float>::infinity());
    const float want_up = k == 127 ? std::numeric_limits<float>::infinity() : 2 * p;
    ASSERT_EQ(pow2_ceil_scale(up), want_up) << k;
    if (k > -126) {
      ASSERT_EQ(pow2_ceil_scale(std::nextafter(p, 0.0f)), p) << k;
    }
    // A value inside the binade below p also goes up to p.
    ASSERT_EQ(pow2_ceil_scale(1.5f * p / 2), p) << k;
  }
}

TEST(Pow2Scale, RandomNormalValuesMatchFrexpReference) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits(0x00800000u, 0x7F000000u);  // ≤ 2^127
  std::size_t not_pow2 = 0;
  for (int i = 0; i < 100000; ++i) {
    const float t = std::bit_cast<float>(bits(rng));
    const double want = ref::pow2_ceil(t);
    ASSERT_EQ(static_cast<double>(pow2_ceil_scale(t)), want) << std::hexfloat << t;
    // Mutant check: "round to nearest power" or "floor" must differ somewhere in this set.
    if (want != std::ldexp(1.0, std::ilogb(t))) ++not_pow2;
  }
  EXPECT_GT(not_pow2, 99000u);
}

TEST(Pow2Scale, DocumentedBehaviourOutsideTheDomain) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(pow2_ceil_scale(std::numeric_limits<float>::max()), inf);
  EXPECT_EQ(pow2_ceil_scale(inf), inf);
  EXPECT_TRUE(std::isnan(pow2_ceil_scale(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(pow2_ceil_scale(0.0f)), 0u);
  EXPECT_EQ(pow2_ceil_scale(0x1p-140f), 0x1p-126f);
  EXPECT_EQ(pow2_ceil_scale(-3.0f), 4.0f);  // sign ignored
  static_assert(pow2_ceil_scale(3.0f) == 4.0f);
  static_assert(pow2_ceil_scale(0.25f) == 0.25f);
}

}  // namespace
}  // namespace dsv4
