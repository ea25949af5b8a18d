// Hyper-connections in fast numerics (hyper_connections_fast.cc) against the strict ops, which
// the oracle tests pin bit for bit: agreement within the error fixed-order fp32 sums allow, and
// the invariances fast mode promises — the same bits on any thread count and for a token alone
// or inside a batch.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "kernel_oracle.h"
#include "kernels/exact_sum.h"
#include "kernels/hyper_connections.h"
#include "kernels/strict_dot.h"
#include "numeric/bf16.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

constexpr std::size_t kHc = 4, kNm = (2 + kHc) * kHc;

struct MixInputs {
  std::size_t T, D;
  std::vector<float> x, fn, scale, base;
};

MixInputs mix_inputs(std::size_t T, std::size_t D, std::uint64_t seed) {
  Rng r(seed);
  MixInputs m{T, D, std::vector<float>(T * kHc * D), std::vector<float>(kNm * kHc * D), std::vector<float>(3),
              std::vector<float>(kNm)};
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < kHc * D; ++i) m.x[t * kHc * D + i] = r.bf16_gauss(static_cast<int>(t % 7) - 3);
  for (auto& v : m.fn) v = static_cast<float>(r.gauss() / std::sqrt(static_cast<double>(kHc * D)));
  for (auto& s : m.scale) s = static_cast<float>(r.unif(0.5, 2.0));
  for (auto& b : m.base) b = static_cast<float>(r.gauss());
  return m;
}

struct Mixes {
  std::vector<float> pre, post, comb;
};

Mixes run_mixes(const MixInputs& m, bool fast, ThreadPool* pool, std::size_t t0 = 0, std::size_t nt = 0) {
  if (nt == 0) nt = m.T;
  const std::size_t w = kHc * m.D;
  const std::span<const float> x(m.x.data() + t0 * w, nt * w);
  Mixes o{std::vector<float>(nt * kHc), std::vector<float>(nt * kHc), std::vector<float>(nt * kHc * kHc)};
  const HcParams p{kHc, 20, 1e-6};
  if (fast) hc_mixes_fast(x, m.fn, m.scale, m.base, 1e-20, nt, m.D, p, o.pre, o.post, o.comb, pool);
  else hc_mixes(x, m.fn, m.scale, m.base, 1e-20, nt, m.D, p, o.pre, o.post, o.comb);
  return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST(HcFast, MixesAgreeWithStrict) {
  // D = 1029: the dot's tail (4116 = 257·16 + 4) exercises the partial lanes.
  for (std::size_t D : {64u, 1029u, 5120u}) {
    SCOPED_TRACE(D);
    const MixInputs m = mix_inputs(9, D, 91 + D);
    const Mixes s = run_mixes(m, false, nullptr), f = run_mixes(m, true, nullptr);
    // The mixes move by a few fp32 ulps; pre and post are sigmoids (slope ≤ 1/2 after the ×2),
    // comb a Sinkhorn of a softmax, all of them in [0, 2]: an error of 1e-5 absolute is far
    // beyond what a few ulps can do and far below any real defect (a wrong scale, row or norm).
    EXPECT_LT(max_abs_diff(s.pre, f.pre), 1e-5);
    EXPECT_LT(max_abs_diff(s.post, f.post), 1e-5);
    EXPECT_LT(max_abs_diff(s.comb, f.comb), 1e-5);
  }
}

TEST(HcFast, MixesIndependentOfThreadsAndBatch) {
  const MixInputs m = mix_inputs(11, 320, 92);
  ThreadPool p1(1), p3(3);
  const Mixes a = run_mixes(m, true, nullptr), b = run_mixes(m, true, &p1), c = run_mixes(m, true, &p3);
  EXPECT_TRUE(same_bits(a.pre, c.pre) && same_bits(a.post, c.post) && same_bits(a.comb, c.comb));
  EXPECT_TRUE(same_bits(a.comb, b.comb));
  for (std::size_t t : {0u, 5u, 10u}) {  // one token alone = its row of the batch
    const Mixes one = run_mixes(m, true, &p3, t, 1);
    EXPECT_TRUE(std::equal(one.comb.begin(), one.comb.end(), a.comb.begin() + static_cast<std::ptrdiff_t>(t * kHc * kHc)));
    EXPECT_TRUE(std::equal(one.pre.begin(), one.pre.end(), a.pre.begin() + static_cast<std::ptrdiff_t>(t * kHc)));
  }
}

// Counts elements whose bits differ; every difference must be one bf16 step at most.
std::size_t bf16_steps_apart(const std::vector<float>& a, const std::vector<float>& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (test::bits(a[i]) == test::bits(b[i])) continue;
    ++n;
    const double step = std::ldexp(1.0, std::ilogb(std::max(std::fabs(a[i]), std::fabs(b[i]))) - 7);
    EXPECT_LE(std::fabs(static_cast<double>(a[i]) - b[i]), step) << "element " << i;
  }
  return n;
}

