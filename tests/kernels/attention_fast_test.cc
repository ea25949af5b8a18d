// The fast attention kernels (src/kernels/attention_fast.h):
//  - every SIMD build gives the scalar build's bits (the scalar build is the definition), on
//    widths that are and are not multiples of 16, head counts that are and are not multiples of 4,
//    slot lists with holes and all-empty lists;
//  - bits do not depend on the thread count, nor on which other queries share the call (a query
//    alone = the same query inside a batch: what makes decode ≡ prefill);
//  - the results agree with an independent double-precision evaluation of the same definition
//    and with the strict kernel to within bf16 rounding;
//  - the indexer's masks (visibility, candidates) give −inf exactly where they say, and leave
//    every other score unchanged.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "kernel_oracle.h"
#include "kernels/attention_fast.h"
#include "kernels/sparse_attention.h"
#include "util/error.h"

#define DSV4_SIMD16 0
#include "kernels/simd16.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

std::vector<SimdPath> paths() {
  std::vector<SimdPath> v{SimdPath::kScalar};
  if (best_simd_path() >= SimdPath::kAvx2) v.push_back(SimdPath::kAvx2);
  if (best_simd_path() >= SimdPath::kAvx512) v.push_back(SimdPath::kAvx512);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (test::bits(a[i]) != test::bits(b[i])) return false;
  return true;
}

// The bf16 bit patterns of values that are bf16 values (the form the caches hold them in).
std::vector<std::uint16_t> bf16_bits(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint32_t u = test::bits(v[i]);
    EXPECT_EQ(u & 0xFFFFu, 0u) << "test data " << i << " is not a bf16 value";
    out[i] = static_cast<std::uint16_t>(u >> 16);
  }
  return out;
}

struct AttnCase {
  FastAttnShape sh;
  std::size_t rows_a = 0, rows_b = 0;
  std::vector<float> q, a, b, sink;
  std::vector<std::uint16_t> a_bits, b_bits;
  std::vector<std::int32_t> idx;
  float scale = 0;

  AttnCase(std::size_t S, std::size_t H, std::size_t D, std::size_t K, std::size_t na, std::size_t nb, std::uint64_t seed)
      : sh{S, H, D, K}, rows_a(na), rows_b(nb), q(S * H * D), a(na * D), b(nb * D), sink(H), idx(S * K) {
    Rng r(seed);
    for (auto& v : q) v = r.bf16_gauss(0);
    for (auto& v : a) v = r.bf16_gauss(0);
    for (auto& v : b) v = r.bf16_gauss(0);
    for (auto& v : sink) v = static_cast<float>(r.unif(-2, 2));
    const int N = static_cast<int>(na + nb);
    for (std::size_t t = 0; t < S; ++t)
      for (std::size_t j = 0; j < K; ++j) {
        std::int32_t v = r.uni(0, N - 1);
        if (t % 5 == 1 && r.uni(0, 3) == 0) v = -1;  // holes
        if (t % 5 == 3) v = -1;                      // nothing visible
        if (t % 5 == 4 && j >= K / 2) v = -1;         // holes at the end (compact lists)
        idx[t * K + j] = v;
      }
    scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
    a_bits = bf16_bits(a);
    b_bits = bf16_bits(b);
  }
  KvRows kv() const { return {a_bits.data(), rows_a, b_bits.data(), rows_b}; }
  std::vector<float> run(SimdPath p, ThreadPool* pool) const {
    std::vector<float> out(sh.queries * sh.heads * sh.dim, -1.0f);
    sparse_attn_fast(q, kv(), sink, idx, scale, sh, out, pool, p);
    return out;
  }
};

