#pragma once
// All the state of one sequence (spec §14), sized by the sequence's own context, so that one
// batch can hold sequences at different positions and a sequence can be reset and reused.
//
// Values are kept as fp32 holding bf16 (already FP8/FP4-representable) values; a packed store is
// a later memory optimisation that cannot change results (§14).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsv4 {

struct ModelConfig;
struct LayerRole;

// One layer's caches: the window ring (every layer), for kv sources the compressed rows and the
// index keys, for ratio ≥ 2 compressors the carried tail of the open group.
struct LayerCache {
  std::vector<float> win_kv;        // [W, head_dim]; slot = position mod W
  std::vector<std::int64_t> win_pos;  // [W]: the position each slot holds, −1 empty
  std::vector<float> cmp_kv;        // [max_len / r + 1, head_dim]: row j = group j (rotated, FP4 QDQ)
  std::vector<float> idx_k;         // [max_len / r + 1, index_head_dim]: index keys of the groups
  std::vector<float> kv_state;      // [r, head_dim] fp32: the open group's kv (slot = pos mod r)
  std::vector<float> score_state;   // [r, head_dim] fp32: its gate scores (init −inf)
};

class SequenceState {
 public:
  SequenceState(const ModelConfig& c, const std::vector<LayerRole>& roles, std::size_t max_len);

  // Positions processed so far: the start_pos of the next call.
  std::int64_t pos() const { return pos_; }
  std::size_t max_len() const { return max_len_; }
  // Forgets everything; the sequence starts again at position 0 (buffers are kept).
  void reset();

  // --- used by the model ---
  std::vector<LayerCache> layers;   // per backbone layer
  std::vector<LayerCache> dspark;   // per DSpark stage (window ring only)
  std::vector<std::int64_t> engram_ids;  // compressed id of every position so far (−1: image)
  // index_keys = reference (§16.2): the layer whose key cache the shared index_k slot views.
  std::int64_t shared_index_k = -1;
  // The DSpark target hiddens of the last call: [rows, n_targets · dim] bf16 values.
  std::vector<float> main_hidden;
  std::size_t main_hidden_rows = 0;
  void advance(std::size_t n) { pos_ += static_cast<std::int64_t>(n); }

 private:
  std::size_t max_len_ = 0;
  std::int64_t pos_ = 0;
};

}  // namespace dsv4
