// See moe.h.
#include "model/moe.h"

#include <algorithm>
#include <optional>

#include "kernels/fp32_ops.h"
#include "kernels/strict_dot.h"
#include "kernels/topk.h"
#include "kernels/transcendental.h"
#include "numeric/bf16.h"
#include "util/error.h"
#include "util/scratch_arena.h"
#include "util/thread_pool.h"

namespace dsv4 {
namespace {

using kernels::mul32;

// Expert(x) for the m rows of x; weight [m] or empty (shared expert). out [m, dim].
void expert(const ForwardContext& ctx, const ExpertWeights& e, std::span<const float> x,
            std::size_t m, std::span<const float> weight, std::span<float> out) {
  OpTimer timer(ctx, "moe/experts");
  const std::size_t inter = e.w1.rows;
  ScratchFrame frame;
  const std::span<float> g = frame.zeros<float>(m * inter), u = frame.zeros<float>(m * inter);
  kernels::linear(x, m, e.w1, g, ctx.lin());
  kernels::linear(x, m, e.w3, u, ctx.lin());
  const auto lim = static_cast<float>(ctx.cfg.swiglu_limit);
  const bool clamp = ctx.cfg.swiglu_limit > 0;
  // Element-wise, so split by rows over the pool; the silu of a row at once (strict_silu_n: the
  // same bits as strict_silu, vectorised).
  parallel_for(m * inter >= kParallelElements ? ctx.pool : nullptr, m, [&](std::size_t r0, std::size_t r1) {
    ScratchFrame rf;
    const std::span<float> silu = rf.uninit<float>(inter);
    for (std::size_t row = r0; row < r1; ++row) {
      float* gr = g.data() + row * inter;
      const float* ur = u.data() + row * inter;
      if (clamp)
        for (std::size_t c = 0; c < inter; ++c) gr[c] = std::min(gr[c], lim);
      kernels::strict_silu_n(gr, silu.data(), inter);
      for (std::size_t c = 0; c < inter; ++c) {
        const float ui = clamp ? std::min(std::max(ur[c], -lim), lim) : ur[c];
        float h = mul32(silu[c], ui);
        if (!weight.empty()) h = mul32(weight[row], h);
        gr[c] = round_bf16(h);
      }
    }
  });
  kernels::linear(g, m, e.w2, out, ctx.lin());
}

}  // namespace

void moe_forward(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> x,
                 std::size_t N, std::span<const std::uint8_t> image, std::span<float> out,
                 std::vector<std::int64_t>* idx_out, std::vector<float>* wts_out) {
  const ModelConfig& c = ctx.cfg;
  if (c.score_func != "sqrtsoftplus")
    fail("gate: score_func '{}' is not used by V4.1 (spec §7.1)", c.score_func);
  const auto dim = static_cast<std::size_t>(c.dim);
  const std::size_t E = w.experts.size();
  const auto k = static_cast<std::size_t>(w.role->is_mtp ? c.dspark_n_activated_experts : c.n_activated_experts);
  ScratchFrame frame;
  // Gate (§7.1).
  std::optional<OpTimer> gate_timer(std::in_place, ctx, "moe/gate");
  const std::span<float> s = frame.zeros<float>(N * E);
  auto lin = ctx.lin();
  lin.f32_output = true;
  kernels::linear(x, N, w.gate, s, lin);
  const auto temp = static_cast<float>(c.gate_temp);
  const std::span<float> biased = frame.zeros<float>(N * E);
  for (std::size_t t = 0; t < N; ++t) {
    const bool img = !image.empty() && image[t];
    const std::vector<float>& b = img ? w.gate_bias_vl : w.gate_bias;
    for (std::size_t e = 0; e < E; ++e) {
      float& v = s[t * E + e];
      v = kernels::strict_sqrt(kernels::strict_softplus(v / temp));
      biased[t * E + e] = v + b[e];
    }
  }
  const std::span<std::int64_t> idx = frame.zeros<std::int64_t>(N * k);
  kernels::topk_lowest_index(biased, N, E, k, idx);
  const std::span<float> wts = frame.zeros<float>(N * k);
  const auto route = static_cast<float>(c.route_scale);
  for (std::size_t t = 0; t < N; ++t) {
    for (std::size_t j = 0; j < k; ++j) wts[t * k + j] = s[t * E + static_cast<std::size_t>(idx[t * k + j])];
    if (k > 1) {
      const float sum = kernels::strict_sum(std::span<const float>(wts.data() + t * k, k));
      const float den = sum + 1e-20f;
      for (std::size_t j = 0; j < k; ++j) wts[t * k + j] = wts[t * k + j] / den;
    }
    for (std::size_t j = 0; j < k; ++j) wts[t * k + j] = mul32(wts[t * k + j], route);
  }
  gate_timer.reset();
  // Routed experts in increasing index, tokens grouped per expert. The gathers, the scatter-adds
  // and the element-wise passes are split over the pool by rows: an expert takes a token at most
  // once, so its rows are distinct tokens, and each y row still receives its experts' outputs in
  // increasing expert index — the same sums in the same order on any thread count.
  ThreadPool* rows_pool = N * dim >= kParallelElements ? ctx.pool : nullptr;
  const std::span<float> y = frame.zeros<float>(N * dim);
  // An expert is chosen at most once per token (top-k of distinct indices), so N rows hold any
  // expert's tokens.
  const std::span<float> xe = frame.uninit<float>(N * dim), we = frame.uninit<float>(N), oe = frame.uninit<float>(N * dim);
  const std::span<std::size_t> toks = frame.uninit<std::size_t>(N);
  for (std::size_t e = 0; e < E; ++e) {
    std::size_t n = 0;
    for (std::size_t t = 0; t < N; ++t)
      for (std::size_t j = 0; j < k; ++j)
        if (static_cast<std::size_t>(idx[t * k + j]) == e) {
          if (n == N) fail("moe: expert {} chosen twice for one token", e);
          toks[n] = t;
          we[n] = wts[t * k + j];
          ++n;
        }
    if (n == 0) continue;
    parallel_for(n * dim >= kParallelElements ? ctx.pool : nullptr, n, [&](std::size_t i0, std::size_t i1) {
      for (std::size_t i = i0; i < i1; ++i)
        std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(toks[i] * dim), dim, xe.begin() + static_cast<std::ptrdiff_t>(i * dim));
    });
    std::fill_n(oe.begin(), n * dim, 0.0f);
    expert(ctx, w.experts[e], xe.first(n * dim), n, we.first(n), oe.first(n * dim));
    parallel_for(n * dim >= kParallelElements ? ctx.pool : nullptr, n, [&](std::size_t i0, std::size_t i1) {
      for (std::size_t i = i0; i < i1; ++i)
        for (std::size_t d = 0; d < dim; ++d) y[toks[i] * dim + d] += oe[i * dim + d];
    });
  }
  if (w.shared) {
    const std::span<float> sh = frame.zeros<float>(N * dim);
    expert(ctx, *w.shared, x, N, {}, sh);
    parallel_for(rows_pool, N, [&](std::size_t t0, std::size_t t1) {
      for (std::size_t i = t0 * dim; i < t1 * dim; ++i) y[i] += sh[i];
    });
  }
  parallel_for(rows_pool, N, [&](std::size_t t0, std::size_t t1) {
    for (std::size_t i = t0 * dim; i < t1 * dim; ++i) out[i] = round_bf16(y[i]);
  });
  if (idx_out) idx_out->assign(idx.begin(), idx.end());
  if (wts_out) wts_out->assign(wts.begin(), wts.end());
}

}  // namespace dsv4
