#include "io/layer_roles.h"

#include <algorithm>

#include <fmt/format.h>

#include "io/config.h"

namespace dsv4 {

std::string LayerRole::kind() const {
  if (is_mtp) return "dspark";
  if (ratio == 0) return "window";
  if (candidate_source) return "kv+index+candidate source";
  if (kv_source) return "kv+index source";
  if (index_source) return "re-index";
  return "reuse";
}

std::string LayerRole::prefix() const {
  return is_mtp ? fmt::format("mtp.{}.", mtp_stage) : fmt::format("layers.{}.", id);
}

std::vector<LayerRole> layer_roles(const ModelConfig& c) {
  auto has = [](const std::vector<std::int64_t>& l, std::int64_t x) {
    return std::find(l.begin(), l.end(), x) != l.end();
  };
  std::vector<LayerRole> roles;
  std::int64_t cur_kv = -1, cur_topk = -1, cand_kv = -1;
  for (std::int64_t i = 0; i < c.total_layers(); ++i) {
    LayerRole r;
    r.id = i;
    r.is_mtp = i >= c.n_layers;
    r.mtp_stage = r.is_mtp ? i - c.n_layers : -1;
    r.ratio = i < static_cast<std::int64_t>(c.compress_ratios.size()) ? c.compress_ratios[i] : 0;
    r.yarn = r.ratio > 0;
    r.rope_base = r.ratio > 0 ? c.compress_rope_theta : c.rope_theta;
    if (!r.is_mtp) {
      r.kv_source = r.ratio > 0 && has(c.kv_source_layers, i);
      r.index_source = r.ratio > 0 && has(c.index_source_layers, i);
      r.owns_index_keys = r.kv_source;
      r.candidate_source = i == c.candidate_source_layer;
      r.engram_index = -1;
      for (std::size_t e = 0; e < c.engram_layer_ids.size(); ++e)
        if (c.engram_layer_ids[e] == i) r.engram_index = static_cast<std::int64_t>(e);
      r.dspark_target = c.n_mtp_layers > 0 && has(c.dspark_target_layer_ids, i);
      if (r.kv_source) {
        cur_kv = i;
        cur_topk = -1;  // a new run of compressed rows: earlier top-k indices no longer apply
      }
      if (r.ratio > 0) {
        r.kv_from = cur_kv;
        if (r.index_source) cur_topk = i;
        r.topk_from = cur_topk;
        // Own keys for kv sources; otherwise the keys of the kv source whose rows it indexes.
        if (r.index_source) r.index_keys_from = r.owns_index_keys ? i : cur_kv;
        if (r.candidate_source) cand_kv = cur_kv;
        r.uses_candidates = r.index_source && !r.kv_source && c.candidate_source_layer >= 0 &&
                            i > c.candidate_source_layer && cur_kv == cand_kv;
      }
    }
    roles.push_back(r);
  }
  return roles;
}

}  // namespace dsv4
