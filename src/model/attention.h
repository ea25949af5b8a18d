#pragma once
// Attention of one backbone layer for one sequence (spec §6): queries, the window ring (§6.2),
// the compressed part with the compressor and indexer (§6.3–6.8), the hand-off between source and
// consumer layers (§6.5, §6.6), sparse attention with the sink (§2.9), inverse RoPE and the
// grouped low-rank output projection (§6.1 step 7).
//
// Slot lists (§16.4): compact (default) lists a query's visible window positions ascending, then
// its selected compressed rows ascending, no holes, so every per-query quantity depends only on
// positions ≤ p and prefill ≡ decode ≡ any chunking. reference reproduces the reference's
// per-mode lists (a prefill at 0 or decode only).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/forward_context.h"
#include "model/layer_weights.h"
#include "model/sequence_state.h"

namespace dsv4 {

// §6.1 for one sequence: x [S, dim] = attn_norm's output; out [S, dim] (bf16 values).
void attention_forward(const ForwardContext& ctx, const LayerWeights& w, SequenceState& seq,
                       Handoff& hand, std::span<const float> x, std::size_t S,
                       std::int64_t start_pos, std::span<float> out, std::string_view tag);

// §6.1 step 7: o [S, H, D] → wo_b(flatten_g(bf16(o_g · wo_a_gᵀ))) → out [S, dim].
void output_projection(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> o,
                       std::size_t S, std::span<float> out);

// The query and window-KV projections shared with DSpark (§6.1 step 2, §6.2 step 1):
// qr = q_norm(wq_a(x)) [S, q_lora_rank]; q = rope(wq_b(qr)) [S, H, D];
// kv = FP8-QDQ(rope(kv_norm(wkv(x)))) [S, D]. The caller sizes the outputs.
void project_q(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> x,
               std::size_t S, std::span<const std::int64_t> positions, std::span<float> qr,
               std::span<float> q);
void project_window_kv(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> x, std::size_t S,
                       std::span<const std::int64_t> positions, std::span<float> kv);
// Stores fp32 values that are bf16 values as a cache's bf16 bits; a value that is not one is a
// bug upstream, reported naming `what` rather than rounded away.
void pack_bf16_rows(std::span<const float> src, std::uint16_t* dst, const char* what);
// Writes rows [S, D] for positions into the ring (only the last W matter).
void ring_write(LayerCache& cache, std::span<const float> kv, std::span<const std::int64_t> positions,
                std::size_t W, std::size_t D);

}  // namespace dsv4
