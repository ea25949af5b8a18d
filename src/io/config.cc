#include "io/config.h"

#include <algorithm>
#include <fstream>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "io/engram_layout.h"
#include "io/strict_json.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using json = nlohmann::json;

// The one list of config fields, by their inference-style key. Parsing and writing both walk it,
// so the two can never disagree about a name.
template <class C, class F>
void visit_fields(C& c, F&& f) {
  f("vocab_size", c.vocab_size);
  f("dim", c.dim);
  f("moe_inter_dim", c.moe_inter_dim);
  f("n_layers", c.n_layers);
  f("n_mtp_layers", c.n_mtp_layers);
  f("dspark_block_size", c.dspark_block_size);
  f("dspark_noise_token_id", c.dspark_noise_token_id);
  f("dspark_target_layer_ids", c.dspark_target_layer_ids);
  f("dspark_markov_rank", c.dspark_markov_rank);
  f("dspark_n_routed_experts", c.dspark_n_routed_experts);
  f("dspark_n_activated_experts", c.dspark_n_activated_experts);
  f("n_heads", c.n_heads);
  f("n_routed_experts", c.n_routed_experts);
  f("n_shared_experts", c.n_shared_experts);
  f("n_activated_experts", c.n_activated_experts);
  f("score_func", c.score_func);
  f("route_scale", c.route_scale);
  f("swiglu_limit", c.swiglu_limit);
  f("q_lora_rank", c.q_lora_rank);
  f("head_dim", c.head_dim);
  f("rope_head_dim", c.rope_head_dim);
  f("norm_eps", c.norm_eps);
  f("o_groups", c.o_groups);
  f("o_lora_rank", c.o_lora_rank);
  f("window_size", c.window_size);
  f("kv_source_layers", c.kv_source_layers);
  f("index_source_layers", c.index_source_layers);
  f("original_seq_len", c.original_seq_len);
  f("rope_theta", c.rope_theta);
  f("rope_factor", c.rope_factor);
  f("beta_fast", c.beta_fast);
  f("beta_slow", c.beta_slow);
  f("index_n_heads", c.index_n_heads);
  f("index_head_dim", c.index_head_dim);
  f("index_topk", c.index_topk);
  f("candidate_source_layer", c.candidate_source_layer);
  f("candidate_topk_blocks", c.candidate_topk_blocks);
  f("candidate_block_size", c.candidate_block_size);
  f("hc_mult", c.hc_mult);
  f("hc_sinkhorn_iters", c.hc_sinkhorn_iters);
  f("hc_eps", c.hc_eps);
  f("engram_layer_ids", c.engram_layer_ids);
  f("engram_vocab_size", c.engram_vocab_size);
  f("engram_num_embeddings", c.engram_num_embeddings);
  f("engram_max_ngram_size", c.engram_max_ngram_size);
  f("engram_pad_id", c.engram_pad_id);
  f("engram_compressed_vocab_size", c.engram_compressed_vocab_size);
  f("dtype", c.dtype);
  f("expert_dtype", c.expert_dtype);
  f("compress_rope_theta", c.compress_rope_theta);
  f("compress_ratios", c.compress_ratios);
  f("vision_n_layers", c.vision_n_layers);
  f("vision_dim", c.vision_dim);
  f("vision_n_heads", c.vision_n_heads);
  f("vision_inter_dim", c.vision_inter_dim);
  f("vision_patch_size", c.vision_patch_size);
  f("vision_downsample_ratio", c.vision_downsample_ratio);
  f("vision_max_n_token", c.vision_max_n_token);
  f("vision_min_pixels", c.vision_min_pixels);
  f("vision_max_wh_ratio", c.vision_max_wh_ratio);
  f("image_token_id", c.image_token_id);
  f("engram_n_heads", c.engram_n_heads);
  f("engram_head_dim", c.engram_head_dim);
  f("vision_rope_theta", c.vision_rope_theta);
  f("max_batch_size", c.max_batch_size);
  f("max_seq_len", c.max_seq_len);
  f("gate_temp", c.gate_temp);
  f("norm_topk_prob", c.norm_topk_prob);
  f("temperature", c.temperature);
}

std::string type_name(const json& v) { return v.type_name(); }

// Reads one JSON value into a field, with an error naming the field when the type is wrong.
struct FieldReader {
  const std::string& src;
  const char* key;