// Random inputs of hc_pre / hc_post for T tokens of width D.
struct PrePostInputs {
  std::vector<float> x, y, pre, post, comb;
  PrePostInputs(std::size_t T, std::size_t D, std::uint64_t seed)
      : x(T * kHc * D), y(T * D), pre(T * kHc), post(T * kHc), comb(T * kHc * kHc) {
    Rng r(seed);
    for (auto& v : x) v = r.bf16_gauss(0);
    for (auto& v : y) v = r.bf16_gauss(0);
    for (auto& v : pre) v = static_cast<float>(r.unif(-1, 1));
    for (auto& v : post) v = static_cast<float>(r.unif(0, 2));
    for (auto& v : comb) v = static_cast<float>(r.unif(0, 1));
  }
};

TEST(HcFast, PreAndPostAgreeWithStrictAndAreInvariant) {
  constexpr std::size_t T = 13, D = 515;
  const PrePostInputs in(T, D, 93);
  const auto& [x, y, pre, post, comb] = in;
  std::vector<float> sp(T * D), fp(T * D), so(T * kHc * D), fo(T * kHc * D);
  hc_pre(x, pre, T, kHc, D, sp);
  hc_post(y, x, post, comb, T, kHc, D, so);
  ThreadPool p2(2);
  hc_pre_fast(x, pre, T, kHc, D, fp, &p2);
  hc_post_fast(y, x, post, comb, T, kHc, D, fo, &p2);
  // Double sums of exact products round like the exact sum but within a few double ulps of a
  // boundary: all but a handful of the ~34K outputs are the strict bits.
  EXPECT_LE(bf16_steps_apart(sp, fp), sp.size() / 1000);
  EXPECT_LE(bf16_steps_apart(so, fo), so.size() / 1000);
  // Thread count and token-alone invariance.
  std::vector<float> fp1(T * D), fo1(T * kHc * D);
  hc_pre_fast(x, pre, T, kHc, D, fp1, nullptr);
  hc_post_fast(y, x, post, comb, T, kHc, D, fo1, nullptr);
  EXPECT_TRUE(same_bits(fp, fp1));
  EXPECT_TRUE(same_bits(fo, fo1));
  const std::size_t t = 7;
  std::vector<float> one(kHc * D);
  hc_post_fast(std::span<const float>(y).subspan(t * D, D), std::span<const float>(x).subspan(t * kHc * D, kHc * D),
               std::span<const float>(post).subspan(t * kHc, kHc), std::span<const float>(comb).subspan(t * kHc * kHc, kHc * kHc),
               1, kHc, D, one, &p2);
  EXPECT_TRUE(std::equal(one.begin(), one.end(), fo.begin() + static_cast<std::ptrdiff_t>(t * kHc * D)));
}

// The fast pre/post loops are compiled for several vector widths and picked at load time; every
// version must be the plain loop's bits (double products and sums in index order, one fp32 and
// one bf16 rounding at the end), written out here independently.
TEST(HcFast, PreAndPostAreThePlainLoopsBitForBit) {
  constexpr std::size_t T = 3, D = 1031;  // a ragged tail for every vector width
  const PrePostInputs in(T, D, 94);
  const auto& [x, y, pre, post, comb] = in;
  const auto bf16 = [](float f) {  // round to nearest even, as round_bf16 (finite inputs)
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    std::memcpy(&f, &u, 4);
    return f;
  };
  std::vector<float> want_pre(T * D), want_post(T * kHc * D);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t d = 0; d < D; ++d) {
      double acc = 0;
      for (std::size_t c = 0; c < kHc; ++c)
        acc += static_cast<double>(pre[t * kHc + c]) * static_cast<double>(x[(t * kHc + c) * D + d]);
      want_pre[t * D + d] = bf16(static_cast<float>(acc));
      for (std::size_t j = 0; j < kHc; ++j) {
        double a = 0;
        for (std::size_t i = 0; i < kHc; ++i)
          a += static_cast<double>(comb[(t * kHc + i) * kHc + j]) * static_cast<double>(x[(t * kHc + i) * D + d]);
        const volatile float py = post[t * kHc + j] * y[t * D + d];  // no contraction into an fma
        want_post[(t * kHc + j) * D + d] = bf16(py + static_cast<float>(a));
      }
    }
  std::vector<float> got_pre(T * D), got_post(T * kHc * D);
  hc_pre_fast(x, pre, T, kHc, D, got_pre, nullptr);
  hc_post_fast(y, x, post, comb, T, kHc, D, got_post, nullptr);
  EXPECT_TRUE(same_bits(got_pre, want_pre));
  EXPECT_TRUE(same_bits(got_post, want_post));
}

