#pragma once
// The model configuration: one struct for both files a DeepSeek V4.1 release carries.
//
// * `inference/config.json` — the flat file the reference model.py reads (spec §1.1). Its key
//   names are the field names below. Absent keys take the released values (spec §1.1); the
//   ModelArgs fields that the release never writes keep the reference's code defaults
//   (max_batch_size 4, max_seq_len 4096, gate_temp 1, norm_topk_prob true, temperature 1).
// * the Hugging Face root `config.json` (transformers style: `text_config`, `vision_config`,
//   `quantization_config`). Its text keys are read under their inference names first and then
//   under the usual transformers aliases (hidden_size, num_hidden_layers, ...). Those aliases are
//   NOT verified against the release (spec §1.1 marks that file [3P]); the inference file wins
//   whenever both exist (see load_model_config_dir).
//
// validate() checks every invariant the rest of the engine relies on and names the field and the
// rule of each violation.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dsv4 {

struct ModelConfig {
  // --- backbone (spec §1.1) ---
  std::int64_t vocab_size = 129280;
  std::int64_t dim = 5120;
  std::int64_t moe_inter_dim = 2304;
  std::int64_t n_layers = 40;
  std::int64_t n_mtp_layers = 3;
  std::int64_t n_heads = 64;
  std::int64_t n_routed_experts = 384;
  std::int64_t n_shared_experts = 1;
  std::int64_t n_activated_experts = 6;
  std::string score_func = "sqrtsoftplus";
  double route_scale = 1.5;
  double swiglu_limit = 10.0;
  std::int64_t q_lora_rank = 1280;
  std::int64_t head_dim = 512;
  std::int64_t rope_head_dim = 64;
  double norm_eps = 1e-20;
  std::int64_t o_groups = 8;
  std::int64_t o_lora_rank = 1024;
  std::int64_t window_size = 128;
  std::vector<std::int64_t> kv_source_layers = {2, 8, 14, 20};
  std::vector<std::int64_t> index_source_layers = {2, 8, 14, 20, 24, 28, 32, 36};
  std::int64_t original_seq_len = 65536;
  double rope_theta = 10000;
  double rope_factor = 16;
  double beta_fast = 32;
  double beta_slow = 1;
  std::int64_t index_n_heads = 32;
  std::int64_t index_head_dim = 128;
  std::int64_t index_topk = 512;
  std::int64_t candidate_source_layer = 20;  // -1: no candidate source
  std::int64_t candidate_topk_blocks = 2048;
  std::int64_t candidate_block_size = 8;
  std::int64_t hc_mult = 4;
  std::int64_t hc_sinkhorn_iters = 20;
  double hc_eps = 1e-6;
  double compress_rope_theta = 160000;
  std::vector<std::int64_t> compress_ratios = {0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
                                               2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  std::string dtype = "fp8";
  std::optional<std::string> expert_dtype = "fp4";  // null: FP8 experts (convert --expert-dtype fp8)

  // --- DSpark draft stages (spec §9) ---
  std::int64_t dspark_block_size = 5;
  std::int64_t dspark_noise_token_id = 128799;
  std::vector<std::int64_t> dspark_target_layer_ids = {37, 38, 39};
  std::int64_t dspark_markov_rank = 256;
  std::int64_t dspark_n_routed_experts = 128;
  std::int64_t dspark_n_activated_experts = 3;

  // --- Engram (spec §8) ---
  std::vector<std::int64_t> engram_layer_ids = {1, 14};
  std::int64_t engram_vocab_size = 16000000;
  std::vector<std::int64_t> engram_num_embeddings = {384006168, 384016682};
  std::int64_t engram_max_ngram_size = 4;
  std::int64_t engram_pad_id = 2;
  std::int64_t engram_compressed_vocab_size = 99092;
  std::int64_t engram_n_heads = 8;
  std::int64_t engram_head_dim = 256;

  // --- vision (spec §11); vision_n_layers = 0 means a text-only model ---
  std::int64_t vision_n_layers = 32;
  std::int64_t vision_dim = 1024;
  std::int64_t vision_n_heads = 16;
  std::int64_t vision_inter_dim = 2816;
  std::int64_t vision_patch_size = 14;
  std::int64_t vision_downsample_ratio = 3;
  std::int64_t vision_max_n_token = 1024;
  std::int64_t vision_min_pixels = 295936;
  std::optional<double> vision_max_wh_ratio;  // null in the release
  std::int64_t image_token_id = 129264;
  double vision_rope_theta = 10000;

  // --- ModelArgs code defaults that config.json does not carry (spec §1.1) ---
  std::int64_t max_batch_size = 4;
  std::int64_t max_seq_len = 4096;
  double gate_temp = 1.0;
  bool norm_topk_prob = true;
  double temperature = 1.0;

  // --- from the transformers-style root config only ---
  std::vector<std::int64_t> weight_block_size = {32, 32};
  std::optional<std::int64_t> max_position_embeddings;

  // Where the values came from, and keys that were present but are unknown to this engine
  // (reported by `dsv4 inspect`, never silently dropped).
  std::string source;
  std::vector<std::string> unknown_keys;

  // Backbone layers plus DSpark stages; compress_ratios has exactly this many entries.
  std::int64_t total_layers() const { return n_layers + n_mtp_layers; }
  bool has_engram() const { return !engram_layer_ids.empty(); }
  bool has_vision() const { return vision_n_layers > 0; }
  bool fp4_experts() const { return expert_dtype.has_value() && *expert_dtype == "fp4"; }

  // Every violated invariant, each as "field: rule (value)". Empty when the config is usable.
  std::vector<std::string> violations() const;
  // Throws dsv4::Error listing every violation, prefixed with `source`.
  void validate() const;
};

// Parses the inference-style flat object.
ModelConfig parse_inference_config(const nlohmann::json& j, const std::string& source);
// Parses the transformers-style root object (text_config / vision_config / quantization_config).
ModelConfig parse_hf_config(const nlohmann::json& j, const std::string& source);
// Reads a config file of either style (detected by the presence of "text_config" or
// "model_type"), validates it and returns it.
ModelConfig load_model_config(const std::string& path);
// The config of a model directory: `inference/config.json` if present (exact, what the
// reference reads), else `config.json`.
ModelConfig load_model_config_dir(const std::string& dir);

// The inference-style JSON of a config (every field written, so the file is self-describing).
nlohmann::json config_to_json(const ModelConfig& c);

}  // namespace dsv4
