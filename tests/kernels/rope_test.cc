// RoPE with YaRN (src/kernels/rope.h) against the oracle's rope_freqs, rope_table, apply_rope and
// apply_rope_inverse, bit for bit: the released configurations (base 10000 without YaRN; base
// 160000 with YaRN, orig 65536, factor 16, β 32/1), the 128-dim indexer width, degenerate YaRN
// ranges (high == low → span 0.001; high < low), and rotations of fp32 and bf16 vectors by
// arbitrary fp32 cos/sin, including pairs built so that a·cos − b·sin cancels almost exactly
// (where three separate fp32 roundings would differ from the one rounding of the contract).
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_oracle.h"
#include "kernels/rope.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

std::vector<double> params_of(const RopeParams& p, std::size_t n_pos) {
  return {static_cast<double>(p.dim), p.base, p.yarn ? 1.0 : 0.0, static_cast<double>(n_pos),
          static_cast<double>(p.original_seq_len), p.factor, p.beta_fast, p.beta_slow};
}

class RopeOracle : public test::OracleTest {};

TEST_F(RopeOracle, FreqsAndTables) {
  struct Case {
    RopeParams p;
    std::size_t n_pos;
  };
  const Case cases[] = {
      {{64, 10000.0, false, 65536, 16.0, 32.0, 1.0}, 600},   // ratio-0 layers: no YaRN
      {{64, 160000.0, true, 65536, 16.0, 32.0, 1.0}, 600},   // compressed layers
      {{128, 160000.0, true, 65536, 16.0, 32.0, 1.0}, 40},   // indexer width
      {{64, 50000.0, true, 2048, 8.0, 1.0, 1.0}, 40},        // β equal: a one-step ramp
      {{64, 10000.0, true, 4096, 2.0, 3.0, 4.0}, 40},        // high == low (18): span 0.001
      {{64, 10000.0, true, 100, 2.0, 64.0, 63.0}, 40},       // high < low (0, −4)
      {{64, 10000.0, true, 0, 16.0, 32.0, 1.0}, 8},          // YaRN requested, orig 0: off
  };
  int ci = 0;
  for (const auto& c : cases) {
    const std::string tag = "case " + std::to_string(ci++);
    test::npy_write(path("p.npy"), params_of(c.p, c.n_pos), {8});
    run_op("rope_freqs", {"p.npy"}, {"f.npy"});
    test::expect_bits_equal(rope_freqs(c.p), test::npy_read<float>(path("f.npy")), "rope_freqs " + tag, false);
    if (ci <= 2) {  // the tables: the two released configurations
      run_op("rope_table", {"p.npy"}, {"cos.npy", "sin.npy"});
      const RopeTable t = rope_table(c.p, c.n_pos);
      test::expect_bits_equal(t.cos, test::npy_read<float>(path("cos.npy")), "rope cos " + tag, false);
      test::expect_bits_equal(t.sin, test::npy_read<float>(path("sin.npy")), "rope sin " + tag, false);
    }
  }
}

TEST_F(RopeOracle, ApplyAndInverse) {
  Rng r(61);
  constexpr std::size_t S = 40, H = 3, D = 80, P = 32;  // 16 leading dims left untouched
  std::vector<float> x(S * H * D), c(S * P), s(S * P);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t t = i / (H * D);
    x[i] = t % 4 == 0 ? r.finite_f32() : (t % 4 == 1 ? r.bf16_gauss(0) : static_cast<float>(r.gauss()));
  }
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double a = r.unif(-4, 4);
    c[i] = static_cast<float>(std::cos(a));
    s[i] = static_cast<float>(std::sin(a));
  }
  // Near-cancelling pairs: (a, b) ≈ λ (sin, cos)·… so that a·cos ≈ b·sin (and a·sin ≈ −b·cos).
  for (std::size_t t = 2; t < S; t += 4)
    for (std::size_t j = 0; j < P; ++j) {
      float* xv = &x[(t * H + 0) * D + (D - 2 * P)];
      const float cs = c[t * P + j], sn = s[t * P + j];
      xv[2 * j] = sn * 3.0f;
      xv[2 * j + 1] = cs * 3.0f;
      float* xw = &x[(t * H + 1) * D + (D - 2 * P)];
      xw[2 * j] = cs;
      xw[2 * j + 1] = -sn * (1.0f + 0x1p-20f);
    }
  // Special values: zeros of both signs, infinities (NaN from inf·0 compares as a class).
  x[(3 * H + 2) * D + D - 1] = -0.0f;
  x[(7 * H + 2) * D + D - 2] = INFINITY;
  c[5 * P + 3] = -0.0f;
  s[5 * P + 3] = 0.0f;
  for (bool inverse : {false, true}) {
    std::vector<float> y = x;
    apply_rope(y, S, H, D, c, s, P, inverse);
    test::npy_write(path("x.npy"), x, {S, H, D});
    test::npy_write(path("c.npy"), c, {S, P});
    test::npy_write(path("s.npy"), s, {S, P});
    run_op(inverse ? "apply_rope_inverse" : "apply_rope", {"x.npy", "c.npy", "s.npy"}, {"y.npy"});
    test::expect_bits_equal(y, test::npy_read<float>(path("y.npy")), inverse ? "apply_rope_inverse" : "apply_rope");
  }
}

TEST(Rope, TableRowsByPositionAndErrors) {
  const RopeParams p{64, 160000.0, true, 65536, 16.0, 32.0, 1.0};
  const RopeTable t = rope_table(p, 100);
  std::vector<float> a(2 * 64), b;
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.25f;
  b = a;
  const std::int64_t pos[] = {7, 93};
  apply_rope(a, 1, 64, t, pos);
  std::vector<float> c, s;
  for (auto q : pos) {
    c.insert(c.end(), t.cos_row(q).begin(), t.cos_row(q).end());
    s.insert(s.end(), t.sin_row(q).begin(), t.sin_row(q).end());
  }
  apply_rope(b, 2, 1, 64, c, s, 32);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(test::bits(a[i]), test::bits(b[i]));
  const std::int64_t bad[] = {100};
  EXPECT_THROW(apply_rope(a, 1, 64, t, std::span<const std::int64_t>(bad, 1)), Error);
  EXPECT_THROW(apply_rope(a, 2, 1, 30, c, s, 32), Error);
  EXPECT_THROW(rope_freqs(RopeParams{63}), Error);
}

}  // namespace
}  // namespace dsv4::kernels
