// Hyper-connections in fast numerics (see hyper_connections.h): the strict ops' results with
// fixed-order fp32 / double arithmetic, split over tokens. The loops are written so the compiler
// can vectorise them without reassociating anything (16 independent partial sums; element-wise
// double products), which keeps every token's bits fixed whatever the ISA, threads or batch.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/exact_sum.h"
#include "kernels/hyper_connections.h"
#include "kernels/strict_dot.h"
#include "numeric/bf16.h"
#include "util/error.h"
#include "util/thread_pool.h"
#include "util/scratch_arena.h"

namespace dsv4::kernels {
namespace {

// The per-token loops below are compiled for AVX-512 and AVX2 beside the baseline and chosen at
// load time (GCC function multi-versioning). Each is element-wise (exact double products, adds
// in a fixed order, no contraction: this file is built with -ffp-contract=off), so every version
// gives the same bits; only the vector width differs.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DSV4_HC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DSV4_HC_CLONES
#endif

void check(const char* fn, const char* what, std::size_t got, std::size_t want) {
  if (got != want) fail("{}: {} has {} elements, expected {}", fn, what, got, want);
}

// fp32 of dot16_f64 (strict_dot.h: exact double products in 16 double partial sums joined by a
// halving tree), in this file's vector clones. Double sums keep the result the correctly rounded
// (strict) one unless the exact sum lies within about n·2^-53 of an fp32 rounding boundary: the
// mixes feed sigmoids, a softmax and 20 Sinkhorn steps whose outputs steer every later layer, so
// staying on the strict bits here keeps fast-mode divergence where it belongs, in the big linears.
DSV4_HC_CLONES float dot16(const float* a, const float* b, std::size_t n) {
  return static_cast<float>(dot16_f64(a, b, n));
}

// dot16(a[t], b, n) for kDotTokens rows a[t] against one b, each with dot16's partial sums,
// order and tree (the same bits): b — a row of the mixes' projection, 24 of them × hc·dim floats
// (1.9 MB for the released shapes, past L2) — is read and widened once for the group instead of
// once per token.
constexpr int kDotTokens = 8;
DSV4_HC_CLONES void dot16_tokens(const float* const* a, const float* b, std::size_t n, float* out) {
  double acc[kDotTokens][16] = {};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    double bl[16];
    for (std::size_t l = 0; l < 16; ++l) bl[l] = static_cast<double>(b[i + l]);
#pragma GCC unroll 8
    for (int t = 0; t < kDotTokens; ++t)
      for (std::size_t l = 0; l < 16; ++l) acc[t][l] += static_cast<double>(a[t][i + l]) * bl[l];
  }
  for (int t = 0; t < kDotTokens; ++t) out[t] = static_cast<float>(dot16_finish(acc[t], a[t], b, i, n));
}

// acc[d] += c · x[d] in double, d < n.
DSV4_HC_CLONES void axpy_double(double* acc, double c, const float* x, std::size_t n) {
  for (std::size_t d = 0; d < n; ++d) acc[d] += c * static_cast<double>(x[d]);
}

// o[d] = bf16(p · y[d] + fp32(acc[d])), d < n.
DSV4_HC_CLONES void post_row(float* o, float p, const float* y, const double* acc, std::size_t n) {
  for (std::size_t d = 0; d < n; ++d) o[d] = round_bf16(p * y[d] + static_cast<float>(acc[d]));
}

// strict_mean's steps for n elements of one token at once: s and a are the float64 sums of the
// copies and of their magnitudes, accumulated in copy order from +0 (as strict_mean's loop),
// then decide_mean_f32's interval (mean_interval, the same definition) element-wise. open[d] ≠ 0
// where the decision is left open (the caller redoes those exactly); elsewhere o[d] is the bf16
// of the decided mean.
DSV4_HC_CLONES void copy_mean_row(const float* xt, std::size_t hc, std::size_t dim, std::size_t d0, std::size_t n,
                                  double* s, double* a, float* o, std::uint32_t* open) {
  for (std::size_t d = 0; d < n; ++d) s[d] = 0.0, a[d] = 0.0;
  for (std::size_t c = 0; c < hc; ++c) {
    const float* xc = xt + c * dim + d0;
    for (std::size_t d = 0; d < n; ++d) {
      s[d] += static_cast<double>(xc[d]);
      a[d] += std::fabs(static_cast<double>(xc[d]));
    }
  }
  const double dn = static_cast<double>(hc);
  for (std::size_t d = 0; d < n; ++d) {
    const MeanInterval m = mean_interval(s[d], a[d], dn);
    // Non-finite q: lo and hi differ (inf) or are both NaN; either way strict_mean's own answer
    // is static_cast<float>(q), which both paths give.
    open[d] = std::bit_cast<std::uint32_t>(m.lo) ^ std::bit_cast<std::uint32_t>(m.hi);  // (no branches: vectorised)
    // q is never −0 (see mean_interval), so the conversion alone gives strict_mean's +0.
    o[d] = static_cast<float>(m.q);
  }
  for (std::size_t d = 0; d < n; ++d) o[d] = round_bf16(o[d]);
}

}  // namespace

