// Strict dot products and reductions (src/kernels/strict_dot.h) against the oracle's sdot, ssum
// and smean, bit for bit. Each (a_i, b_i) pair on the diagonal is built for one hazard — random
// values over the whole exponent range, cancellation down to a tiny or exactly zero residue,
// fp32 midpoints after the float64 rounding, signed zeros, subnormals, inf/NaN — and every
// off-diagonal pair is compared as well. NaN results compare as a class (payloads are not part
// of the contract).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernel_oracle.h"
#include "kernels/exact_sum.h"
#include "kernels/strict_dot.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

// Fills a, b (K elements each) for hazard family f.
void make_pair(Rng& r, int f, std::size_t k, float* a, float* b) {
  for (std::size_t i = 0; i < k; ++i) a[i] = b[i] = 0.0f;
  if (k < 4) f = 0;  // the designed families need four elements
  switch (f % 9) {
    case 0:
      for (std::size_t i = 0; i < k; ++i) {
        a[i] = static_cast<float>(r.gauss() * std::ldexp(1.0, r.uni(-20, 20)));
        b[i] = static_cast<float>(r.gauss());
      }
      break;
    case 1:  // any finite patterns (products from 2^-298 to 2^256; sums may overflow fp32)
      for (std::size_t i = 0; i < k; ++i) {
        a[i] = r.finite_f32();
        b[i] = r.finite_f32();
      }
      break;
    case 2: {  // cancellation down to a tiny nonzero residue
      double s = 0;
      for (std::size_t i = 0; i + 1 < k; ++i) {
        a[i] = static_cast<float>(r.gauss() * 1000);
        b[i] = static_cast<float>(r.gauss());
        s += static_cast<double>(a[i]) * b[i];
      }
      a[k - 1] = 1.0f;
      b[k - 1] = -static_cast<float>(s);
      break;
    }
    case 3:  // products cancel in pairs: exact zero (→ +0), with −0 operands
      for (std::size_t i = 0; i + 1 < k; i += 2) {
        a[i] = a[i + 1] = static_cast<float>(r.gauss());
        b[i] = static_cast<float>(r.gauss());
        b[i + 1] = -b[i];
        if (r.uni(0, 3) == 0) a[i] = a[i + 1] = -0.0f;
      }
      break;
    case 4: {  // fp32 midpoint of the exact value, off by tails that only float64 sees
      const float sc = std::ldexp(1.0f, r.uni(-60, 60));
      a[0] = (1.0f + r.uni(0, 15) * 0x1p-23f) * sc;
      a[1] = 0x1p-24f * sc;
      a[2] = (r.uni(0, 1) ? 1.0f : -1.0f) * std::ldexp(sc, r.uni(-75, -40));
      a[3] = (r.uni(0, 1) ? 1.0f : -1.0f) * std::ldexp(sc, -53 + r.uni(-1, 1));
      if (r.uni(0, 2) == 0) a[3] = 0.0f;
      b[0] = b[1] = b[2] = b[3] = 1.0f;
      break;
    }
    case 5:  // subnormal operands and products near the fp32 subnormal range
      for (std::size_t i = 0; i < k; ++i) {
        a[i] = test::from_bits(r.u32() & 0x807FFFFFu);  // fp32 subnormals (and ±0)
        b[i] = static_cast<float>(r.gauss() * std::ldexp(1.0, r.uni(0, 30)));
      }
      break;
    case 6:  // non-finite operands
      for (std::size_t i = 0; i < k; ++i) {
        a[i] = static_cast<float>(r.gauss());
        b[i] = static_cast<float>(r.gauss());
      }
      a[r.uni(0, static_cast<int>(k) - 1)] = r.uni(0, 1) ? INFINITY : -INFINITY;
      if (r.uni(0, 1)) b[r.uni(0, static_cast<int>(k) - 1)] = r.uni(0, 1) ? NAN : INFINITY;
      if (r.uni(0, 2) == 0) b[0] = 0.0f, a[0] = INFINITY;  // inf · 0
      break;
    case 7:  // bf16 values: the usual model case (float64 sums exact)
      for (std::size_t i = 0; i < k; ++i) {
        a[i] = r.bf16_gauss(r.uni(-3, 3));
        b[i] = r.bf16_gauss(-4);
      }
      break;
    default: {  // huge cancellation with fp32-range magnitudes
      for (std::size_t i = 0; i + 1 < k; i += 2) {
        a[i] = static_cast<float>(std::ldexp(1.0, r.uni(60, 63)) * (1 + r.unif(0, 1)));
        a[i + 1] = a[i];
        b[i] = 1.0f;
        b[i + 1] = -1.0f;
      }
      a[k - 1] = static_cast<float>(r.gauss() * 1e-30);
      b[k - 1] = 1.0f;
      break;
    }
  }
}

