#pragma once
// All the state of one sequence (spec §14), sized by the sequence's own context, so that one
// batch can hold sequences at different positions and a sequence can be reset and reused.
//
// The caches a decode step reads (window ring, compressed rows, index keys) hold bf16 values
// (already FP8/FP4-representable) and store them as bf16 bit patterns: half the bytes of fp32,
// and the same values (§14). The compressor's open-group tails are fp32, as in the reference.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsv4 {

struct ModelConfig;
struct LayerRole;

// One layer's caches: the window ring (every layer), for kv sources the compressed rows and the
// index keys, for ratio ≥ 2 compressors the carried tail of the open group.
struct LayerCache {
  std::vector<std::uint16_t> win_kv;  // [W, head_dim] bf16 bits; slot = position mod W
  std::vector<std::int64_t> win_pos;  // [W]: the position each slot holds, −1 empty
  std::vector<std::uint16_t> cmp_kv;  // [max_len / r + 1, head_dim] bf16 bits: row j = group j (rotated, FP4 QDQ)
  std::vector<std::uint16_t> idx_k;   // [max_len / r + 1, index_head_dim] bf16 bits: index keys of the groups
  std::vector<float> kv_state;      // [r, head_dim] fp32: the open group's kv (slot = pos mod r)
  std::vector<float> score_state;   // [r, head_dim] fp32: its gate scores (init −inf)
};

// What the source layers publish during ONE call of one sequence, indexed by layer id (§6.6
// made explicit: no globals; the reference's shared slots, one per kind, overwritten in layer
// order, resolve to exactly these producers). It lives in the sequence so that its vectors keep
// their capacity from one decode step to the next.
struct Handoff {
  // Forgets the previous call's contents, keeping the buffers.
  void reset(std::size_t n_layers) {
    ran.assign(n_layers, 0);
    n_cmp.assign(n_layers, 0);
    topk_k.assign(n_layers, 0);
    topk.resize(n_layers);
    cand.resize(n_layers);
    for (auto& t : topk) t.clear();
    for (auto& m : cand) m.clear();
  }
  std::vector<std::uint8_t> ran;                 // the layer ran its compressed part this call
  std::vector<std::size_t> n_cmp;                // rows [0, n_cmp) of its caches are valid
  std::vector<std::vector<std::int64_t>> topk;   // [S, k] rows per query, −1 padding at the end
  std::vector<std::size_t> topk_k;
  std::vector<std::vector<std::uint8_t>> cand;   // [S, T] candidate positions (§6.8)
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
  // The current call's hand-offs between layers (reset at the start of every call).
  Handoff handoff;
  void advance(std::size_t n) { pos_ += static_cast<std::int64_t>(n); }

 private:
  std::size_t max_len_ = 0;
  std::int64_t pos_ = 0;
};

}  // namespace dsv4
