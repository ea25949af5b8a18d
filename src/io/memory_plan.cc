#include "io/memory_plan.h"

#include <algorithm>

#include "io/config.h"

namespace dsv4 {

MemoryPlan plan_memory(const ModelConfig& c, const Manifest& m, const std::vector<LayerRole>& roles,
                       std::int64_t ctx, std::int64_t batch) {
  MemoryPlan p;
  p.ctx = ctx;
  p.batch = batch;

  // --- weights ---
  std::vector<std::uint64_t> expert_bytes(roles.size(), 0);  // all routed experts of a layer
  for (const TensorSpec& t : m.tensors) {
    const std::uint64_t b = t.bytes();
    p.total_weights += b;
    const bool mtp = t.layer >= 0 && roles[t.layer].is_mtp;
    if (t.component == Component::Vision || t.component == Component::ImageDelims) {
      p.vision += b;
    } else if (t.component == Component::EngramTable) {
      p.engram_tables += b;
    } else if (t.component == Component::EngramDense) {
      p.engram_dense += b;
    } else if (mtp) {
      p.dspark += b;
    } else if (t.component == Component::RoutedExperts) {
      p.routed_experts += b;
    } else {
      p.dense += b;
    }
    if (t.component == Component::RoutedExperts) expert_bytes[t.layer] += b;
    // Per decoded token every dense backbone tensor is read once; the embedding only one row.
    if (!mtp && t.component != Component::RoutedExperts && t.component != Component::EngramTable &&
        t.component != Component::Vision && t.component != Component::ImageDelims && t.component != Component::Embed)
      p.decode_weight_bytes += b;
  }
  const std::int64_t hd = c.head_dim, ihd = c.index_head_dim;
  p.decode_weight_bytes += static_cast<std::uint64_t>(c.dim) * 2;  // one embedding row (bf16)
  const std::int64_t hash_cols = (c.engram_max_ngram_size - 1) * c.engram_n_heads;
  for (const LayerRole& r : roles) {
    if (r.is_mtp) continue;
    if (c.n_routed_experts > 0)
      p.decode_weight_bytes += expert_bytes[r.id] / c.n_routed_experts * c.n_activated_experts;
    if (r.engram_index >= 0)  // 24 rows of E4M3 plus their E8M0 scales
      p.decode_weight_bytes += static_cast<std::uint64_t>(hash_cols) * (c.engram_head_dim + c.engram_head_dim / 32);
  }

  // --- per-sequence state (spec §14) ---
  for (const LayerRole& r : roles) {
    p.state.push_back({r.id, "window ring", "bf16", hd, 2, c.window_size, 0});
    if (r.kv_source) {
      p.state.push_back({r.id, "compressed KV rows", "bf16", hd, 2, 0, r.ratio});
      p.state.push_back({r.id, "index keys", "bf16", ihd, 2, 0, r.ratio});
      if (r.ratio > 1) {
        p.state.push_back({r.id, "compressor kv tail", "fp32", hd, 4, r.ratio, 0});
        p.state.push_back({r.id, "compressor score tail", "fp32", hd, 4, r.ratio, 0});
      }
    }
  }
  if (c.has_engram()) p.state.push_back({-1, "engram hash history", "int64", 1, 8, 0, 1});
  for (const StateBuffer& s : p.state) {
    p.state_fixed_bytes += s.fixed_rows * s.row_elems * s.elem_bytes;
    p.state_bytes_per_sequence += s.bytes(ctx);
  }
  // Growth per token: a ratio-r buffer grows by one row every r tokens.
  for (const StateBuffer& s : p.state)
    if (s.rows_per_ratio > 0) p.state_bytes_per_token += s.row_elems * s.elem_bytes / s.rows_per_ratio;
  p.state_bytes_total = p.state_bytes_per_sequence * batch;

  // --- cache read by one decode step at full context ---
  for (const LayerRole& r : roles) {
    if (r.is_mtp) continue;
    p.decode_cache_bytes += static_cast<std::uint64_t>(std::min(ctx, c.window_size)) * hd * 2;
    if (r.ratio > 0) {
      const std::int64_t n_cmp = ctx / r.ratio;
      p.decode_cache_bytes += static_cast<std::uint64_t>(std::min(n_cmp, c.index_topk)) * hd * 2;
      if (r.index_source) {
        // Re-indexing layers score only inside the candidate blocks.
        std::int64_t scored = n_cmp;
        if (r.uses_candidates) scored = std::min(n_cmp, c.candidate_topk_blocks * c.candidate_block_size);
        p.decode_cache_bytes += static_cast<std::uint64_t>(scored) * ihd * 2;
      }
    }
  }
  return p;
}

}  // namespace dsv4
