// Top-k with lowest-index ties and candidate blocks (src/kernels/topk.h) against the oracle's
// topk_lowest_index and select_candidate_blocks: tie-heavy rows (a handful of distinct values,
// ±0, ±inf, NaN), k from 0 to n, lengths that are not multiples of the block size, visible
// counts 0 and T, fewer reachable blocks than the budget, whole blocks of −inf, NaN scores.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_oracle.h"
#include "kernels/topk.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

std::vector<float> tie_rows(Rng& r, std::size_t rows, std::size_t n) {
  static const float kSet[] = {-1.0f, 0.0f, -0.0f, 1.0f, 2.0f, INFINITY, -INFINITY, NAN, 0.5f};
  std::vector<float> v(rows * n);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      float x;
      switch (i % 4) {
        case 0: x = kSet[r.uni(0, 8)]; break;
        case 1: x = kSet[r.uni(0, 4)]; break;  // finite ties only
        case 2: x = r.bf16_gauss(-2); break;   // bf16 scores: occasional ties
        default: x = static_cast<float>(r.gauss());
      }
      v[i * n + j] = x;
    }
  return v;
}

class TopkOracle : public test::OracleTest {
 protected:
  // topk_lowest_index on `rows` rows of length n equals the oracle's, index for index, for each k.
  void expect_oracle_topk(const std::vector<float>& v, std::size_t rows, std::size_t n,
                          std::initializer_list<std::size_t> ks) {
    test::npy_write(path("v.npy"), v, {rows, n});
    for (std::size_t k : ks) {
      std::vector<std::int64_t> got(rows * k);
      topk_lowest_index(v, rows, n, k, got);
      test::npy_write_scalar<std::int64_t>(path("k.npy"), static_cast<std::int64_t>(k));
      run_op("topk_lowest_index", {"v.npy", "k.npy"}, {"idx.npy"});
      const auto want = test::npy_read<std::int64_t>(path("idx.npy"));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "k " << k << " at " << i;
    }
  }
};

TEST_F(TopkOracle, LowestIndexTies) {
  Rng r(91);
  constexpr std::size_t rows = 120, n = 37;
  const std::vector<float> v = tie_rows(r, rows, n);
  expect_oracle_topk(v, rows, n, {0, 10, 37});
}

// Rows as long as the indexer's (thousands of keys, k = 512): the histogram selection has
// buckets with many equal keys (tie rows), NaN and ±inf rows, and the k-th key inside a bucket
// with others above and below it.
TEST_F(TopkOracle, LongRowsAsTheIndexerHas) {
  Rng r(93);
  constexpr std::size_t rows = 24, n = 3001;
  std::vector<float> v = tie_rows(r, rows, n);
  for (std::size_t j = 0; j < n; ++j) v[5 * n + j] = static_cast<float>(j % 7);  // 7 values, many ties
  expect_oracle_topk(v, rows, n, {1, 512, 3000});
}

TEST_F(TopkOracle, CandidateBlocks) {
  Rng r(92);
  struct Cfg {
    std::size_t t, topk, bs;
  };
  for (const Cfg cfg : {Cfg{50, 3, 8}, Cfg{50, 10, 8}, Cfg{37, 4, 4}, Cfg{64, 0, 8}}) {
    const std::size_t rows = 80, t = cfg.t;
    std::vector<float> s = tie_rows(r, rows, t);
    std::vector<std::int64_t> c(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      c[i] = i % 5 == 0 ? 0 : (i % 5 == 1 ? static_cast<std::int64_t>(t) : r.uni(1, static_cast<int>(t)));
      if (i % 7 == 3)  // a whole block of −inf (unreachable), and masked tails
        for (std::size_t j = 0; j < std::min<std::size_t>(t, 2 * cfg.bs); ++j) s[i * t + j] = -INFINITY;
    }
    std::vector<std::uint8_t> got(rows * t);
    select_candidate_blocks(s, rows, t, c, cfg.topk, cfg.bs, got);
    test::npy_write(path("s.npy"), s, {rows, t});
    test::npy_write(path("c.npy"), c, {rows});
    test::npy_write_scalar<std::int64_t>(path("tb.npy"), static_cast<std::int64_t>(cfg.topk));
    test::npy_write_scalar<std::int64_t>(path("bs.npy"), static_cast<std::int64_t>(cfg.bs));
    run_op("select_candidate_blocks", {"s.npy", "c.npy", "tb.npy", "bs.npy"}, {"m.npy"});
    const auto want = test::npy_read<std::uint8_t>(path("m.npy"));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "T " << t << " topk " << cfg.topk << " bs " << cfg.bs << " at row "
                                 << i / t << " pos " << i % t;
  }
}

TEST(Topk, Errors) {
  std::vector<float> v(10);
  std::vector<std::int64_t> out(11);
  EXPECT_THROW(topk_lowest_index(v, 1, 10, 11, out), Error);
  std::vector<std::int64_t> c = {11};
  std::vector<std::uint8_t> m(10);
  EXPECT_THROW(select_candidate_blocks(v, 1, 10, c, 2, 4, m), Error);
  c[0] = -1;
  EXPECT_THROW(select_candidate_blocks(v, 1, 10, c, 2, 4, m), Error);
  c[0] = 3;
  EXPECT_THROW(select_candidate_blocks(v, 1, 10, c, 2, 0, m), Error);
}

}  // namespace
}  // namespace dsv4::kernels
