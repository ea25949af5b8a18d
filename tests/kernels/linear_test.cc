// Linear layers over stored-format weights (src/kernels/linear.h) against the oracle's
// linear_fp8 / linear_fp4 / linear_bf16 / linear_f32, bit for bit. Inputs cover the whole code
// tables (E4M3 incl. subnormals and NaN codes, E2M1 incl. −0), extreme and NaN E8M0 scales,
// activation rows across the bf16 range (act_quant floors, near bf16 max, zeros, an inf), shapes
// whose N is not a multiple of 32 (partial scale blocks), and row pairs built so that the
// dequantized products cancel to an exact zero (→ +0) or a tiny residue.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_oracle.h"
#include "kernels/linear.h"
#include "numeric/e4m3.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

// Activation rows (bf16 values), one hazard per row.
std::vector<float> make_x(Rng& r, std::size_t m, std::size_t k) {
  std::vector<float> x(m * k);
  for (std::size_t i = 0; i < m; ++i) {
    float* row = &x[i * k];
    for (std::size_t j = 0; j < k; ++j) {
      switch (i % 8) {
        case 0: row[j] = r.bf16_gauss(0); break;
        case 1: row[j] = r.bf16_gauss(r.uni(-30, 30)); break;
        case 2: row[j] = r.bf16_gauss(-140); break;                        // below the amax floor
        case 3: row[j] = r.bf16_gauss(120); break;                         // near bf16 max
        case 4: row[j] = r.uni(0, 3) ? (r.uni(0, 1) ? -0.0f : 0.0f) : r.bf16_gauss(-2); break;
        case 5: row[j] = j % 2 ? row[j - 1] : r.bf16_gauss(1); break;      // equal pairs (cancellation rows)
        case 6: row[j] = test::from_bits(r.u32() & 0xFF7F0000u); break;    // any finite bf16 pattern
        default: row[j] = r.bf16_gauss(3);
      }
    }
    if (i % 8 == 7) row[r.uni(0, static_cast<int>(k) - 1)] = INFINITY;   // NaN block after act_quant
  }
  return x;
}

class LinearOracle : public test::OracleTest {
 protected:
  void check_fp8(std::size_t m, std::size_t n, std::size_t k, std::uint64_t seed) {
    Rng r(seed);
    const std::vector<float> x = make_x(r, m, k);
    std::vector<std::uint8_t> codes(n * k);
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t c = 0; c < k; ++c) {
        std::uint8_t v = static_cast<std::uint8_t>(r.uni(0, 255));
        if ((v & 0x7F) == 0x7F && r.uni(0, 9)) v = static_cast<std::uint8_t>(v ^ 0x01);  // rare NaN codes
        if (j % 5 == 1) v = c % 2 ? static_cast<std::uint8_t>(codes[j * k + c - 1] ^ 0x80) : v;  // cancels a row-5 x
        codes[j * k + c] = v;
      }
    const std::size_t sr = (n + 31) / 32, sc = (k + 31) / 32;
    std::vector<std::uint8_t> scale(sr * sc);
    for (auto& s : scale) s = static_cast<std::uint8_t>(r.uni(112, 134));
    scale[0] = 0;    // 2^-127
    if (scale.size() > 2) scale[1] = 254;  // 2^127
    if (scale.size() > 3) scale[scale.size() - 1] = 0xFF;  // NaN scale block
    std::vector<float> out(m * n);
    linear(x, m, WeightRef::fp8(codes, scale, n, k), out);
    test::npy_write(path("x.npy"), x, {m, k});
    test::npy_write(path("w.npy"), codes, {n, k});
    test::npy_write(path("s.npy"), scale, {sr, sc});
    run_op("linear_fp8", {"x.npy", "w.npy", "s.npy"}, {"out.npy"});
    test::expect_bits_equal(out, test::npy_read<float>(path("out.npy")),
                            "linear_fp8 " + std::to_string(n) + "x" + std::to_string(k));
  }
};

TEST_F(LinearOracle, Fp8PartialScaleBlocks) { check_fp8(16, 40, 96, 21); }
TEST_F(LinearOracle, Fp8FullScaleBlocks) { check_fp8(16, 64, 64, 22); }

TEST_F(LinearOracle, Fp4) {
  Rng r(23);
  constexpr std::size_t m = 16, n = 24, k = 128;
  const std::vector<float> x = make_x(r, m, k);
  std::vector<std::uint8_t> packed(n * k / 2);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t c = 0; c < k / 2; ++c) {
      std::uint8_t lo = static_cast<std::uint8_t>(r.uni(0, 15)), hi = static_cast<std::uint8_t>(r.uni(0, 15));
      if (j % 5 == 1) hi = lo ^ 0x8;  // element 2c+1 = −element 2c: cancels the equal x pairs
      packed[j * k / 2 + c] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  std::vector<std::uint8_t> scale(n * k / 32);
  for (auto& s : scale) s = static_cast<std::uint8_t>(r.uni(110, 130));
  scale[0] = 0;
  scale[1] = 254;
  scale[scale.size() - 1] = 0xFF;
  std::vector<float> out(m * n);
  linear(x, m, WeightRef::fp4(packed, scale, n, k), out);
  test::npy_write(path("x.npy"), x, {m, k});
  test::npy_write(path("w.npy"), packed, {n, k / 2});
  test::npy_write(path("s.npy"), scale, {n, k / 32});
  run_op("linear_fp4", {"x.npy", "w.npy", "s.npy"}, {"out.npy"});
  test::expect_bits_equal(out, test::npy_read<float>(path("out.npy")), "linear_fp4");
}

