// Hyper-connections (src/kernels/hyper_connections.h) against the oracle's hc_split_sinkhorn,
// hc_mixes, hc_pre and hc_post, bit for bit: mixes over several scales (saturated sigmoids,
// near-uniform and near-one-hot softmax rows, huge logits whose exp underflows), hc = 4 with 20
// iterations (released) and other hc / iteration counts, and pre/post/comb weights with
// cancellation between the residual copies and signed zeros.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_oracle.h"
#include "kernels/hyper_connections.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

class HcOracle : public test::OracleTest {
 protected:
  // Runs hc_split_sinkhorn / hc_mixes through the oracle (3 outputs) and compares.
  void compare3(const std::string& op, const std::vector<std::string>& in,
                const std::vector<float>& pre, const std::vector<float>& post,
                const std::vector<float>& comb) {
    run_op(op, in, {"pre.npy", "post.npy", "comb.npy"});
    test::expect_bits_equal(pre, test::npy_read<float>(path("pre.npy")), op + " pre");
    test::expect_bits_equal(post, test::npy_read<float>(path("post.npy")), op + " post");
    test::expect_bits_equal(comb, test::npy_read<float>(path("comb.npy")), op + " comb");
  }
  void write_params(std::size_t hc, int iters, double eps) {
    test::npy_write_scalar<std::int64_t>(path("hc.npy"), static_cast<std::int64_t>(hc));
    test::npy_write_scalar<std::int64_t>(path("it.npy"), iters);
    test::npy_write_scalar<double>(path("eps.npy"), eps);
  }
};

TEST_F(HcOracle, SplitSinkhorn) {
  Rng r(81);
  struct Cfg {
    std::size_t hc;
    int iters;
  };
  for (const Cfg cfg : {Cfg{4, 20}, Cfg{3, 7}, Cfg{2, 1}}) {
    const std::size_t hc = cfg.hc, nm = (2 + hc) * hc, T = 64;
    std::vector<float> mixes(T * nm), scale(3), base(nm);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t i = 0; i < nm; ++i) {
        const int e = t % 4 == 0 ? 0 : (t % 4 == 1 ? 6 : (t % 4 == 2 ? -8 : 12));  // ~1, 64, tiny, 4096
        mixes[t * nm + i] = static_cast<float>(r.gauss() * std::ldexp(1.0, e));
      }
    mixes[5 * nm + 2 * hc] = -0.0f;
    for (auto& s : scale) s = static_cast<float>(r.unif(0.1, 2.0));
    for (std::size_t i = 0; i < nm; ++i) base[i] = static_cast<float>(r.gauss() + (i >= 2 * hc && (i - 2 * hc) % (hc + 1) == 0 ? 3 : 0));
    const HcParams p{hc, cfg.iters, 1e-6};
    std::vector<float> pre(T * hc), post(T * hc), comb(T * hc * hc);
    hc_split_sinkhorn(mixes, scale, base, T, p, pre, post, comb);
    test::npy_write(path("m.npy"), mixes, {T, nm});
    test::npy_write(path("sc.npy"), scale, {3});
    test::npy_write(path("b.npy"), base, {nm});
    write_params(hc, cfg.iters, 1e-6);
    compare3("hc_split_sinkhorn", {"m.npy", "sc.npy", "b.npy", "hc.npy", "it.npy", "eps.npy"}, pre, post, comb);
  }
}

TEST_F(HcOracle, Mixes) {
  Rng r(82);
  constexpr std::size_t T = 12, hc = 4, D = 48, nm = 24;
  std::vector<float> x(T * hc * D), fn(nm * hc * D), scale(3), base(nm);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < hc * D; ++i)
      x[t * hc * D + i] = t == 3 ? 0.0f : r.bf16_gauss(t % 3 == 0 ? -70 : static_cast<int>(t % 5));
  for (auto& v : fn) v = static_cast<float>(r.gauss() * 0.05);
  for (auto& s : scale) s = static_cast<float>(r.unif(0.1, 2.0));
  for (auto& b : base) b = static_cast<float>(r.gauss());
  const HcParams p{hc, 20, 1e-6};
  std::vector<float> pre(T * hc), post(T * hc), comb(T * hc * hc);
  hc_mixes(x, fn, scale, base, 1e-20, T, D, p, pre, post, comb);
  test::npy_write(path("x.npy"), x, {T, hc, D});
  test::npy_write(path("fn.npy"), fn, {nm, hc * D});
  test::npy_write(path("sc.npy"), scale, {3});
  test::npy_write(path("b.npy"), base, {nm});
  test::npy_write_scalar<double>(path("ne.npy"), 1e-20);
  test::npy_write_scalar<double>(path("he.npy"), 1e-6);
  test::npy_write_scalar<std::int64_t>(path("it.npy"), 20);
  compare3("hc_mixes", {"x.npy", "fn.npy", "sc.npy", "b.npy", "ne.npy", "he.npy", "it.npy"}, pre, post, comb);
}

