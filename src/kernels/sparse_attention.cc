// Sparse attention (§2.9). See sparse_attention.h.
#include "kernels/sparse_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/exact_sum.h"
#include "kernels/fp32_ops.h"
#include "kernels/strict_dot.h"
#include "kernels/transcendental.h"
#include "numeric/bf16.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

constexpr float kMuFloor = static_cast<float>(-1e30);  // F32(−1e30) of the reference
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

void sparse_attn(std::span<const float> q, std::span<const float> kv, std::span<const float> sink,
                 std::span<const std::int32_t> idx, float scale, const SparseAttnShape& sh,
                 std::span<float> out) {
  const std::size_t S = sh.queries, H = sh.heads, D = sh.dim, N = sh.rows, K = sh.slots;
  if (q.size() != S * H * D) fail("sparse_attn: q has {} elements, expected {}x{}x{}", q.size(), S, H, D);
  if (kv.size() != N * D) fail("sparse_attn: kv has {} elements, expected {}x{}", kv.size(), N, D);
  if (sink.size() != H) fail("sparse_attn: sink has {} elements, expected {}", sink.size(), H);
  if (idx.size() != S * K) fail("sparse_attn: idx has {} elements, expected {}x{}", idx.size(), S, K);
  if (out.size() != S * H * D) fail("sparse_attn: out has {} elements, expected {}", out.size(), S * H * D);
  for (std::int32_t i : idx)
    if (i < -1 || (i >= 0 && static_cast<std::size_t>(i) >= N))
      fail("sparse_attn: slot index {} out of range [-1, {})", i, N);

  // The row an empty slot gathers: kv[0] · 0 (zeros unless kv[0] holds inf/NaN).
  std::vector<float> zrow(D, 0.0f);
  if (N > 0)
    for (std::size_t d = 0; d < D; ++d) zrow[d] = kv[d] * 0.0f;

  std::vector<const float*> rows(kAttnBlock);
  std::vector<float> s(kAttnBlock), p(kAttnBlock), pb(kAttnBlock), acc(D);
  std::vector<double> vs(D), va(D);
  for (std::size_t t = 0; t < S; ++t) {
    const std::int32_t* it = idx.data() + t * K;
    bool any = false;
    for (std::size_t j = 0; j < K; ++j) any = any || it[j] >= 0;
    for (std::size_t h = 0; h < H; ++h) {
      const std::span<const float> qh = q.subspan((t * H + h) * D, D);
      float* o = out.data() + (t * H + h) * D;
      if (!any) {
        std::fill(o, o + D, 0.0f);
        continue;
      }
      float mu = kMuFloor, l = 0.0f;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::size_t b0 = 0; b0 < K; b0 += kAttnBlock) {
        const std::size_t nb = std::min(kAttnBlock, K - b0);
        // scores
        float bmax = kNegInf;
        for (std::size_t j = 0; j < nb; ++j) {
          const std::int32_t slot = it[b0 + j];
          rows[j] = slot >= 0 ? kv.data() + static_cast<std::size_t>(slot) * D : zrow.data();
          const float sj = mul32(strict_dot(qh, std::span<const float>(rows[j], D)), scale);
          s[j] = slot >= 0 ? sj : kNegInf;
          bmax = max_nan(bmax, s[j]);
        }
        const float mu_new = max_nan(mu, bmax);
        const float alpha = strict_exp(sub32(mu, mu_new));
        for (std::size_t j = 0; j < nb; ++j) {
          p[j] = strict_exp(sub32(s[j], mu_new));
          pb[j] = round_bf16(p[j]);
        }
        l = add32(mul32(l, alpha), strict_sum(std::span<const float>(p.data(), nb)));
        // Σ_j bf16(p_j)·v_j[d] for every d: float64 sums and absolute sums over the block,
        // decided per d, exact recomputation for the undecided ones.
        std::fill(vs.begin(), vs.end(), 0.0);
        std::fill(va.begin(), va.end(), 0.0);
        for (std::size_t j = 0; j < nb; ++j) {
          const double pj = pb[j];
          const float* r = rows[j];
          for (std::size_t d = 0; d < D; ++d) {
            const double prod = pj * static_cast<double>(r[d]);
            vs[d] += prod;
            va[d] += std::fabs(prod);
          }
        }
        for (std::size_t d = 0; d < D; ++d) {
          float pv;
          if (!decide_sum_f32(vs[d], va[d], nb, &pv)) {
            ExactAccumulator ex;
            for (std::size_t j = 0; j < nb; ++j)
              ex.add(static_cast<double>(pb[j]) * static_cast<double>(rows[j][d]));
            pv = ex.round32();
          }
          acc[d] = add32(mul32(acc[d], alpha), pv);
        }
        mu = mu_new;
      }
      l = add32(l, strict_exp(sub32(sink[h], mu)));
      for (std::size_t d = 0; d < D; ++d) o[d] = round_bf16(div32(acc[d], l));
    }
  }
}

}  // namespace dsv4::kernels