class StrictDotOracle : public test::OracleTest {};

TEST_F(StrictDotOracle, MatmulMatchesSdot) {
  Rng r(11);
  constexpr std::size_t M = 72, K = 37;
  std::vector<float> a(M * K), b(M * K);
  for (std::size_t i = 0; i < M; ++i) make_pair(r, static_cast<int>(i), K, &a[i * K], &b[i * K]);
  std::vector<float> out(M * M);
  matmul_nt(a, b, out, M, M, K);
  test::npy_write(path("a.npy"), a, {M, K});
  test::npy_write(path("b.npy"), b, {M, K});
  run_op("sdot", {"a.npy", "b.npy"}, {"out.npy"});
  test::expect_bits_equal(out, test::npy_read<float>(path("out.npy")), "sdot");
  // strict_dot is the same computation one pair at a time.
  for (std::size_t i = 0; i < M; ++i) {
    const float d = strict_dot(std::span<const float>(&a[i * K], K), std::span<const float>(&b[i * K], K));
    const float want = out[i * M + i];
    EXPECT_TRUE(test::bits(d) == test::bits(want) || (std::isnan(d) && std::isnan(want))) << i;
  }
}

// Rows for ssum / smean: the same hazards as sums of n values.
std::vector<float> make_rows(Rng& r, std::size_t rows, std::size_t n) {
  std::vector<float> x(rows * n);
  std::vector<float> tmp(n);
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = &x[i * n];
    switch (i % 7) {
      case 0:
        for (std::size_t j = 0; j < n; ++j) row[j] = r.finite_f32();
        break;
      case 1: {  // the sum of a pair-family as products rounded to fp32 → cancellation
        make_pair(r, static_cast<int>(i / 7) % 9, n, row, tmp.data());
        for (std::size_t j = 0; j < n; ++j) row[j] = row[j] * tmp[j];
        break;
      }
      case 2: {  // mean exactly at an fp32 midpoint, or next to it: 1.5 + (1.5 + 2^-22) + c
        for (std::size_t j = 0; j < n; ++j) row[j] = 0.0f;
        const float c[] = {-0x1p-24f, -0x1p-24f * (1 - 0x1p-23f), -0x1p-24f * (1 + 0x1p-23f)};
        row[0] = 1.5f;
        row[1] = 1.5f + 0x1p-22f;
        row[2] = c[r.uni(0, 2)];
        break;
      }
      case 3:  // big cancellation: the mean falls back to exact rationals
        for (std::size_t j = 0; j + 1 < n; j += 2) {
          row[j] = std::ldexp(1.0f, r.uni(20, 40));
          row[j + 1] = -row[j];
        }
        for (int t = 0; t < 3; ++t) row[r.uni(0, static_cast<int>(n) - 1)] = static_cast<float>(r.gauss() * 1e-3);
        break;
      case 4:  // signed zeros (exact zero → +0) and subnormals
        for (std::size_t j = 0; j < n; ++j)
          row[j] = r.uni(0, 2) ? (r.uni(0, 1) ? -0.0f : 0.0f) : test::from_bits(r.u32() & 0x801FFFFFu);
        break;
      case 5:  // non-finite
        for (std::size_t j = 0; j < n; ++j) row[j] = static_cast<float>(r.gauss());
        row[r.uni(0, static_cast<int>(n) - 1)] = r.uni(0, 2) == 0 ? NAN : (r.uni(0, 1) ? INFINITY : -INFINITY);
        if (r.uni(0, 1)) row[0] = -row[r.uni(0, static_cast<int>(n) - 1)];
        break;
      default:  // identical values (an exact mean) at varied scales, incl. near fp32 max
        for (std::size_t j = 0; j < n; ++j) row[j] = std::ldexp(1.0f + r.uni(0, 255) / 256.0f, r.uni(-149, 127));
        break;
    }
  }
  return x;
}