  [[noreturn]] void bad(const json& v, const char* want) const {
    fail("{}: field '{}': expected {}, got {} ({})", src, key, want, type_name(v), v.dump());
  }
  void read(const json& v, std::int64_t& out) const {
    if (key == std::string_view("candidate_source_layer") && v.is_null()) {
      out = -1;
      return;
    }
    if (v.is_number_integer()) {
      out = v.get<std::int64_t>();
    } else if (v.is_number_unsigned()) {
      auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) bad(v, "an integer below 2^63");
      out = static_cast<std::int64_t>(u);
    } else {
      bad(v, "an integer");
    }
  }
  void read(const json& v, double& out) const {
    if (!v.is_number()) bad(v, "a number");
    out = v.get<double>();
  }
  void read(const json& v, bool& out) const {
    if (!v.is_boolean()) bad(v, "true or false");
    out = v.get<bool>();
  }
  void read(const json& v, std::string& out) const {
    if (!v.is_string()) bad(v, "a string");
    out = v.get<std::string>();
  }
  void read(const json& v, std::optional<std::string>& out) const {
    if (v.is_null()) {
      out.reset();
      return;
    }
    if (!v.is_string()) bad(v, "a string or null");
    out = v.get<std::string>();
  }
  void read(const json& v, std::optional<double>& out) const {
    if (v.is_null()) {
      out.reset();
      return;
    }
    if (!v.is_number()) bad(v, "a number or null");
    out = v.get<double>();
  }
  void read(const json& v, std::vector<std::int64_t>& out) const {
    if (!v.is_array()) bad(v, "an array of integers");
    out.clear();
    for (const auto& e : v) {
      if (!e.is_number_integer()) bad(v, "an array of integers");
      out.push_back(e.get<std::int64_t>());
    }
  }
};

template <class T>
json to_json_value(const T& v) {
  return json(v);
}
json to_json_value(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }
json to_json_value(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Config files are parsed strictly: a key given twice would otherwise silently keep its last
// value, and a user editing a config should hear about it.
json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open config '{}'", path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json j = parse_strict_json(text, fmt::format("config '{}' is not valid JSON:", path));
  if (!j.is_object()) fail("config '{}': expected a JSON object at the top level", path);
  return j;
}

// Copies `from` keys of `src` under `to` names into `dst` where `dst` lacks them.
void alias_into(json& dst, const json& src, std::initializer_list<std::pair<const char*, const char*>> table) {
  for (auto [from, to] : table)
    if (src.contains(from) && !dst.contains(to)) dst[to] = src[from];
}

}  // namespace

ModelConfig parse_inference_config(const json& j, const std::string& source) {
  if (!j.is_object()) fail("{}: expected a JSON object", source);
  ModelConfig c;
  c.source = source;
  std::set<std::string> known;
  visit_fields(c, [&](const char* key, auto& field) {
    known.insert(key);
    auto it = j.find(key);
    if (it != j.end()) FieldReader{source, key}.read(*it, field);
  });
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) c.unknown_keys.push_back(it.key());
  return c;
}