TEST_F(HcOracle, PreAndPost) {
  Rng r(83);
  constexpr std::size_t T = 10, hc = 4, D = 96;
  std::vector<float> x(T * hc * D), y(T * D), pre(T * hc), post(T * hc), comb(T * hc * hc);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t i = 0; i < hc * D; ++i) x[t * hc * D + i] = r.bf16_gauss(t % 4 == 3 ? 100 : 0);
    for (std::size_t d = 0; d < D; ++d) y[t * D + d] = r.bf16_gauss(0);
    for (std::size_t c = 0; c < hc; ++c) {
      pre[t * hc + c] = static_cast<float>(r.unif(0, 1));
      post[t * hc + c] = static_cast<float>(r.unif(0, 2));
    }
    for (std::size_t i = 0; i < hc * hc; ++i) comb[t * hc * hc + i] = static_cast<float>(r.unif(0, 1));
  }
  // Cancellation between copies: X[1] = X[0] with pre[1] = −pre[0]; R[2] = −R[0] with equal comb.
  for (std::size_t t = 0; t < T; t += 2) {
    for (std::size_t d = 0; d < D; ++d) {
      x[(t * hc + 1) * D + d] = x[(t * hc + 0) * D + d];
      x[(t * hc + 2) * D + d] = -x[(t * hc + 0) * D + d];
    }
    pre[t * hc + 1] = -pre[t * hc + 0];
    pre[t * hc + 2] = pre[t * hc + 3] = 0.0f;
    for (std::size_t j = 0; j < hc; ++j) {
      comb[t * hc * hc + 2 * hc + j] = comb[t * hc * hc + 0 * hc + j];
      comb[t * hc * hc + 1 * hc + j] = comb[t * hc * hc + 3 * hc + j] = -0.0f;
    }
    post[t * hc + 1] = 0.0f;
  }
  std::vector<float> opre(T * D), opost(T * hc * D);
  hc_pre(x, pre, T, hc, D, opre);
  hc_post(y, x, post, comb, T, hc, D, opost);
  test::npy_write(path("x.npy"), x, {T, hc, D});
  test::npy_write(path("y.npy"), y, {T, D});
  test::npy_write(path("pre.npy"), pre, {T, hc});
  test::npy_write(path("post.npy"), post, {T, hc});
  test::npy_write(path("comb.npy"), comb, {T, hc, hc});
  run_op("hc_pre", {"x.npy", "pre.npy"}, {"opre.npy"});
  run_op("hc_post", {"y.npy", "x.npy", "post.npy", "comb.npy"}, {"opost.npy"});
  test::expect_bits_equal(opre, test::npy_read<float>(path("opre.npy")), "hc_pre", false);
  test::expect_bits_equal(opost, test::npy_read<float>(path("opost.npy")), "hc_post", false);
}

TEST(Hc, ShapeErrors) {
  std::vector<float> m(24), sc(3), b(24), pre(4), post(4), comb(16);
  const HcParams p{};
  hc_split_sinkhorn(m, sc, b, 1, p, pre, post, comb);
  EXPECT_THROW(hc_split_sinkhorn(m, sc, b, 2, p, pre, post, comb), Error);
  EXPECT_THROW(hc_split_sinkhorn(m, std::vector<float>(2), b, 1, p, pre, post, comb), Error);
  std::vector<float> x(4 * 8), o(8);
  EXPECT_THROW(hc_pre(x, pre, 1, 4, 7, o), Error);
}

}  // namespace
}  // namespace dsv4::kernels