TEST(SparseAttnFast, EveryPathGivesTheScalarBits) {
  for (auto [S, H, D, K] : std::vector<std::array<std::size_t, 4>>{
           {10, 4, 128, 40}, {5, 9, 512, 150}, {5, 3, 72, 17}, {5, 1, 16, 1}, {3, 6, 40, 70}}) {
    const AttnCase c(S, H, D, K, 50, 90, S * 131 + H * 7 + D);
    const auto ref = c.run(SimdPath::kScalar, nullptr);
    for (SimdPath p : paths())
      EXPECT_TRUE(same_bits(c.run(p, nullptr), ref)) << simd_path_name(p) << " S=" << S << " H=" << H << " D=" << D;
  }
}

// The header's definition written out in plain scalar code (exp_fast aside, which has its own
// test below): pins the shared kernel body, which every SIMD build compiles, to the contract.
TEST(SparseAttnFast, IsTheDefinitionBitForBit) {
  using simd16_scalar::exp_fast;
  using simd16_scalar::lane;
  using simd16_scalar::set1;
  const auto ex = [](float x) { return lane(exp_fast(set1(x)), 0); };
  for (auto [S, H, D, K] : std::vector<std::array<std::size_t, 4>>{{5, 5, 40, 37}, {3, 4, 512, 70}}) {
    const AttnCase c(S, H, D, K, 23, 31, S + H + D);
    std::vector<float> want(S * H * D, 0.0f);
    for (std::size_t t = 0; t < S; ++t)
      for (std::size_t h = 0; h < H; ++h) {
        std::vector<const float*> rows;
        for (std::size_t j = 0; j < K; ++j) {
          const std::int32_t v = c.idx[t * K + j];
          if (v < 0) continue;
          const auto i = static_cast<std::size_t>(v);
          rows.push_back(i < c.rows_a ? c.a.data() + i * D : c.b.data() + (i - c.rows_a) * D);
        }
        if (rows.empty()) continue;
        const float* q = c.q.data() + (t * H + h) * D;
        std::vector<float> sc(rows.size());
        for (std::size_t j = 0; j < rows.size(); ++j) {
          float acc[16] = {};
          for (std::size_t d = 0; d < D; ++d) acc[d % 16] = std::fma(q[d], rows[j][d], acc[d % 16]);
          for (std::size_t w = 8; w >= 1; w /= 2)
            for (std::size_t i = 0; i < w; ++i) acc[i] = acc[i] + acc[i + w];
          sc[j] = acc[0] * c.scale;
        }
        float mu = sc[0];
        for (float v : sc) mu = v > mu ? v : mu;
        float l = 0.0f;
        std::vector<float> pb(rows.size());
        for (std::size_t j = 0; j < rows.size(); ++j) {
          const float p = ex(sc[j] - mu);
          l += p;
          pb[j] = test::to_bf16_value(p);
        }
        l += ex(c.sink[h] - mu);
        for (std::size_t d = 0; d < D; ++d) {
          float o = 0.0f;
          for (std::size_t j = 0; j < rows.size(); ++j) o = std::fma(pb[j], rows[j][d], o);
          want[(t * H + h) * D + d] = test::to_bf16_value(o / l);
        }
      }
    for (SimdPath p : paths()) EXPECT_TRUE(same_bits(c.run(p, nullptr), want)) << simd_path_name(p) << " D=" << D;
  }
}

