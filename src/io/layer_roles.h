#pragma once
// What each layer does and whom it serves (spec §1.3, §6.5–6.7).
//
// The reference resolves sources implicitly: layers run in order and each source overwrites one
// shared slot that every later layer reads (§6.6). Here the same resolution is made explicit per
// layer, from the config, so that the manifest, the memory plan, `dsv4 inspect` and the forward
// pass's hand-off object all agree on it.
#include <cstdint>
#include <string>
#include <vector>

namespace dsv4 {

struct ModelConfig;

struct LayerRole {
  std::int64_t id = 0;
  bool is_mtp = false;           // a DSpark stage (layer id >= n_layers)
  std::int64_t mtp_stage = -1;   // 0, 1, 2 for the stages
  std::int64_t ratio = 0;        // compress ratio; 0 = window only
  bool kv_source = false;        // owns a compressor; publishes compressed KV rows
  bool index_source = false;     // owns an indexer's query side; publishes top-k positions
  bool owns_index_keys = false;  // owns indexer.wk / k_norm and the index-key cache (= kv_source)
  bool candidate_source = false; // publishes candidate blocks (layer 20)
  bool uses_candidates = false;  // re-indexing layer: its top-k is masked by the candidates
  std::int64_t kv_from = -1;        // layer whose compressed rows it attends (-1: none)
  std::int64_t topk_from = -1;      // layer whose top-k positions it attends (-1: none)
  std::int64_t index_keys_from = -1;  // for index sources: whose index keys it scores
  std::int64_t engram_index = -1;   // position in engram_layer_ids, -1 if no Engram before the block
  bool dspark_target = false;       // its input hidden is captured for DSpark (spec §4 step 7b)
  bool yarn = false;                // RoPE base compress_rope_theta with YaRN, else rope_theta plain
  double rope_base = 0;

  // "window", "kv+index source", "kv+index+candidate source", "re-index", "reuse", "dspark".
  std::string kind() const;
  // The name prefix of its tensors: "layers.L." or "mtp.S.".
  std::string prefix() const;
};

// One role per layer, backbone layers first, then the DSpark stages. The config must be valid.
std::vector<LayerRole> layer_roles(const ModelConfig& c);

}  // namespace dsv4
