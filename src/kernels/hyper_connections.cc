// Hyper-connections and Sinkhorn (§2.10, §5). See hyper_connections.h.
#include "kernels/hyper_connections.h"

#include <limits>
#include <vector>

#include "kernels/exact_sum.h"
#include "kernels/fp32_ops.h"
#include "kernels/rmsnorm.h"
#include "kernels/strict_dot.h"
#include "kernels/transcendental.h"
#include "numeric/bf16.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4::kernels {
namespace {

void check(const char* fn, const char* what, std::size_t got, std::size_t want) {
  if (got != want) fail("{}: {} has {} elements, expected {}", fn, what, got, want);
}

// Strict sum of `n` fp32 values spaced `stride` apart (a column of the comb matrix).
float strided_sum(const float* x, std::size_t n, std::size_t stride) {
  ScratchFrame frame;
  const std::span<float> v = frame.uninit<float>(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = x[i * stride];
  return strict_sum(v);
}

// One token's Sinkhorn on c [hc, hc] in place (§2.10 steps 4–6).
void sinkhorn(float* c, std::size_t hc, int iters, float eps) {
  auto col_normalise = [&] {
    for (std::size_t k = 0; k < hc; ++k) {
      const float den = add32(strided_sum(c + k, hc, hc), eps);
      for (std::size_t r = 0; r < hc; ++r) c[r * hc + k] = div32(c[r * hc + k], den);
    }
  };
  // Row softmax, then + eps.
  for (std::size_t r = 0; r < hc; ++r) {
    float* row = c + r * hc;
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t k = 0; k < hc; ++k) mx = max_nan(mx, row[k]);
    for (std::size_t k = 0; k < hc; ++k) row[k] = strict_exp(sub32(row[k], mx));
    const float den = strict_sum(std::span<const float>(row, hc));
    for (std::size_t k = 0; k < hc; ++k) row[k] = add32(div32(row[k], den), eps);
  }
  col_normalise();
  for (int it = 1; it < iters; ++it) {
    for (std::size_t r = 0; r < hc; ++r) {
      float* row = c + r * hc;
      const float den = add32(strict_sum(std::span<const float>(row, hc)), eps);
      for (std::size_t k = 0; k < hc; ++k) row[k] = div32(row[k], den);
    }
    col_normalise();
  }
}

}  // namespace

void hc_split_sinkhorn(std::span<const float> mixes, std::span<const float> scale,
                       std::span<const float> base, std::size_t tokens, const HcParams& p,
                       std::span<float> pre, std::span<float> post, std::span<float> comb) {
  const std::size_t hc = p.hc, nm = (2 + hc) * hc;
  check("hc_split_sinkhorn", "mixes", mixes.size(), tokens * nm);
  check("hc_split_sinkhorn", "scale", scale.size(), 3);
  check("hc_split_sinkhorn", "base", base.size(), nm);
  check("hc_split_sinkhorn", "pre", pre.size(), tokens * hc);
  check("hc_split_sinkhorn", "post", post.size(), tokens * hc);
  check("hc_split_sinkhorn", "comb", comb.size(), tokens * hc * hc);
  const float eps = static_cast<float>(p.eps);
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* m = mixes.data() + t * nm;
    for (std::size_t j = 0; j < hc; ++j) {
      pre[t * hc + j] = add32(strict_sigmoid(add32(mul32(m[j], scale[0]), base[j])), eps);
      post[t * hc + j] =
          mul32(2.0f, strict_sigmoid(add32(mul32(m[hc + j], scale[1]), base[hc + j])));
    }
    float* c = comb.data() + t * hc * hc;
    for (std::size_t i = 0; i < hc * hc; ++i)
      c[i] = add32(mul32(m[2 * hc + i], scale[2]), base[2 * hc + i]);
    sinkhorn(c, hc, p.iters, eps);
  }
}

void hc_mixes(std::span<const float> x, std::span<const float> fn, std::span<const float> scale,
              std::span<const float> base, double norm_eps, std::size_t tokens, std::size_t dim,
              const HcParams& p, std::span<float> pre, std::span<float> post,
              std::span<float> comb) {
  const std::size_t hc = p.hc, nm = (2 + hc) * hc, width = hc * dim;
  check("hc_mixes", "X", x.size(), tokens * width);
  check("hc_mixes", "fn", fn.size(), nm * width);
  ScratchFrame frame;
  const std::span<float> mixes = frame.zeros<float>(tokens * nm);
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::span<const float> xt = x.subspan(t * width, width);
    const float r = rms_factor(xt, norm_eps);
    for (std::size_t i = 0; i < nm; ++i)
      mixes[t * nm + i] = mul32(strict_dot(xt, fn.subspan(i * width, width)), r);
  }
  hc_split_sinkhorn(mixes, scale, base, tokens, p, pre, post, comb);
}

void hc_pre(std::span<const float> x, std::span<const float> pre, std::size_t tokens,
            std::size_t hc, std::size_t dim, std::span<float> out) {
  check("hc_pre", "X", x.size(), tokens * hc * dim);
  check("hc_pre", "pre", pre.size(), tokens * hc);
  check("hc_pre", "out", out.size(), tokens * dim);
  ScratchFrame frame;
  const std::span<double> terms = frame.zeros<double>(hc);
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* xt = x.data() + t * hc * dim;
    const float* pt = pre.data() + t * hc;
    for (std::size_t d = 0; d < dim; ++d) {
      for (std::size_t c = 0; c < hc; ++c)
        terms[c] = static_cast<double>(pt[c]) * static_cast<double>(xt[c * dim + d]);
      out[t * dim + d] = round_bf16(exact_sum_f32(terms));
    }
  }
}

void hc_post(std::span<const float> y, std::span<const float> r, std::span<const float> post,
             std::span<const float> comb, std::size_t tokens, std::size_t hc, std::size_t dim,
             std::span<float> out) {
  check("hc_post", "y", y.size(), tokens * dim);
  check("hc_post", "R", r.size(), tokens * hc * dim);
  check("hc_post", "post", post.size(), tokens * hc);
  check("hc_post", "comb", comb.size(), tokens * hc * hc);
  check("hc_post", "out", out.size(), tokens * hc * dim);
  ScratchFrame frame;
  const std::span<double> terms = frame.zeros<double>(hc);
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* rt = r.data() + t * hc * dim;
    const float* ct = comb.data() + t * hc * hc;
    for (std::size_t j = 0; j < hc; ++j) {
      const float pj = post[t * hc + j];
      for (std::size_t d = 0; d < dim; ++d) {
        for (std::size_t i = 0; i < hc; ++i)
          terms[i] = static_cast<double>(ct[i * hc + j]) * static_cast<double>(rt[i * dim + d]);
        const float s = exact_sum_f32(terms);
        out[(t * hc + j) * dim + d] = round_bf16(add32(mul32(pj, y[t * dim + d]), s));
      }
    }
  }
}

}  // namespace dsv4::kernels