TEST(SparseAttnFast, ThreadCountAndBatchDoNotChangeBits) {
  const AttnCase c(7, 9, 512, 200, 128, 300, 5);
  const auto ref = c.run(best_simd_path(), nullptr);
  for (std::size_t threads : {2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_TRUE(same_bits(c.run(best_simd_path(), &pool), ref)) << threads << " threads";
  }
  // Each query alone.
  const std::size_t HD = c.sh.heads * c.sh.dim;
  for (std::size_t t = 0; t < c.sh.queries; ++t) {
    std::vector<float> out(HD);
    sparse_attn_fast(std::span<const float>(c.q).subspan(t * HD, HD), c.kv(), c.sink,
                     std::span<const std::int32_t>(c.idx).subspan(t * c.sh.slots, c.sh.slots), c.scale,
                     {1, c.sh.heads, c.sh.dim, c.sh.slots}, out, nullptr);
    EXPECT_TRUE(same_bits(out, std::vector<float>(ref.begin() + static_cast<std::ptrdiff_t>(t * HD),
                                                  ref.begin() + static_cast<std::ptrdiff_t>((t + 1) * HD))))
        << "query " << t;
  }
}

// The definition evaluated in double (exact softmax), and the strict kernel on the same inputs.
TEST(SparseAttnFast, AgreesWithDoubleReferenceAndStrict) {
  const AttnCase c(6, 5, 512, 160, 64, 200, 11);
  const auto fast = c.run(best_simd_path(), nullptr);
  const std::size_t S = c.sh.queries, H = c.sh.heads, D = c.sh.dim, K = c.sh.slots;
  // Strict kernel on the concatenated rows.
  std::vector<float> rows(c.a);
  rows.insert(rows.end(), c.b.begin(), c.b.end());
  std::vector<float> strict(S * H * D);
  sparse_attn(c.q, rows, c.sink, c.idx, c.scale, {S, H, D, c.rows_a + c.rows_b, K}, strict);
  double worst_ref = 0, worst_strict = 0;
  for (std::size_t t = 0; t < S; ++t)
    for (std::size_t h = 0; h < H; ++h) {
      std::vector<double> s;
      std::vector<const float*> rp;
      for (std::size_t j = 0; j < K; ++j) {
        const std::int32_t v = c.idx[t * K + j];
        if (v < 0) continue;
        const float* row = rows.data() + static_cast<std::size_t>(v) * D;  // slot v of a, then b
        double d = 0;
        for (std::size_t k = 0; k < D; ++k) d += static_cast<double>(c.q[(t * H + h) * D + k]) * row[k];
        s.push_back(d * c.scale);
        rp.push_back(row);
      }
      double mu = -1e300, l = 0;
      for (double v : s) mu = std::max(mu, v);
      std::vector<double> p;
      for (double v : s) p.push_back(std::exp(v - mu));
      for (double v : p) l += v;
      l += std::exp(c.sink[h] - mu);
      for (std::size_t k = 0; k < D; ++k) {
        // Error scale: the sum of the magnitudes of the terms (cancellation makes |o| itself
        // no measure of what rounding the weights to bf16 may move).
        double o = 0, mag = 0;
        for (std::size_t j = 0; j < p.size(); ++j) {
          o += p[j] * rp[j][k];
          mag += std::fabs(p[j] * rp[j][k]);
        }
        o = p.empty() ? 0.0 : o / l;
        mag = p.empty() ? 0.0 : mag / l;
        const double tol = mag + std::fabs(o) + 1e-30;
        const float f = fast[(t * H + h) * D + k];
        worst_ref = std::max(worst_ref, std::fabs(f - o) / tol);
        worst_strict = std::max(worst_strict, std::fabs(static_cast<double>(f) - strict[(t * H + h) * D + k]) / tol);
      }
    }
  // bf16 keeps 8 significant bits: one rounding is ≤ 2^−9 relative; p_j's bf16 rounding adds as much.
  EXPECT_LT(worst_ref, 1.0 / 64) << "vs double";
  EXPECT_LT(worst_strict, 1.0 / 64) << "vs strict";
}

TEST(SparseAttnFast, RejectsBadSlots) {
  AttnCase c(2, 2, 32, 4, 3, 3, 1);
  c.idx[5] = 6;
  EXPECT_THROW(c.run(SimdPath::kScalar, nullptr), Error);
  c.idx[5] = -2;
  EXPECT_THROW(c.run(SimdPath::kScalar, nullptr), Error);
}

struct IndexCase {
  IndexScoreShape sh;
  std::vector<float> q, w, K;
  std::vector<std::int64_t> visible;
  std::vector<std::uint8_t> cand;

  IndexCase(std::size_t S, std::size_t nh, std::size_t hd, std::size_t T, bool with_cand, std::uint64_t seed)
      : sh{S, nh, hd, T}, q(S * nh * hd), w(S * nh), K(T * hd), visible(S) {
    Rng r(seed);
    for (auto& v : q) v = r.bf16_gauss(0);
    for (auto& v : w) v = r.bf16_gauss(-3);
    for (auto& v : K) v = r.bf16_gauss(0);
    for (std::size_t s = 0; s < S; ++s) visible[s] = r.uni(0, static_cast<int>(T));
    if (S > 1) visible[1] = static_cast<std::int64_t>(T);
    if (with_cand) {
      cand.resize(S * T);
      for (auto& v : cand) v = static_cast<std::uint8_t>(r.uni(0, 2) != 0);
    }
  }
  std::vector<float> run(SimdPath p, ThreadPool* pool) const {
    std::vector<float> I(sh.queries * sh.keys, 7.0f);
    index_scores_fast(q, w, bf16_bits(K), visible, cand, sh, I, pool, p);
    return I;
  }
};

TEST(IndexScoresFast, EveryPathGivesTheScalarBits) {
  for (auto [S, nh, hd, T] : std::vector<std::array<std::size_t, 4>>{
           {6, 4, 64, 100}, {3, 32, 128, 300}, {4, 3, 40, 17}, {2, 1, 16, 1}}) {
    for (bool with_cand : {false, true}) {
      const IndexCase c(S, nh, hd, T, with_cand, S * 17 + T);
      const auto ref = c.run(SimdPath::kScalar, nullptr);
      for (SimdPath p : paths())
        EXPECT_TRUE(same_bits(c.run(p, nullptr), ref)) << simd_path_name(p) << " nh=" << nh << " hd=" << hd << " T=" << T;
    }
  }
}

TEST(IndexScoresFast, MasksAndSplitsLeaveEveryOtherBitAlone) {
  const IndexCase masked(5, 8, 128, 333, true, 3);
  IndexCase open = masked;
  open.cand.clear();
  for (auto& v : open.visible) v = static_cast<std::int64_t>(open.sh.keys);
  const auto Im = masked.run(best_simd_path(), nullptr), Io = open.run(best_simd_path(), nullptr);
  const std::size_t T = masked.sh.keys;
  for (std::size_t s = 0; s < masked.sh.queries; ++s)
    for (std::size_t t = 0; t < T; ++t) {
      const bool on = static_cast<std::int64_t>(t) < masked.visible[s] && masked.cand[s * T + t];
      if (on) ASSERT_EQ(test::bits(Im[s * T + t]), test::bits(Io[s * T + t])) << s << "," << t;
      else ASSERT_EQ(Im[s * T + t], -std::numeric_limits<float>::infinity()) << s << "," << t;
    }
  ThreadPool pool(3);
  EXPECT_TRUE(same_bits(masked.run(best_simd_path(), &pool), Im));
  // One query alone (a decode step) gives its row of the batched call.
  const std::size_t nh = masked.sh.heads, hd = masked.sh.dim;
  for (std::size_t s = 0; s < masked.sh.queries; ++s) {
    std::vector<float> I(T);
    index_scores_fast(std::span<const float>(open.q).subspan(s * nh * hd, nh * hd),
                      std::span<const float>(open.w).subspan(s * nh, nh), bf16_bits(open.K),
                      std::span<const std::int64_t>(open.visible).subspan(s, 1), {}, {1, nh, hd, T}, I, nullptr);
    EXPECT_TRUE(same_bits(I, std::vector<float>(Io.begin() + static_cast<std::ptrdiff_t>(s * T),
                                                Io.begin() + static_cast<std::ptrdiff_t>((s + 1) * T))));
  }
}

// The contract of attention_fast.h written out in scalar code: sequential fp32 FMA dots, the
// bf16 roundings, the ascending-head sum, the masks. Every path gives exactly these bits.
TEST(IndexScoresFast, IsTheDefinitionBitForBit) {
  for (auto [S, nh, hd, T] : std::vector<std::array<std::size_t, 4>>{{3, 32, 128, 150}, {2, 20, 40, 37}, {2, 48, 16, 9}}) {
    const IndexCase c(S, nh, hd, T, true, S + nh + T);
    std::vector<float> want(S * T);
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t t = 0; t < T; ++t) {
        float sum = 0.0f;
        for (std::size_t h = 0; h < nh; ++h) {
          float e = 0.0f;
          for (std::size_t d = 0; d < hd; ++d) e = std::fma(c.q[(s * nh + h) * hd + d], c.K[t * hd + d], e);
          const float sc = test::to_bf16_value(e);
          sum += test::to_bf16_value((sc > 0.0f ? sc : 0.0f) * c.w[s * nh + h]);
        }
        const bool on = static_cast<std::int64_t>(t) < c.visible[s] && c.cand[s * T + t];
        want[s * T + t] = on ? test::to_bf16_value(sum) : -std::numeric_limits<float>::infinity();
      }
    for (SimdPath p : paths()) EXPECT_TRUE(same_bits(c.run(p, nullptr), want)) << simd_path_name(p) << " nh=" << nh;
  }
}

