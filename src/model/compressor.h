#pragma once
// The compressor of a kv-source layer (spec §6.4), generalised to calls at any start_pos.
//
// Group j covers positions j·r .. j·r + r − 1 and completes when its last position is processed.
// A call over start_pos .. start_pos + S − 1 completes groups start_pos / r .. (start_pos + S) /
// r − 1; a group begun in an earlier call takes its first tokens from the carried tail
// (kv_state / score_state, slot = position mod r), so a group's latent is the same whatever the
// chunking (prefill ≡ decode ≡ chunked).
#include <cstdint>
#include <span>
#include <vector>

#include "model/forward_context.h"
#include "model/layer_weights.h"
#include "model/sequence_state.h"

namespace dsv4 {

struct CompressorOutput {
  std::vector<float> latent;  // [groups, head_dim] bf16 values, UN-rotated (the indexer reads it so)
  std::size_t groups = 0;
  std::int64_t first_group = 0;
};

// x: the attention input [S, dim] (attn_norm's output). Updates the tail in `cache`.
//   ratio 1: latent = norm(bf16 linear wkv(x)) per token.
//   ratio r ≥ 2: kv = x·wkvᵀ, sc = x·wgateᵀ (fp32 linears on the promoted bf16 weights); per
//   completed group and per dimension w = softmax over its r tokens of sc (one double
//   evaluation, rounded once), pooled = exact Σ_tokens fp32(kv·w) rounded once (the reference's
//   `(kv * w).sum(dim)`), latent = norm(bf16(pooled)).
// `out` is overwritten (its buffer is reused from call to call).
void compress(const ForwardContext& ctx, const LayerWeights& w, LayerCache& cache, std::span<const float> x,
              std::size_t S, std::int64_t start_pos, CompressorOutput& out);

}  // namespace dsv4
