// E8M0 scales (§2.1): value 2^(e − 127), 0xFF = NaN, 0x00 = 2^−127 (an fp32 subnormal).
#include "numeric/e8m0.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "util/error.h"

namespace dsv4 {
namespace {

TEST(E8m0, All256CodesDecodeToTheirPowerOfTwo) {
  for (unsigned e = 0; e < 255; ++e) {
    const float f = e8m0_to_f32(static_cast<std::uint8_t>(e));
    ASSERT_EQ(static_cast<double>(f), std::ldexp(1.0, static_cast<int>(e) - 127)) << e;
  }
  EXPECT_TRUE(std::isnan(e8m0_to_f32(0xFF)));
  EXPECT_EQ(std::fpclassify(e8m0_to_f32(0)), FP_SUBNORMAL);
  EXPECT_EQ(std::fpclassify(e8m0_to_f32(1)), FP_NORMAL);
  EXPECT_EQ(e8m0_to_f32(127), 1.0f);
  EXPECT_EQ(e8m0_to_f32(254), 0x1p127f);
  static_assert(e8m0_to_f32(128) == 2.0f);
}

TEST(E8m0, All256CodesRoundTrip) {
  for (unsigned e = 0; e < 256; ++e) {
    const float f = e8m0_to_f32(static_cast<std::uint8_t>(e));
    ASSERT_EQ(e8m0_from_pow2(f), e) << e;  // 0xFF: NaN → 0xFF
    if (e != 0xFF) {
      ASSERT_EQ(e8m0_from_pow2_unchecked(f), e) << e;
    }
  }
}

TEST(E8m0, NanOfEitherSignEncodesAsNan) {
  EXPECT_EQ(e8m0_from_pow2(std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_EQ(e8m0_from_pow2(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_EQ(e8m0_from_pow2(std::bit_cast<float>(0x7F800001u)), 0xFF);
}

TEST(E8m0, NonRepresentableInputsAreRejected) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {0.0f, -0.0f, 1.5f, 3.0f, -2.0f, -1.0f, inf, -inf, 0x1p-128f, 0x1p-149f,
                    std::numeric_limits<float>::max(), std::nextafter(1.0f, 2.0f),
                    std::nextafter(1.0f, 0.0f), 0x1.8p-127f /* subnormal, not a power */}) {
    EXPECT_THROW(e8m0_from_pow2(bad), Error) << std::hexfloat << bad;
  }
}

}  // namespace
}  // namespace dsv4