TEST(IndexScoresFast, AgreesWithTheDefinitionInDouble) {
  const IndexCase c(4, 16, 128, 200, false, 9);
  const auto I = c.run(best_simd_path(), nullptr);
  const std::size_t nh = c.sh.heads, hd = c.sh.dim, T = c.sh.keys;
  std::size_t equal = 0, total = 0;
  for (std::size_t s = 0; s < c.sh.queries; ++s)
    for (std::size_t t = 0; t < static_cast<std::size_t>(c.visible[s]); ++t) {
      double sum = 0, mag = 0;
      float sum_strict_rounding = 0;  // the same roundings with the dot exact (rounded once)
      for (std::size_t h = 0; h < nh; ++h) {
        double d = 0;
        for (std::size_t k = 0; k < hd; ++k) d += static_cast<double>(c.q[(s * nh + h) * hd + k]) * c.K[t * hd + k];
        sum += std::max(d, 0.0) * c.w[s * nh + h];
        mag += std::fabs(std::max(d, 0.0) * c.w[s * nh + h]);
        const float sc = test::to_bf16_value(static_cast<float>(d));
        sum_strict_rounding += test::to_bf16_value((sc > 0 ? sc : 0.0f) * c.w[s * nh + h]);
      }
      const float got = I[s * T + t];
      EXPECT_NEAR(got, sum, mag / 64 + std::fabs(sum) / 128 + 1e-30) << s << "," << t;
      equal += test::bits(got) == test::bits(test::to_bf16_value(sum_strict_rounding));
      ++total;
    }
  // The fp32 dot differs from the correctly rounded one only in its last bits, which bf16 drops.
  EXPECT_GT(static_cast<double>(equal), 0.9 * static_cast<double>(total));
}

TEST(ExpFast, WithinTwoUlpAndZeroBelowTheNormalRange) {
  using namespace simd16_scalar;
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 0.01237) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    const float got = lane(exp_fast(set1(xf)), 0);
    worst = std::max(worst, std::fabs(got - want) / want);
  }
  EXPECT_LT(worst, 2.5 * std::ldexp(1.0, -23));
  EXPECT_EQ(lane(exp_fast(set1(-90.0f)), 0), 0.0f);
  EXPECT_EQ(lane(exp_fast(set1(-std::numeric_limits<float>::infinity())), 0), 0.0f);
  EXPECT_EQ(lane(exp_fast(set1(0.0f)), 0), 1.0f);
}

}  // namespace
}  // namespace dsv4::kernels
