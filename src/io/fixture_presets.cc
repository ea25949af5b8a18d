// The named fixture configurations (see fixture.h for what each is for).
#include <fmt/format.h>

#include "io/engram_layout.h"
#include "io/fixture.h"
#include "util/error.h"

namespace dsv4 {
namespace {

// Engram table sizes follow from engram_vocab_size through the prime search (spec §8.1).
void derive_engram_rows(ModelConfig& c) {
  c.engram_num_embeddings.clear();
  for (const auto& l : engram_layout(c).layers) c.engram_num_embeddings.push_back(l.rows);
}

ModelConfig tiny() {
  ModelConfig c;
  c.source = "preset tiny";
  c.vocab_size = 129280;
  c.dim = 256;
  c.moe_inter_dim = 128;
  c.n_layers = 12;
  c.n_mtp_layers = 3;
  c.n_heads = 4;
  c.head_dim = 128;
  c.rope_head_dim = 32;
  c.q_lora_rank = 128;
  c.o_groups = 2;
  c.o_lora_rank = 128;
  c.window_size = 32;
  // Layers: 0 window, 1 window + Engram, 2 kv+index (ratio 2), 3 reuse, 4 kv+index + Engram,
  // 5 reuse, 6 kv+index+candidate (ratio 1), 7 reuse, 8 re-index, 9 reuse, 10 re-index, 11 reuse.
  c.compress_ratios = {0, 0, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  c.kv_source_layers = {2, 4, 6};
  c.index_source_layers = {2, 4, 6, 8, 10};
  c.candidate_source_layer = 6;
  c.candidate_topk_blocks = 12;
  c.candidate_block_size = 4;
  c.index_n_heads = 4;
  c.index_head_dim = 64;
  c.index_topk = 40;
  c.n_routed_experts = 8;
  c.n_activated_experts = 2;
  c.n_shared_experts = 1;
  c.dspark_target_layer_ids = {9, 10, 11};
  c.dspark_markov_rank = 32;
  c.dspark_n_routed_experts = 4;
  c.dspark_n_activated_experts = 2;
  c.engram_layer_ids = {1, 4};
  c.engram_vocab_size = 1000;
  c.engram_n_heads = 2;
  c.engram_head_dim = 32;
  c.vision_n_layers = 2;
  c.vision_dim = 64;
  c.vision_n_heads = 4;
  c.vision_inter_dim = 128;
  c.vision_max_n_token = 64;
  c.vision_min_pixels = 7056;  // 84 × 84: a 2 × 2 grid of merged tokens
  derive_engram_rows(c);
  return c;
}

ModelConfig wide() {
  ModelConfig c;  // the released widths
  c.source = "preset wide";
  c.n_layers = 6;
  c.n_mtp_layers = 1;
  c.compress_ratios = {0, 0, 2, 2, 1, 1, 0};
  c.kv_source_layers = {2, 4};
  c.index_source_layers = {2, 4, 5};
  c.candidate_source_layer = 4;
  c.n_routed_experts = 16;
  c.n_activated_experts = 6;
  c.dspark_target_layer_ids = {3, 4, 5};
  c.dspark_n_routed_experts = 8;
  c.dspark_n_activated_experts = 3;
  c.engram_layer_ids = {1};
  c.engram_vocab_size = 50000;
  c.vision_n_layers = 2;
  derive_engram_rows(c);
  return c;
}

// Long contexts at the released attention geometry per head: head_dim 512, window 128, index keys
// of 128, index top-k 512, a candidate budget of 2048 blocks of 8 (so contexts past 16K make the
// re-indexing layer's bound matter), the released 32 index heads (so the indexer's work per key
// is the real one, and its kernel runs at the width it is built for: 16 heads per vector),
// 8 attention heads instead of 64 and a narrow residual so a 32K prefill runs in minutes on 2
// cores. One layer of each context-dependent role: window-only,
// ratio-2 kv+index source, ratio-1 kv+index+candidate source, ratio-1 candidate user.
ModelConfig long_context() {
  ModelConfig c;
  c.source = "preset long";
  c.dim = 1024;
  c.moe_inter_dim = 256;
  c.n_layers = 4;
  c.n_mtp_layers = 1;
  c.n_heads = 8;
  c.q_lora_rank = 256;
  c.o_groups = 2;
  c.o_lora_rank = 256;
  c.compress_ratios = {0, 2, 1, 1, 0};
  c.kv_source_layers = {1, 2};
  c.index_source_layers = {1, 2, 3};
  c.candidate_source_layer = 2;
  c.index_n_heads = 32;
  c.n_routed_experts = 8;
  c.n_activated_experts = 2;
  c.dspark_target_layer_ids = {1, 2, 3};
  c.dspark_markov_rank = 32;
  c.dspark_n_routed_experts = 4;
  c.dspark_n_activated_experts = 2;
  c.engram_layer_ids = {};
  c.engram_num_embeddings = {};
  c.vision_n_layers = 0;
  c.max_seq_len = 40960;  // 32K prompts plus generation
  return c;
}

}  // namespace

std::vector<std::string> fixture_preset_names() { return {"tiny", "wide", "long"}; }

ModelConfig fixture_preset(std::string_view name) {
  ModelConfig c;
  if (name == "tiny") c = tiny();
  else if (name == "wide") c = wide();
  else if (name == "long") c = long_context();
  else fail("unknown preset '{}' (known: {})", name, fmt::join(fixture_preset_names(), ", "));
  c.validate();
  return c;
}

}  // namespace dsv4
