#include "io/param_count.h"

#include <fmt/format.h>

#include "io/config.h"

namespace dsv4 {

ParamCount count_params(const ModelConfig& c, const Manifest& m, const std::vector<LayerRole>& roles) {
  ParamCount pc;
  pc.layers.resize(roles.size());
  for (std::size_t i = 0; i < roles.size(); ++i) pc.layers[i].layer = roles[i].id;

  const std::int64_t hash_cols = (c.engram_max_ngram_size - 1) * c.engram_n_heads;
  for (const TensorSpec& t : m.tensors) {
    const std::int64_t p = t.params();
    pc.by_component[t.component] += p;
    pc.total += p;
    switch (t.component) {
      case Component::Embed: pc.embed += p; continue;
      case Component::Head: pc.head += p; continue;
      case Component::FinalNorm: pc.final_norm += p; continue;
      case Component::Vision: pc.vision += p; continue;
      case Component::ImageDelims: pc.image_delims += p; continue;
      default: break;
    }
    if (t.layer < 0) continue;
    LayerParams& lp = pc.layers[t.layer];
    if (t.component == Component::EngramTable || t.component == Component::EngramDense) {
      lp.engram_params += p;
      pc.engram += p;
      if (t.component == Component::EngramTable) {
        pc.engram_tables += p;
        // One row per hash column is read per token.
        if (!t.is_scale) lp.activated += hash_cols * t.shape[1];
      } else {
        lp.activated += p;
      }
      continue;
    }
    lp.params += p;
    lp.by_component[t.component] += p;
    if (roles[t.layer].is_mtp) pc.dspark += p;
    if (t.component != Component::RoutedExperts) lp.activated += p;
  }
  // Routed experts: k of n per token, every expert the same size.
  for (std::size_t i = 0; i < roles.size(); ++i) {
    LayerParams& lp = pc.layers[i];
    const std::int64_t n = roles[i].is_mtp ? c.dspark_n_routed_experts : c.n_routed_experts;
    const std::int64_t k = roles[i].is_mtp ? c.dspark_n_activated_experts : c.n_activated_experts;
    auto it = lp.by_component.find(Component::RoutedExperts);
    if (it != lp.by_component.end() && n > 0) lp.activated += it->second / n * k;
    if (!roles[i].is_mtp) {
      pc.backbone_layers += lp.params;
      pc.activated_backbone += lp.activated;
    }
  }
  pc.activated_total = pc.activated_backbone + pc.head + c.dim;

  // Groups: a window-only layer stands alone; an index source opens a group that the layers
  // reusing its top-k join.
  for (const LayerRole& r : roles) {
    if (r.is_mtp) continue;
    bool opens = r.ratio == 0 || r.index_source || pc.groups.empty() ||
                 roles[pc.groups.back().layers.front()].ratio == 0;
    if (opens) pc.groups.push_back({});
    pc.groups.back().layers.push_back(r.id);
    pc.groups.back().params += pc.layers[r.id].params;
  }
  for (LayerGroup& g : pc.groups) {
    std::vector<std::pair<std::string, int>> parts;
    for (std::int64_t l : g.layers) {
      std::string k = roles[l].kind();
      if (!parts.empty() && parts.back().first == k) parts.back().second++;
      else parts.push_back({k, 1});
    }
    std::vector<std::string> s;
    for (auto& [k, n] : parts) s.push_back(fmt::format("{} {}", n, k));
    g.composition = fmt::format("{}", fmt::join(s, " + "));
  }
  for (const LayerGroup& g : pc.groups) {
    if (!pc.group_runs.empty() && pc.group_runs.back().composition == g.composition &&
        pc.group_runs.back().params_per_group == g.params) {
      pc.group_runs.back().count++;
      pc.group_runs.back().last_layer = g.layers.back();
    } else {
      pc.group_runs.push_back({g.layers.front(), g.layers.back(), 1, g.composition, g.params});
    }
  }
  return pc;
}

}  // namespace dsv4
