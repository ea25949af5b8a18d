// See indexer.h.
#include "model/indexer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/attention_fast.h"
#include "kernels/fp32_ops.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/strict_dot.h"
#include "kernels/topk.h"
#include "model/model_qdq.h"
#include "numeric/bf16.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4 {

void index_keys(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> latent, std::size_t G,
                std::int64_t first_group, std::span<float> k) {
  const ModelConfig& c = ctx.cfg;
  const auto hd = static_cast<std::size_t>(c.index_head_dim);
  if (k.size() != G * hd) fail("index_keys: out has {} elements, expected {}x{}", k.size(), G, hd);
  kernels::linear(latent, G, w.idx_wk, k, ctx.lin());
  kernels::rmsnorm(k, w.idx_k_norm, c.norm_eps, k, G);
  ScratchFrame frame;
  const std::span<std::int64_t> gpos = frame.uninit<std::int64_t>(G);
  for (std::size_t g = 0; g < G; ++g) gpos[g] = (first_group + static_cast<std::int64_t>(g)) * w.role->ratio;
  kernels::apply_rope(k, 1, hd, *w.rope, gpos);
  fp4_e8m0_qdq_inplace(k);
}

void index_scores(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> x,
                  std::span<const float> qr, std::span<const std::uint16_t> K_bits, std::size_t T,
                  std::span<const std::int64_t> positions, std::span<const std::uint8_t> cand, std::span<float> I) {
  const ModelConfig& c = ctx.cfg;
  const std::size_t S = positions.size();
  const auto nh = static_cast<std::size_t>(c.index_n_heads), hd = static_cast<std::size_t>(c.index_head_dim);
  if (I.size() != S * T) fail("index_scores: out has {} elements, expected {}x{}", I.size(), S, T);
  ScratchFrame frame;
  const std::span<float> q = frame.zeros<float>(S * nh * hd);
  kernels::linear(qr, S, w.idx_wq_b, q, ctx.lin());
  kernels::apply_rope(q, nh, hd, *w.rope, positions);
  fp4_e8m0_qdq_inplace(q);
  const auto mult = static_cast<float>(std::pow(static_cast<double>(hd), -0.5) *
                                       std::pow(static_cast<double>(nh), -0.5));
  const std::span<float> wts = frame.zeros<float>(S * nh);
  kernels::linear(x, S, w.idx_weights_proj, wts, ctx.lin());
  for (float& v : wts) v = round_bf16(kernels::mul32(v, mult));
  if (T == 0) return;
  if (!cand.empty() && cand.size() != S * T) fail("index_scores: candidate mask of {} for {}x{}", cand.size(), S, T);
  if (K_bits.size() < T * hd) fail("index_scores: {} key elements for {}x{}", K_bits.size(), T, hd);
  if (ctx.opt.numerics == kernels::Numerics::kFast) {
    const std::span<std::int64_t> vis = frame.uninit<std::int64_t>(S);
    for (std::size_t s = 0; s < S; ++s) vis[s] = (positions[s] + 1) / w.role->ratio;
    kernels::index_scores_fast(q, wts, K_bits, vis, cand, {S, nh, hd, T}, I, ctx.pool);
    return;
  }
  const std::span<float> K = frame.uninit<float>(T * hd);  // the strict dot takes fp32 rows
  unpack_bf16(K_bits.data(), T * hd, K.data());
  const float neg_inf = -std::numeric_limits<float>::infinity();
  auto rows = [&](std::size_t s0, std::size_t s1) {
    ScratchFrame rf;  // this worker's own arena
    const std::span<float> z = rf.zeros<float>(nh);
    for (std::size_t s = s0; s < s1; ++s) {
      const std::int64_t cs = (positions[s] + 1) / w.role->ratio;  // visible rows
      for (std::size_t t = 0; t < T; ++t) {
        if (static_cast<std::int64_t>(t) >= cs || (!cand.empty() && !cand[s * T + t])) {
          I[s * T + t] = neg_inf;  // step 6 (the score itself is never used)
          continue;
        }
        for (std::size_t h = 0; h < nh; ++h) {
          const float score = round_bf16(kernels::strict_dot(
              std::span<const float>(q.data() + (s * nh + h) * hd, hd), K.subspan(t * hd, hd)));
          const float relu = score > 0.0f ? score : 0.0f;
          z[h] = round_bf16(kernels::mul32(relu, wts[s * nh + h]));
        }
        I[s * T + t] = round_bf16(kernels::strict_sum(z));
      }
    }
  };
  parallel_for(ctx.pool, S, rows);
}

void select_topk(std::span<const float> I, std::size_t S, std::size_t T, std::span<const std::int64_t> visible,
                 std::int64_t index_topk, bool compact, std::size_t* k_out, std::vector<std::int64_t>& sel,
                 ThreadPool* pool) {
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(index_topk), T);
  *k_out = k;
  // k grows with the context up to index_topk: reserve that bound once (no reallocation later).
  sel.reserve(S * static_cast<std::size_t>(std::max<std::int64_t>(index_topk, 0)));
  sel.assign(S * k, -1);
  if (k == 0) return;
  ScratchFrame frame;
  const std::span<std::int64_t> order = frame.zeros<std::int64_t>(S * k);
  kernels::topk_lowest_index(I, S, T, k, order, pool);
  for (std::size_t s = 0; s < S; ++s) {
    std::int64_t* row = order.data() + s * k;
    // Descending value, ties by ascending index: in compact mode the first min(topk, c_s) are
    // the top of the visible rows (an invisible row is −inf and has a higher index than any
    // visible one, so it never outranks one).
    const std::size_t keep =
        compact ? std::min<std::size_t>(k, static_cast<std::size_t>(std::max<std::int64_t>(visible[s], 0))) : k;
    std::sort(row, row + keep);
    for (std::size_t i = 0; i < keep; ++i) sel[s * k + i] = (row[i] < visible[s]) ? row[i] : -1;
  }
}

}  // namespace dsv4
