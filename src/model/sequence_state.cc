// See sequence_state.h.
#include "model/sequence_state.h"

#include <algorithm>
#include <limits>

#include "io/config.h"
#include "io/layer_roles.h"

namespace dsv4 {
namespace {

void init_cache(LayerCache& lc, const ModelConfig& c, const LayerRole& r, std::size_t max_len) {
  const auto W = static_cast<std::size_t>(c.window_size), D = static_cast<std::size_t>(c.head_dim);
  lc.win_kv.assign(W * D, 0);
  lc.win_pos.assign(W, -1);
  if (r.kv_source && !r.is_mtp) {
    const auto ratio = static_cast<std::size_t>(r.ratio);
    const std::size_t cap = max_len / ratio + 1;
    lc.cmp_kv.assign(cap * D, 0);
    lc.idx_k.assign(cap * static_cast<std::size_t>(c.index_head_dim), 0);
    if (ratio >= 2) {
      lc.kv_state.assign(ratio * D, 0.0f);
      lc.score_state.assign(ratio * D, -std::numeric_limits<float>::infinity());
    }
  }
}

}  // namespace

SequenceState::SequenceState(const ModelConfig& c, const std::vector<LayerRole>& roles,
                             std::size_t max_len)
    : max_len_(max_len) {
  for (const LayerRole& r : roles) {
    LayerCache lc;
    init_cache(lc, c, r, max_len);
    (r.is_mtp ? dspark : layers).push_back(std::move(lc));
  }
  engram_ids.reserve(max_len);
}

void SequenceState::reset() {
  for (auto* v : {&layers, &dspark})
    for (LayerCache& lc : *v) {
      std::fill(lc.win_pos.begin(), lc.win_pos.end(), -1);
      std::fill(lc.kv_state.begin(), lc.kv_state.end(), 0.0f);
      std::fill(lc.score_state.begin(), lc.score_state.end(), -std::numeric_limits<float>::infinity());
    }
  engram_ids.clear();
  shared_index_k = -1;
  main_hidden.clear();
  main_hidden_rows = 0;
  pos_ = 0;
}

}  // namespace dsv4