ModelConfig parse_hf_config(const json& j, const std::string& source) {
  if (!j.is_object()) fail("{}: expected a JSON object", source);
  const json& text = j.contains("text_config") ? j["text_config"] : j;
  if (!text.is_object()) fail("{}: field 'text_config': expected an object", source);
  // Inference names win; transformers aliases fill the gaps. [3P] names, unverified (see header).
  json flat = json::object();
  for (auto it = text.begin(); it != text.end(); ++it) flat[it.key()] = it.value();
  alias_into(flat, text,
             {{"hidden_size", "dim"},
              {"num_hidden_layers", "n_layers"},
              {"num_attention_heads", "n_heads"},
              {"moe_intermediate_size", "moe_inter_dim"},
              {"num_experts_per_tok", "n_activated_experts"},
              {"qk_rope_head_dim", "rope_head_dim"},
              {"rms_norm_eps", "norm_eps"},
              {"routed_scaling_factor", "route_scale"},
              {"scoring_func", "score_func"},
              {"num_nextn_predict_layers", "n_mtp_layers"},
              {"sliding_window", "window_size"}});
  std::optional<std::int64_t> max_pos;
  if (text.contains("max_position_embeddings")) {
    std::int64_t v = 0;
    FieldReader{source, "max_position_embeddings"}.read(text["max_position_embeddings"], v);
    max_pos = v;
    flat.erase("max_position_embeddings");
  }
  if (text.contains("rope_scaling") && text["rope_scaling"].is_object()) {
    const json& rs = text["rope_scaling"];
    alias_into(flat, rs,
               {{"factor", "rope_factor"},
                {"original_max_position_embeddings", "original_seq_len"},
                {"beta_fast", "beta_fast"},
                {"beta_slow", "beta_slow"}});
    flat.erase("rope_scaling");
  }
  if (j.contains("vision_config")) {
    const json& v = j["vision_config"];
    if (!v.is_object()) fail("{}: field 'vision_config': expected an object", source);
    alias_into(flat, v,
               {{"num_hidden_layers", "vision_n_layers"},
                {"n_layers", "vision_n_layers"},
                {"hidden_size", "vision_dim"},
                {"num_attention_heads", "vision_n_heads"},
                {"intermediate_size", "vision_inter_dim"},
                {"patch_size", "vision_patch_size"},
                {"downsample_ratio", "vision_downsample_ratio"},
                {"rope_theta", "vision_rope_theta"}});
  }
  ModelConfig c = parse_inference_config(flat, source);
  c.max_position_embeddings = max_pos;
  // Keys of a transformers config that carry no architecture are not "unknown".
  static const std::set<std::string> hf_meta = {
      "architectures", "model_type", "torch_dtype", "transformers_version", "bos_token_id",
      "eos_token_id", "pad_token_id", "tie_word_embeddings", "use_cache", "auto_map",
      "initializer_range", "attention_bias", "attention_dropout", "hidden_act", "text_config",
      "vision_config", "quantization_config", "hidden_size", "num_hidden_layers",
      "num_attention_heads", "moe_intermediate_size", "num_experts_per_tok", "qk_rope_head_dim",
      "rms_norm_eps", "routed_scaling_factor", "scoring_func", "num_nextn_predict_layers",
      "sliding_window"};
  std::erase_if(c.unknown_keys, [](const std::string& k) { return hf_meta.count(k) > 0; });
  if (j.contains("quantization_config")) {
    const json& q = j["quantization_config"];
    if (!q.is_object()) fail("{}: field 'quantization_config': expected an object", source);
    if (q.contains("weight_block_size"))
      FieldReader{source, "quantization_config.weight_block_size"}.read(q["weight_block_size"], c.weight_block_size);
  }
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  json j = read_json_file(path);
  bool hf = j.contains("text_config") || j.contains("model_type");
  ModelConfig c = hf ? parse_hf_config(j, path) : parse_inference_config(j, path);
  c.validate();
  return c;
}

ModelConfig load_model_config_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(dir) / "inference" / "config.json";
  if (fs::exists(p)) return load_model_config(p.string());
  p = fs::path(dir) / "config.json";
  if (!fs::exists(p)) fail("model directory '{}' has no config.json (nor inference/config.json)", dir);
  return load_model_config(p.string());
}

json config_to_json(const ModelConfig& c) {
  json j = json::object();
  visit_fields(c, [&](const char* key, const auto& field) { j[key] = to_json_value(field); });
  if (c.candidate_source_layer < 0) j["candidate_source_layer"] = nullptr;
  return j;
}

// ---------------------------------------------------------------------------------------------
// Validation: every rule the manifest, the memory plan and the forward pass rely on.