// The DSpark target hiddens' mean over the copies is strict_mean's bits element by element, in
// either mode: inputs whose float64 sum leaves the rounding decision open (copies of wildly
// different exponents, means on an fp32 halfway point), zeros of both signs, subnormals, inf and
// NaN; rows not a multiple of the 256-element chunk; 1, 3 and 4 copies; pooled or not.
TEST(HcFast, CopyMeanIsStrictMeanBitForBit) {
  Rng r(21);
  for (std::size_t hc : {1u, 3u, 4u}) {
    const std::size_t T = 5, D = 300;
    std::vector<float> x(T * hc * D);
    for (std::size_t i = 0; i < x.size(); ++i) {
      switch (r.uni(0, 7)) {
        case 0: x[i] = static_cast<float>(r.gauss() * std::ldexp(1.0, r.uni(-140, 120))); break;  // any exponent
        case 1: x[i] = r.uni(0, 1) ? 0.0f : -0.0f; break;
        case 2: x[i] = std::bit_cast<float>(r.u32() & 0x807FFFFFu); break;  // subnormal
        case 3: x[i] = 1.0f + static_cast<float>(r.uni(0, 3)) * 0x1p-23f; break;  // halfway means
        case 4: x[i] = 0x1p-24f * static_cast<float>(r.uni(-2, 2)); break;
        default: x[i] = static_cast<float>(r.gauss()); break;
      }
    }
    x[7] = INFINITY;
    x[hc * D + 9] = -INFINITY;
    x[2 * hc * D + 11] = NAN;
    if (hc > 1) x[3 * hc * D + 13] = INFINITY, x[3 * hc * D + D + 13] = -INFINITY;
    std::vector<float> want(T * D);
    std::size_t open = 0;
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t d = 0; d < D; ++d) {
        float v[4];
        double s = 0, a = 0;
        for (std::size_t c = 0; c < hc; ++c) {
          v[c] = x[(t * hc + c) * D + d];
          s += v[c];
          a += std::fabs(static_cast<double>(v[c]));
        }
        float dummy;
        open += decide_mean_f32(s, a, hc, &dummy) ? 0 : 1;
        want[t * D + d] = round_bf16(strict_mean(std::span<const float>(v, hc)));
      }
    if (hc > 1) {
      EXPECT_GT(open, 0u) << "no element needed the exact path (hc = " << hc << ")";
    }
    ThreadPool pool(3);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<float> got(T * D, -1.0f);
      hc_copy_mean_bf16(x, T, hc, D, got, D, p);
      EXPECT_TRUE(same_bits(got, want)) << "hc = " << hc << (p ? " pooled" : "");
      // Into every other row of a wider layout (as main_hidden's [S, targets · D]): the rows in
      // between stay untouched.
      std::vector<float> wide(2 * T * D, -1.0f);
      hc_copy_mean_bf16(x, T, hc, D, std::span<float>(wide).subspan(D), 2 * D, p);
      for (std::size_t t = 0; t < T; ++t) {
        EXPECT_EQ(0, std::memcmp(wide.data() + (2 * t + 1) * D, want.data() + t * D, D * sizeof(float))) << "row " << t;
        for (std::size_t d = 0; d < D; ++d) ASSERT_EQ(-1.0f, wide[2 * t * D + d]);
      }
    }
  }
  std::vector<float> x(2 * 65 * 4), o(8);
  EXPECT_THROW(hc_copy_mean_bf16(x, 2, 65, 4, o, 4, nullptr), Error);  // hc above 64
  EXPECT_THROW(hc_copy_mean_bf16(x, 2, 4, 4, o, 4, nullptr), Error);   // X is not 2 × 4 × 4
  std::vector<float> x2(2 * 4 * 4);
  EXPECT_THROW(hc_copy_mean_bf16(x2, 2, 4, 4, o, 3, nullptr), Error);  // stride below the row
  EXPECT_THROW(hc_copy_mean_bf16(x2, 2, 4, 4, o, 5, nullptr), Error);  // out too short for the stride
  EXPECT_NO_THROW(hc_copy_mean_bf16(x2, 2, 4, 4, o, 4, nullptr));
}

TEST(HcFast, ShapeErrors) {
  std::vector<float> x(4 * 8), o(8), pre(4), post(4), comb(16), fn(24 * 32), sc(3), b(24);
  EXPECT_THROW(hc_pre_fast(x, pre, 1, 4, 7, o, nullptr), Error);
  EXPECT_THROW(hc_post_fast(o, x, post, comb, 1, 4, 7, x, nullptr), Error);
  EXPECT_THROW(hc_mixes_fast(x, fn, sc, b, 1e-20, 2, 8, HcParams{}, pre, post, comb, nullptr), Error);
  EXPECT_NO_THROW(hc_mixes_fast(x, fn, sc, b, 1e-20, 1, 8, HcParams{}, pre, post, comb, nullptr));
}

}  // namespace
}  // namespace dsv4::kernels
