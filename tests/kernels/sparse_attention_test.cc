// Sparse attention (src/kernels/sparse_attention.h) against the oracle's sparse_attn, bit for
// bit: slot lists spanning several 64-slot blocks with a partial last block, empty slots (−1)
// scattered, a whole block empty (first or last), every slot empty (zeros), repeated slots (tied
// scores), a single valid slot, large scores (most probabilities underflow), and sinks of −inf
// and of a value whose exp overflows. Released width D = 512 with scale 512^−0.5 as well.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_oracle.h"
#include "kernels/sparse_attention.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

class SparseAttnOracle : public test::OracleTest {
 protected:
  void check(const SparseAttnShape& sh, float scale, std::uint64_t seed) {
    Rng r(seed);
    const std::size_t S = sh.queries, H = sh.heads, D = sh.dim, N = sh.rows, K = sh.slots;
    std::vector<float> q(S * H * D), kv(N * D), sink(H);
    std::vector<std::int32_t> idx(S * K);
    for (std::size_t t = 0; t < S; ++t)
      for (std::size_t i = 0; i < H * D; ++i) q[t * H * D + i] = r.bf16_gauss(t % 8 == 5 ? 4 : 0);
    for (auto& v : kv) v = r.bf16_gauss(0);
    for (std::size_t h = 0; h < H; ++h) sink[h] = static_cast<float>(r.unif(-2, 2));
    if (H > 3) {
      sink[3] = -INFINITY;
      sink[2] = 100.0f;
    }
    for (std::size_t t = 0; t < S; ++t) {
      std::int32_t* it = &idx[t * K];
      for (std::size_t j = 0; j < K; ++j) {
        std::int32_t v = r.uni(0, static_cast<int>(N) - 1);
        switch (t % 8) {
          case 1: if (r.uni(0, 9) < 3) v = -1; break;          // scattered holes
          case 2: v = -1; break;                               // nothing visible
          case 3: if (j < 64) v = -1; break;                   // first block empty
          case 4: if (j >= 128) v = -1; break;                 // last block empty
          case 6: v = static_cast<std::int32_t>(j % 5); break;  // repeated slots: tied scores
          case 7: v = j == K / 2 ? v : -1; break;              // one valid slot
          default: break;
        }
        it[j] = v;
      }
    }
    std::vector<float> out(S * H * D);
    sparse_attn(q, kv, sink, idx, scale, sh, out);
    test::npy_write(path("q.npy"), q, {S, H, D});
    test::npy_write(path("kv.npy"), kv, {N, D});
    test::npy_write(path("sink.npy"), sink, {H});
    test::npy_write(path("idx.npy"), idx, {S, K});
    test::npy_write_scalar<float>(path("scale.npy"), scale);
    run_op("sparse_attn", {"q.npy", "kv.npy", "sink.npy", "idx.npy", "scale.npy"}, {"out.npy"});
    test::expect_bits_equal(out, test::npy_read<float>(path("out.npy")), "sparse_attn", false);
    for (std::size_t i = 0; i < H * D; ++i) ASSERT_EQ(test::bits(out[2 * H * D + i]), 0u);  // empty row
  }
};

TEST_F(SparseAttnOracle, SmallHeadsManyBlocks) {
  check(SparseAttnShape{16, 4, 64, 70, 150}, 0.125f, 71);
}

TEST_F(SparseAttnOracle, ReleasedWidth) {
  check(SparseAttnShape{3, 2, 512, 300, 200}, static_cast<float>(std::pow(512.0, -0.5)), 72);
}

TEST(SparseAttn, ShapeAndIndexErrors) {
  const SparseAttnShape sh{1, 1, 4, 2, 3};
  std::vector<float> q(4), kv(8), sink(1), out(4);
  std::vector<std::int32_t> idx = {0, 1, -1};
  sparse_attn(q, kv, sink, idx, 1.0f, sh, out);
  idx[2] = 2;  // N = 2 rows
  EXPECT_THROW(sparse_attn(q, kv, sink, idx, 1.0f, sh, out), Error);
  idx[2] = -2;
  EXPECT_THROW(sparse_attn(q, kv, sink, idx, 1.0f, sh, out), Error);
  idx[2] = 0;
  EXPECT_THROW(sparse_attn(q, kv, std::vector<float>(2), idx, 1.0f, sh, out), Error);
}

}  // namespace
}  // namespace dsv4::kernels