// bf16 and fp32 weights; x is any fp32 here (the oracle does not require bf16 input).
TEST_F(LinearOracle, Bf16AndF32) {
  Rng r(24);
  constexpr std::size_t m = 12, n = 30, k = 45;
  std::vector<float> x(m * k), wf(n * k);
  std::vector<std::uint16_t> wb(n * k);
  for (std::size_t i = 0; i < m * k; ++i) {
    const std::size_t row = i / k;
    x[i] = row % 3 == 0 ? r.finite_f32() : (row % 3 == 1 ? r.bf16_gauss(0) : static_cast<float>(r.gauss()));
  }
  for (std::size_t i = 0; i < n * k; ++i) {
    const std::size_t row = i / k;
    wf[i] = row % 4 == 0 ? r.finite_f32() : static_cast<float>(r.gauss() * 0.1);
    std::uint16_t h;
    do h = static_cast<std::uint16_t>(r.u32()); while ((h & 0x7F80) == 0x7F80);
    wb[i] = row % 4 == 0 ? h : static_cast<std::uint16_t>(test::bits(r.bf16_gauss(-3)) >> 16);
  }
  // A cancelling pair: x row 1 against weight row 2 sums to a tiny residue.
  for (std::size_t c = 0; c + 1 < k; c += 2) {
    x[1 * k + c + 1] = x[1 * k + c];
    wf[2 * k + c + 1] = -wf[2 * k + c];
    wb[2 * k + c + 1] = static_cast<std::uint16_t>(wb[2 * k + c] ^ 0x8000);
  }
  std::vector<BF16> wbb(n * k);
  for (std::size_t i = 0; i < n * k; ++i) wbb[i] = BF16{wb[i]};
  std::vector<float> ob(m * n), of(m * n);
  linear(x, m, WeightRef::bf16(wbb, n, k), ob);
  linear(x, m, WeightRef::f32(wf, n, k), of);
  test::npy_write(path("x.npy"), x, {m, k});
  test::npy_write(path("wb.npy"), wb, {n, k});
  test::npy_write(path("wf.npy"), wf, {n, k});
  run_op("linear_bf16", {"x.npy", "wb.npy"}, {"ob.npy"});
  run_op("linear_f32", {"x.npy", "wf.npy"}, {"of.npy"});
  test::expect_bits_equal(ob, test::npy_read<float>(path("ob.npy")), "linear_bf16");
  test::expect_bits_equal(of, test::npy_read<float>(path("of.npy")), "linear_f32");
}

TEST(Linear, FastModeIsClose) {
  Rng r(25);
  constexpr std::size_t m = 3, n = 8, k = 64;
  std::vector<float> x(m * k);
  for (auto& v : x) v = r.bf16_gauss(0);
  std::vector<std::uint8_t> codes(n * k), scale(2);
  for (auto& c : codes) c = static_cast<std::uint8_t>(r.uni(0, 0x7E) | (r.uni(0, 1) << 7));
  scale[0] = scale[1] = 120;
  std::vector<float> s(m * n), f(m * n);
  const auto w = WeightRef::fp8(codes, scale, n, k);
  linear(x, m, w, s, Numerics::kStrict);
  linear(x, m, w, f, Numerics::kFast);
  for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(f[i], s[i], 1e-2 * (1 + std::fabs(s[i])));
}

TEST(Linear, RejectsBadShapesAndNonBf16Input) {
  std::vector<std::uint8_t> codes(64 * 32), scale(2);
  EXPECT_THROW(WeightRef::fp8(codes, scale, 64, 31), Error);
  EXPECT_THROW(WeightRef::fp8(codes, std::span<const std::uint8_t>(scale.data(), 1), 64, 32), Error);
  const auto w = WeightRef::fp8(codes, scale, 64, 32);
  std::vector<float> x(32, 1.0f), out(64);
  linear(x, 1, w, out);
  x[3] = 1.0f + 0x1p-20f;  // not a bf16 value
  EXPECT_THROW(linear(x, 1, w, out), Error);
  std::vector<float> short_out(10);
  EXPECT_THROW(linear(std::vector<float>(32, 0.0f), 1, w, short_out), Error);
  std::vector<float> wf(6 * 5), x5(2 * 5), o5(2 * 6);
  linear(x5, 2, WeightRef::f32(wf, 6, 5), o5);  // K need not be a multiple of 32 for F32
  EXPECT_THROW(linear(x5, 3, WeightRef::f32(wf, 6, 5), o5), Error);
}

}  // namespace
}  // namespace dsv4::kernels
