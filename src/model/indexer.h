#pragma once
// The indexer (spec §6.7) and the two-level candidate selection (§6.8): which compressed rows
// each query attends. Works on absolute positions: a query at position p sees rows
// j < c_p = (p + 1) / r, so a prefill, a decode step and a chunk give the same selection.
#include <cstdint>
#include <span>
#include <vector>

#include "model/forward_context.h"
#include "model/layer_weights.h"

namespace dsv4 {

// §6.7 step 1: index keys of the UN-rotated latents of groups first_group .. first_group + G − 1:
// k = k_norm(wk(latent)) (bf16 linear, RMSNorm), rotated at the group positions j·r, FP4 QDQ
// (E8M0, block 32), written to k [G, index_head_dim].
void index_keys(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> latent, std::size_t G,
                std::int64_t first_group, std::span<float> k);

// §6.7 steps 2–6: I [S, T] bf16 scores of queries at `positions` against keys K [T, hd], with
// rows j ≥ c_s masked to −inf (K_bits: the index-key cache, bf16 bit patterns). x: the attention input [S, dim]; qr: q_norm(wq_a(x)) [S, q_lora].
//   q = FP4-QDQ(rope(wq_b(qr)));  w = bf16(bf16(weights_proj(x)) · fp32(hd^−½·nh^−½));
//   score = bf16(Σ_d q·K); z = bf16(relu(score) · w); I = bf16(Σ_h z).
// cand (empty or [S, T]): rows whose flag is 0 are −inf without being scored (§6.7 step 7 —
// what bounds a candidate user's work by the candidate budget). Strict numerics: exact dots and
// sums as the reference; fast: kernels::index_scores_fast (its fixed fp32 order). Written to I.
void index_scores(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> x,
                  std::span<const float> qr, std::span<const std::uint16_t> K_bits, std::size_t T,
                  std::span<const std::int64_t> positions, std::span<const std::uint8_t> cand, std::span<float> I);

// §6.7 step 8: the chosen rows per query, ascending, [S, k] with −1 padding at the end,
// k = min(index_topk, T). compact (§16.4): the top min(index_topk, c_s) of the visible rows;
// reference: top-k over the whole row, rows ≥ c_s become −1. Ties by lowest index. Written
// to `sel` (its buffer is reused from call to call).
void select_topk(std::span<const float> I, std::size_t S, std::size_t T, std::span<const std::int64_t> visible,
                 std::int64_t index_topk, bool compact, std::size_t* k_out, std::vector<std::int64_t>& sel,
                 ThreadPool* pool = nullptr);

}  // namespace dsv4