void hc_copy_mean_bf16(std::span<const float> x, std::size_t tokens, std::size_t hc, std::size_t dim,
                       std::span<float> out, std::size_t ldo, ThreadPool* pool) {
  check("hc_copy_mean_bf16", "X", x.size(), tokens * hc * dim);
  if (hc == 0 || hc > 64) fail("hc_copy_mean_bf16: hc = {} is outside 1…64", hc);
  if (ldo < dim) fail("hc_copy_mean_bf16: output row stride {} is below the row length {}", ldo, dim);
  if (tokens > 0 && out.size() < (tokens - 1) * ldo + dim)
    fail("hc_copy_mean_bf16: out has {} elements, {} rows of stride {} need {}", out.size(), tokens, ldo, (tokens - 1) * ldo + dim);
  parallel_for(tokens * dim >= kParallelElements ? pool : nullptr, tokens, [&](std::size_t t0, std::size_t t1) {
    constexpr std::size_t kChunk = 256;
    double s[kChunk], a[kChunk];
    std::uint32_t open[kChunk];
    for (std::size_t t = t0; t < t1; ++t) {
      const float* xt = x.data() + t * hc * dim;
      for (std::size_t d0 = 0; d0 < dim; d0 += kChunk) {
        const std::size_t n = std::min(kChunk, dim - d0);
        float* o = out.data() + t * ldo + d0;
        copy_mean_row(xt, hc, dim, d0, n, s, a, o, open);
        for (std::size_t d = 0; d < n; ++d) {
          if (!open[d]) continue;
          float v[64];
          for (std::size_t c = 0; c < hc; ++c) v[c] = xt[c * dim + d0 + d];
          o[d] = round_bf16(strict_mean(std::span<const float>(v, hc)));
        }
      }
    }
  });
}

