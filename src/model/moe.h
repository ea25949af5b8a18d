#pragma once
// The mixture of experts (spec §7): the gate with its selection bias, routed experts (FP4, or FP8
// with expert_dtype null) and the FP8 shared expert, each a SwiGLU with both clamps.
//
// Op splits (the oracle's ops.gate / expert / moe, each op rounded once):
//   gate:   logits = fp32(x·Wᵀ) / gate_temp; s = sqrt(softplus(logits)); idx = top-k of fp32(s + b)
//           (b = bias, bias_vl for image tokens; ties by lowest index, descending score);
//           wts = s[idx]; k > 1: wts = fp32(wts / fp32(Σ wts + 1e−20)); wts = fp32(wts · route_scale)
//   expert: g = w1(x), u = w3(x); u = clamp(u, ±limit), g = min(g, limit); h = fp32(silu(g) · u);
//           h = fp32(weight · h); out = w2(bf16(h))
//   moe:    y = 0; for each expert in increasing index, y[t] = fp32(y[t] + expert(x[t])) for its
//           tokens; y = fp32(y + shared(x)); bf16(y)
// Tokens are grouped per expert, so an expert's weights are read once per call whatever the
// batch; every token's arithmetic is the same as if it were alone.
#include <cstdint>
#include <span>
#include <vector>

#include "model/forward_context.h"
#include "model/layer_weights.h"

namespace dsv4 {

// x [N, dim] bf16 values; image [N] (1 = image token) or empty; out [N, dim].
// idx_out / wts_out [N, k] when non-null.
void moe_forward(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> x,
                 std::size_t N, std::span<const std::uint8_t> image, std::span<float> out,
                 std::vector<std::int64_t>* idx_out = nullptr, std::vector<float>* wts_out = nullptr);

}  // namespace dsv4
