// RMSNorm (src/kernels/rmsnorm.h) against the oracle's rmsnorm, bit for bit: bf16 rows across
// the whole range (tiny rows where eps dominates, rows near bf16 max, all-zero rows, rows of one
// repeated value, single nonzero elements, subnormal bf16), fp32 and bf16 weights, the text eps
// 1e−20 and the vision eps 1e−6 (both passed as the double constants of the reference).
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_oracle.h"
#include "kernels/rmsnorm.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

std::vector<float> make_rows(Rng& r, std::size_t rows, std::size_t d) {
  std::vector<float> x(rows * d);
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = &x[i * d];
    const float rep = r.bf16_gauss(r.uni(-20, 20));
    for (std::size_t j = 0; j < d; ++j) {
      switch (i % 8) {
        case 0: row[j] = r.bf16_gauss(0); break;
        case 1: row[j] = r.bf16_gauss(r.uni(-60, 60)); break;
        case 2: row[j] = r.bf16_gauss(-75); break;                   // mean(x²) ~ 1e-45: eps matters
        case 3: row[j] = r.bf16_gauss(125); break;                   // squares near 2^254
        case 4: row[j] = r.uni(0, 1) ? 0.0f : -0.0f; break;          // all zero: r = rsqrt(eps)
        case 5: row[j] = rep; break;                                 // a repeated value
        case 6: row[j] = j == i % d ? r.bf16_gauss(0) : 0.0f; break; // one nonzero element
        default: row[j] = test::from_bits(r.u32() & 0x807F0000u);    // bf16 subnormals
      }
    }
  }
  return x;
}

class RmsnormOracle : public test::OracleTest {};

TEST_F(RmsnormOracle, MatchesOracle) {
  Rng r(51);
  constexpr std::size_t rows = 64, d = 96;
  const std::vector<float> x = make_rows(r, rows, d);
  std::vector<float> w(d);
  std::vector<BF16> wb(d);
  std::vector<std::uint16_t> wbits(d);
  for (std::size_t j = 0; j < d; ++j) {
    w[j] = static_cast<float>(1.0 + 0.1 * r.gauss());
    wb[j] = BF16{static_cast<std::uint16_t>(test::bits(r.bf16_gauss(0)) >> 16)};
    wbits[j] = wb[j].bits;
  }
  test::npy_write(path("x.npy"), x, {rows, d});
  test::npy_write(path("w.npy"), w, {d});
  test::npy_write(path("wb.npy"), wbits, {d});
  for (double eps : {1e-20, 1e-6}) {
    std::vector<float> of(x.size()), ob(x.size());
    rmsnorm(x, w, eps, of, rows);
    rmsnorm(x, wb, eps, ob, rows);
    test::npy_write_scalar<double>(path("eps.npy"), eps);
    run_op("rmsnorm", {"x.npy", "w.npy", "eps.npy"}, {"of.npy"});
    run_op("rmsnorm", {"x.npy", "wb.npy", "eps.npy"}, {"ob.npy"});
    test::expect_bits_equal(of, test::npy_read<float>(path("of.npy")), "rmsnorm f32 w, eps " + std::to_string(eps), false);
    test::expect_bits_equal(ob, test::npy_read<float>(path("ob.npy")), "rmsnorm bf16 w, eps " + std::to_string(eps), false);
  }
}

TEST(Rmsnorm, InPlaceAndShapeErrors) {
  std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f}, w = {1.0f, 1.0f}, y(4);
  rmsnorm(x, w, 1e-20, y, 2);
  rmsnorm(x, w, 1e-20, x, 2);  // out aliases x
  for (int i = 0; i < 4; ++i) EXPECT_EQ(test::bits(x[i]), test::bits(y[i]));
  EXPECT_THROW(rmsnorm(x, w, 1e-20, y, 3), Error);
}

// Rows split over a pool (enough of them to be split) give the serial bits, in place or not.
TEST(Rmsnorm, PooledRowsAreTheSerialBits) {
  constexpr std::size_t kRows = 41, kD = 2048;  // 41 × 2048 ≥ kParallelElements
  Rng r(5);
  std::vector<float> x(kRows * kD), w(kD), serial(x.size()), pooled(x.size());
  for (auto& v : x) v = r.bf16_gauss(0);
  for (auto& v : w) v = r.bf16_gauss(0);
  rmsnorm(x, w, 1e-6, serial, kRows);
  ThreadPool pool(3);
  rmsnorm(x, w, 1e-6, pooled, kRows, &pool);
  test::expect_bits_equal(pooled, serial, "pooled");
  rmsnorm(x, w, 1e-6, x, kRows, &pool);
  test::expect_bits_equal(x, serial, "pooled, in place");
}

}  // namespace
}  // namespace dsv4::kernels