std::vector<std::string> ModelConfig::violations() const {
  std::vector<std::string> v;
  auto err = [&](fmt::format_string<std::string, std::string> f, std::string a, std::string b) {
    v.push_back(fmt::format(f, std::move(a), std::move(b)));
  };
  auto need_pos = [&](const char* name, std::int64_t x) {
    if (x <= 0) err("{}: must be positive ({})", name, std::to_string(x));
  };
  auto need_div = [&](const char* name, std::int64_t x, const char* by_name, std::int64_t by) {
    if (by > 0 && x % by != 0)
      v.push_back(fmt::format("{}: must be divisible by {} ({} % {} = {})", name, by_name, x, by, x % by));
  };
  auto list_str = [](const std::vector<std::int64_t>& l) { return fmt::format("[{}]", fmt::join(l, ", ")); };
  auto need_layer_list = [&](const char* name, const std::vector<std::int64_t>& l, std::int64_t limit) {
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (l[i] < 0 || l[i] >= limit)
        v.push_back(fmt::format("{}: layer {} out of range [0, {}) ({})", name, l[i], limit, list_str(l)));
      if (i > 0 && l[i] <= l[i - 1])
        v.push_back(fmt::format("{}: must be strictly increasing ({})", name, list_str(l)));
    }
  };

  for (auto [name, x] : {std::pair{"vocab_size", vocab_size}, {"dim", dim}, {"moe_inter_dim", moe_inter_dim},
                         {"n_layers", n_layers}, {"n_heads", n_heads}, {"n_routed_experts", n_routed_experts},
                         {"n_activated_experts", n_activated_experts}, {"q_lora_rank", q_lora_rank},
                         {"head_dim", head_dim}, {"rope_head_dim", rope_head_dim}, {"o_groups", o_groups},
                         {"o_lora_rank", o_lora_rank}, {"window_size", window_size}, {"hc_mult", hc_mult},
                         {"hc_sinkhorn_iters", hc_sinkhorn_iters}, {"max_seq_len", max_seq_len},
                         {"max_batch_size", max_batch_size}})
    need_pos(name, x);
  if (n_mtp_layers < 0) err("{}: must be >= 0 ({})", "n_mtp_layers", std::to_string(n_mtp_layers));
  if (n_shared_experts < 0) err("{}: must be >= 0 ({})", "n_shared_experts", std::to_string(n_shared_experts));
  if (!v.empty()) return v;  // later rules divide by these

  // Quantization blocks (spec §1.2, §2.3–2.5): every FP8/FP4 GEMM's K dimension and every
  // act_quant / FP4-QDQ row is a whole number of blocks.
  if (weight_block_size != std::vector<std::int64_t>{32, 32})
    err("{}: only [32, 32] blocks are supported ({})", "quantization_config.weight_block_size",
        list_str(weight_block_size));
  if (dtype != "fp8") err("{}: only \"fp8\" is supported ({})", "dtype", dtype);
  if (expert_dtype && *expert_dtype != "fp4" && *expert_dtype != "fp8")
    err("{}: must be \"fp4\", \"fp8\" or null ({})", "expert_dtype", *expert_dtype);
  if (score_func != "sqrtsoftplus")
    err("{}: only \"sqrtsoftplus\" is used by V4.1 ({})", "score_func", score_func);
  need_div("dim", dim, "the FP8 block 32", 32);
  need_div("q_lora_rank", q_lora_rank, "the FP8 block 32", 32);
  need_div("head_dim", head_dim, "the FP8 block 32", 32);
  need_div("moe_inter_dim", moe_inter_dim, "the FP8/FP4 block 32", 32);
  need_div("o_lora_rank", o_lora_rank, "the FP8 block 32", 32);
  need_div("n_heads", n_heads, "o_groups", o_groups);
  if (n_heads % o_groups == 0) need_div("n_heads / o_groups * head_dim", n_heads / o_groups * head_dim, "the FP8 block 32", 32);
  if (rope_head_dim % 2 != 0) err("{}: must be even ({})", "rope_head_dim", std::to_string(rope_head_dim));
  if (rope_head_dim > head_dim)
    v.push_back(fmt::format("rope_head_dim: must not exceed head_dim ({} > {})", rope_head_dim, head_dim));
  if (n_activated_experts > n_routed_experts)
    v.push_back(fmt::format("n_activated_experts: must not exceed n_routed_experts ({} > {})", n_activated_experts, n_routed_experts));
  if (hc_eps < 0 || norm_eps < 0) err("{}: must be >= 0 ({})", "hc_eps/norm_eps", fmt::format("{}, {}", hc_eps, norm_eps));
  if (original_seq_len < 0) err("{}: must be >= 0 ({})", "original_seq_len", std::to_string(original_seq_len));
  if (rope_theta <= 0 || compress_rope_theta <= 0 || rope_factor <= 0)
    err("{}: must be positive ({})", "rope_theta/compress_rope_theta/rope_factor",
        fmt::format("{}, {}, {}", rope_theta, compress_rope_theta, rope_factor));
  if (gate_temp <= 0) err("{}: must be positive ({})", "gate_temp", std::to_string(gate_temp));
  for (auto [name, id] : {std::pair{"dspark_noise_token_id", dspark_noise_token_id}, {"engram_pad_id", engram_pad_id},
                          {"image_token_id", image_token_id}})
    if (id < 0 || id >= vocab_size)
      v.push_back(fmt::format("{}: token id {} outside the vocabulary [0, {})", name, id, vocab_size));

  // Layer roles (spec §1.3).
  if (static_cast<std::int64_t>(compress_ratios.size()) != total_layers()) {
    v.push_back(fmt::format("compress_ratios: must have n_layers + n_mtp_layers = {} + {} = {} entries (has {})",
                            n_layers, n_mtp_layers, total_layers(), compress_ratios.size()));
  } else {
    for (std::int64_t i = 0; i < total_layers(); ++i) {
      std::int64_t r = compress_ratios[i];
      if (r < 0 || r > 2)
        v.push_back(fmt::format("compress_ratios[{}]: must be 0, 1 or 2 (V4.1 defines no other ratio) ({})", i, r));
      if (i >= n_layers && r != 0)
        v.push_back(fmt::format("compress_ratios[{}]: DSpark stage {} must have ratio 0 ({})", i, i - n_layers, r));
    }
    need_layer_list("kv_source_layers", kv_source_layers, n_layers);
    need_layer_list("index_source_layers", index_source_layers, n_layers);
    std::set<std::int64_t> kv(kv_source_layers.begin(), kv_source_layers.end());
    std::set<std::int64_t> ix(index_source_layers.begin(), index_source_layers.end());
    for (std::int64_t l : kv_source_layers) {
      if (l < 0 || l >= n_layers) continue;
      if (compress_ratios[l] == 0)
        v.push_back(fmt::format("kv_source_layers: layer {} has compress ratio 0, so it has no compressor", l));
      if (!ix.count(l))
        v.push_back(fmt::format("kv_source_layers: layer {} must also be an index source (its indexer owns the index keys)", l));
    }
    for (std::int64_t l : index_source_layers)
      if (l >= 0 && l < n_layers && compress_ratios[l] == 0)
        v.push_back(fmt::format("index_source_layers: layer {} has compress ratio 0, so it has no compressed rows to index", l));
    // Every compressed layer reads the nearest earlier kv source; it must exist and share the ratio,
    // since the compressed rows (and the top-k indices into them) are in that layer's units.
    std::int64_t cur_kv = -1;
    for (std::int64_t l = 0; l < n_layers; ++l) {
      std::int64_t r = compress_ratios[l];
      if (kv.count(l)) cur_kv = l;
      if (r == 0) continue;
      if (cur_kv < 0)
        v.push_back(fmt::format("compress_ratios[{}]: ratio {} but no kv source at or before layer {} (kv_source_layers {})",
                                l, r, l, list_str(kv_source_layers)));
      else if (compress_ratios[cur_kv] != r)
        v.push_back(fmt::format("compress_ratios[{}]: ratio {} differs from its kv source layer {} (ratio {})", l, r, cur_kv,
                                compress_ratios[cur_kv]));
    }
    if (candidate_source_layer >= 0) {
      if (candidate_source_layer >= n_layers)
        v.push_back(fmt::format("candidate_source_layer: layer {} out of range [0, {})", candidate_source_layer, n_layers));
      else if (!ix.count(candidate_source_layer))
        v.push_back(fmt::format("candidate_source_layer: layer {} must be an index source (index_source_layers {})",
                                candidate_source_layer, list_str(index_source_layers)));
      need_pos("candidate_topk_blocks", candidate_topk_blocks);
      need_pos("candidate_block_size", candidate_block_size);
      if (candidate_topk_blocks * candidate_block_size < index_topk)
        v.push_back(fmt::format(
            "candidate_topk_blocks × candidate_block_size: the candidate budget {} × {} = {} must be >= index_topk {} "
            "(spec §16.5: a smaller budget lets top-k return masked positions)",
            candidate_topk_blocks, candidate_block_size, candidate_topk_blocks * candidate_block_size, index_topk));
    }
  }
  if (!index_source_layers.empty()) {
    need_pos("index_n_heads", index_n_heads);
    need_pos("index_head_dim", index_head_dim);
    need_pos("index_topk", index_topk);
    need_div("index_head_dim", index_head_dim, "the FP4 block 32", 32);
    if (rope_head_dim > index_head_dim)
      v.push_back(fmt::format("rope_head_dim: must not exceed index_head_dim ({} > {})", rope_head_dim, index_head_dim));
  }

  // DSpark (spec §9).
  if (n_mtp_layers > 0) {
    need_pos("dspark_block_size", dspark_block_size);
    need_pos("dspark_markov_rank", dspark_markov_rank);
    need_pos("dspark_n_routed_experts", dspark_n_routed_experts);
    need_pos("dspark_n_activated_experts", dspark_n_activated_experts);
    if (dspark_n_activated_experts > dspark_n_routed_experts)
      v.push_back(fmt::format("dspark_n_activated_experts: must not exceed dspark_n_routed_experts ({} > {})",
                              dspark_n_activated_experts, dspark_n_routed_experts));
    if (dspark_target_layer_ids.empty()) err("{}: must name at least one layer ({})", "dspark_target_layer_ids", "[]");
    std::set<std::int64_t> seen;
    for (std::int64_t l : dspark_target_layer_ids) {
      if (l < 0 || l >= n_layers)
        v.push_back(fmt::format("dspark_target_layer_ids: layer {} out of range [0, {})", l, n_layers));
      if (!seen.insert(l).second) v.push_back(fmt::format("dspark_target_layer_ids: layer {} listed twice", l));
    }
  }

  // Engram (spec §8).
  if (has_engram()) {
    need_layer_list("engram_layer_ids", engram_layer_ids, n_layers);
    need_pos("engram_n_heads", engram_n_heads);
    need_pos("engram_head_dim", engram_head_dim);
    need_div("engram_head_dim", engram_head_dim, "the FP8 block 32", 32);
    need_pos("engram_compressed_vocab_size", engram_compressed_vocab_size);
    if (engram_max_ngram_size < 2)
      err("{}: must be >= 2 ({})", "engram_max_ngram_size", std::to_string(engram_max_ngram_size));
    if (engram_vocab_size < 2) err("{}: must be >= 2 ({})", "engram_vocab_size", std::to_string(engram_vocab_size));
    if (engram_num_embeddings.size() != engram_layer_ids.size()) {
      v.push_back(fmt::format("engram_num_embeddings: must have one entry per engram layer ({} entries for {} layers)",
                              engram_num_embeddings.size(), engram_layer_ids.size()));
    } else if (engram_max_ngram_size >= 2 && engram_vocab_size >= 2 && engram_n_heads > 0 &&
               engram_vocab_size < (std::int64_t{1} << 40)) {
      // The table sizes are not free parameters: they are the sums of the primes the layout
      // search picks (spec §8.1), so a mismatch means the hashes would index the wrong rows.
      EngramLayout lay = engram_layout(*this);
      for (std::size_t i = 0; i < engram_layer_ids.size(); ++i)
        if (lay.layers[i].rows != engram_num_embeddings[i])
          v.push_back(fmt::format("engram_num_embeddings[{}]: layer {} must have {} rows, the sum of its hash primes "
                                  "derived from engram_vocab_size {} (spec §8.1) (config says {})",
                                  i, engram_layer_ids[i], lay.layers[i].rows, engram_vocab_size, engram_num_embeddings[i]));
    }
  }

  // Vision (spec §11).
  if (has_vision()) {
    need_pos("vision_dim", vision_dim);
    need_pos("vision_n_heads", vision_n_heads);
    need_pos("vision_inter_dim", vision_inter_dim);
    need_pos("vision_patch_size", vision_patch_size);
    need_pos("vision_downsample_ratio", vision_downsample_ratio);
    need_pos("vision_max_n_token", vision_max_n_token);
    need_div("vision_dim", vision_dim, "vision_n_heads", vision_n_heads);
    if (vision_dim % vision_n_heads == 0 && (vision_dim / vision_n_heads) % 4 != 0)
      v.push_back(fmt::format("vision_dim / vision_n_heads: the 2-D RoPE needs a head dim divisible by 4 ({})",
                              vision_dim / vision_n_heads));
  }
  return v;
}

void ModelConfig::validate() const {
  auto v = violations();
  if (v.empty()) return;
  fail("invalid model configuration{}:\n  - {}", source.empty() ? "" : " in '" + source + "'", fmt::join(v, "\n  - "));
}

}  // namespace dsv4