TEST_F(StrictDotOracle, SumAndMeanMatchSsumAndSmean) {
  Rng r(12);
  for (std::size_t n : {3u, 29u}) {
    const std::size_t rows = 700;
    const std::vector<float> x = make_rows(r, rows, n);
    std::vector<float> s(rows), m(rows), m2(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      const std::span<const float> row(&x[i * n], n);
      s[i] = strict_sum(row);
      m[i] = strict_mean(row);
    }
    test::npy_write(path("x.npy"), x, {rows, n});
    test::npy_write_scalar<std::int64_t>(path("axis.npy"), -1);
    run_op("ssum", {"x.npy", "axis.npy"}, {"s.npy"});
    run_op("smean", {"x.npy", "axis.npy"}, {"m.npy"});
    test::expect_bits_equal(s, test::npy_read<float>(path("s.npy")), "ssum n=" + std::to_string(n));
    test::expect_bits_equal(m, test::npy_read<float>(path("m.npy")), "smean n=" + std::to_string(n));
  }
}

TEST(StrictDot, MeanOfSquaresIsTheMeanOfExactSquares) {
  // Lengths around the 16 partial sums strict_mean_sq keeps (none full, one, tails) and RMSNorm's.
  Rng r(13);
  const std::size_t lengths[] = {1, 15, 16, 17, 33, 100, 5120};
  for (int c = 0; c < 280; ++c) {
    std::vector<float> x(lengths[c % 7]);
    for (auto& v : x) v = r.finite_f32();
    std::vector<double> sq;
    for (float v : x) sq.push_back(static_cast<double>(v) * v);
    // strict_mean_sq ≡ exact_mean_f32 of the squares (which exact_sum_test checks against fsum).
    double s = 0;
    for (double t : sq) s += t;
    const float want = strict_mean_sq(x);
    ExactAccumulator acc;
    for (double t : sq) acc.add(t);
    EXPECT_EQ(test::bits(want), test::bits(acc.mean32(x.size()))) << c;
  }
}

TEST(StrictDot, FastModeIsCloseToStrict) {
  Rng r(14);
  constexpr std::size_t M = 4, N = 16, K = 256;
  std::vector<float> a(M * K), b(N * K), s(M * N), f(M * N);
  for (auto& v : a) v = r.bf16_gauss(0);
  for (auto& v : b) v = r.bf16_gauss(-4);
  matmul_nt(a, b, s, M, N, K, Numerics::kStrict);
  matmul_nt(a, b, f, M, N, K, Numerics::kFast);
  for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(f[i], s[i], 1e-4 * (1 + std::fabs(s[i])));
}

TEST(StrictDot, ShapeErrors) {
  std::vector<float> a(6), b(6), out(4);
  EXPECT_THROW(matmul_nt(a, b, out, 2, 2, 4), Error);
  EXPECT_THROW((void)strict_dot(std::span<const float>(a.data(), 3), std::span<const float>(b.data(), 2)), Error);
}

}  // namespace
}  // namespace dsv4::kernels