void hc_mixes_fast(std::span<const float> x, std::span<const float> fn, std::span<const float> scale,
                   std::span<const float> base, double norm_eps, std::size_t tokens, std::size_t dim,
                   const HcParams& p, std::span<float> pre, std::span<float> post, std::span<float> comb,
                   ThreadPool* pool) {
  const std::size_t hc = p.hc, nm = (2 + hc) * hc, width = hc * dim;
  check("hc_mixes_fast", "X", x.size(), tokens * width);
  check("hc_mixes_fast", "fn", fn.size(), nm * width);
  check("hc_mixes_fast", "pre", pre.size(), tokens * hc);
  check("hc_mixes_fast", "post", post.size(), tokens * hc);
  check("hc_mixes_fast", "comb", comb.size(), tokens * hc * hc);
  if (width == 0) fail("hc_mixes_fast: empty rows");
  const float eps = static_cast<float>(norm_eps);
  // Tokens in groups of kDotTokens (a short group repeats its last token), each projection row
  // read once per group; every token's numbers are dot16's whatever its group.
  parallel_for(pool, tokens, [&](std::size_t t0, std::size_t t1) {
    ScratchFrame frame;
    const std::span<float> mixes = frame.zeros<float>(kDotTokens * nm);
    for (std::size_t g = t0; g < t1; g += kDotTokens) {
      const std::size_t ng = std::min<std::size_t>(kDotTokens, t1 - g);
      const float* xg[kDotTokens];
      for (std::size_t u = 0; u < kDotTokens; ++u) xg[u] = x.data() + (g + std::min(u, ng - 1)) * width;
      if (ng == 1) {  // (decode: one token, no copies to compute)
        for (std::size_t i = 0; i < nm; ++i) mixes[i] = dot16(xg[0], fn.data() + i * width, width);
      } else {
        float dots[kDotTokens];
        for (std::size_t i = 0; i < nm; ++i) {
          dot16_tokens(xg, fn.data() + i * width, width, dots);
          for (std::size_t u = 0; u < kDotTokens; ++u) mixes[u * nm + i] = dots[u];
        }
      }
      for (std::size_t u = 0; u < ng; ++u) {
        const std::size_t t = g + u;
        const float ms = dot16(xg[u], xg[u], width) / static_cast<float>(width);
        const auto r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(ms + eps)));
        const std::span<float> mu = mixes.subspan(u * nm, nm);
        for (float& v : mu) v *= r;
        hc_split_sinkhorn(mu, scale, base, 1, p, pre.subspan(t * hc, hc), post.subspan(t * hc, hc),
                          comb.subspan(t * hc * hc, hc * hc));
      }
    }
  });
}

void hc_pre_fast(std::span<const float> x, std::span<const float> pre, std::size_t tokens, std::size_t hc,
                 std::size_t dim, std::span<float> out, ThreadPool* pool) {
  check("hc_pre_fast", "X", x.size(), tokens * hc * dim);
  check("hc_pre_fast", "pre", pre.size(), tokens * hc);
  check("hc_pre_fast", "out", out.size(), tokens * dim);
  parallel_for(pool, tokens, [&](std::size_t t0, std::size_t t1) {
    ScratchFrame frame;
    const std::span<double> acc = frame.zeros<double>(dim);
    for (std::size_t t = t0; t < t1; ++t) {
      const float* xt = x.data() + t * hc * dim;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::size_t c = 0; c < hc; ++c) {
        axpy_double(acc.data(), pre[t * hc + c], xt + c * dim, dim);
      }
      for (std::size_t d = 0; d < dim; ++d) out[t * dim + d] = round_bf16(static_cast<float>(acc[d]));
    }
  });
}

void hc_post_fast(std::span<const float> y, std::span<const float> r, std::span<const float> post,
                  std::span<const float> comb, std::size_t tokens, std::size_t hc, std::size_t dim,
                  std::span<float> out, ThreadPool* pool) {
  check("hc_post_fast", "y", y.size(), tokens * dim);
  check("hc_post_fast", "R", r.size(), tokens * hc * dim);
  check("hc_post_fast", "post", post.size(), tokens * hc);
  check("hc_post_fast", "comb", comb.size(), tokens * hc * hc);
  check("hc_post_fast", "out", out.size(), tokens * hc * dim);
  parallel_for(pool, tokens, [&](std::size_t t0, std::size_t t1) {
    ScratchFrame frame;
    const std::span<double> acc = frame.zeros<double>(dim);
    for (std::size_t t = t0; t < t1; ++t) {
      const float* rt = r.data() + t * hc * dim;
      const float* ct = comb.data() + t * hc * hc;
      const float* yt = y.data() + t * dim;
      for (std::size_t j = 0; j < hc; ++j) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (std::size_t i = 0; i < hc; ++i) {
          axpy_double(acc.data(), ct[i * hc + j], rt + i * dim, dim);
        }
        post_row(out.data() + (t * hc + j) * dim, post[t * hc + j], yt, acc.data(), dim);
      }
    }
  });
}

}  // namespace dsv4::kernels
