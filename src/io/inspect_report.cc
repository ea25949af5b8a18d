#include "io/inspect_report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "io/config.h"
#include "io/engram_layout.h"
#include "io/layer_roles.h"
#include "io/manifest.h"
#include "io/memory_plan.h"
#include "io/param_count.h"

namespace dsv4 {
namespace {

using json = nlohmann::json;

json shape_json(std::initializer_list<std::string> dims) { return json(std::vector<std::string>(dims)); }

std::string s(std::int64_t v) { return std::to_string(v); }

// The per-layer list of tensors of one component, experts collapsed into one row with a count.
json component_table(const Manifest& m, std::int64_t layer, Component comp, const std::string& prefix) {
  json rows = json::array();
  std::map<std::string, std::size_t> expert_row;  // "w1" -> row index
  for (const TensorSpec& t : m.tensors) {
    if (t.layer != layer || t.component != comp || t.is_scale) continue;
    std::string name = t.name.substr(prefix.size());
    if (name.ends_with(".weight")) name.resize(name.size() - 7);
    // Shapes read the way a linear is described: in × out (the checkpoint stores [out, in]);
    // packed FP4 holds two elements per byte.
    std::vector<std::int64_t> dims = t.shape;
    if (t.dtype == DType::I8 && !dims.empty()) dims.back() *= 2;
    const bool table = comp == Component::Embed || comp == Component::EngramTable ||
                       name.find("embed") != std::string::npos || name.ends_with("q_weight") || name.ends_with("k_weight");
    if (dims.size() == 2 && !table) std::swap(dims[0], dims[1]);
    if (t.expert >= 0) {
      std::string key = name.substr(name.rfind('.') + 1);
      auto it = expert_row.find(key);
      if (it != expert_row.end()) {
        rows[it->second]["count"] = rows[it->second]["count"].get<std::int64_t>() + 1;
        rows[it->second]["params"] = rows[it->second]["params"].get<std::int64_t>() + t.params();
        continue;
      }
      expert_row[key] = rows.size();
      name = "experts.E." + key;
    }
    rows.push_back({{"name", name},
                    {"dtype", std::string(dtype_name(t.dtype))},
                    {"dims", dims},
                    {"count", 1},
                    {"params_each", t.params()},
                    {"params", t.params()}});
  }
  return rows;
}

std::int64_t sum_params(const json& rows) {
  std::int64_t sum = 0;
  for (const auto& x : rows) sum += x["params"].get<std::int64_t>();
  return sum;
}

json layer_json(const ModelConfig& c, const LayerRole& r, const LayerParams& lp) {
  json j = {{"id", r.id},
            {"name", r.prefix().substr(0, r.prefix().size() - 1)},
            {"kind", r.kind()},
            {"compress_ratio", r.ratio},
            {"rope", {{"base", r.rope_base}, {"yarn", r.yarn}}},
            {"kv_source", r.kv_source},
            {"index_source", r.index_source},
            {"owns_index_keys", r.owns_index_keys},
            {"candidate_source", r.candidate_source},
            {"uses_candidates", r.uses_candidates},
            {"kv_from", r.kv_from},
            {"topk_from", r.topk_from},
            {"index_keys_from", r.index_keys_from},
            {"engram", r.engram_index >= 0},
            {"dspark_target", r.dspark_target},
            {"params", lp.params},
            {"engram_params", lp.engram_params},
            {"activated_params", lp.activated}};
  json pub = json::array(), reads = json::array(), keeps = json::array();
  keeps.push_back(fmt::format("window ring {} × {} bf16", c.window_size, c.head_dim));
  if (r.kv_source) {
    pub.push_back("compressed KV rows");
    keeps.push_back(fmt::format("compressed KV rows ⌊ctx/{}⌋ × {} bf16", r.ratio, c.head_dim));
    keeps.push_back(fmt::format("index keys ⌊ctx/{}⌋ × {} bf16", r.ratio, c.index_head_dim));
    pub.push_back("index keys");
    if (r.ratio > 1) keeps.push_back(fmt::format("compressor tails (kv, score) 2 × {} × {} fp32", r.ratio, c.head_dim));
  }
  if (r.index_source) pub.push_back("selected positions (top-k)");
  if (r.candidate_source) pub.push_back("candidate blocks");
  if (r.ratio > 0 && !r.kv_source) reads.push_back(fmt::format("compressed KV rows of layer {}", r.kv_from));
  if (r.index_source && !r.owns_index_keys) reads.push_back(fmt::format("index keys of layer {}", r.index_keys_from));
  if (r.ratio > 0 && !r.index_source) reads.push_back(fmt::format("selected positions of layer {}", r.topk_from));
  if (r.uses_candidates) {
    // The candidate source is the nearest earlier candidate_source layer.
    reads.push_back(fmt::format("candidate blocks of layer {}", c.candidate_source_layer));
  }
  if (r.is_mtp) reads.push_back("main-model hiddens of the target layers (through main_proj)");
  j["publishes"] = pub;
  j["reads"] = reads;
  j["keeps"] = keeps;
  return j;
}

json shapes_json(const ModelConfig& c) {
  const std::string hc = s(c.hc_mult), d = s(c.dim), mix = s((2 + c.hc_mult) * c.hc_mult);
  json block = json::array();
  auto row = [&](json& arr, const std::string& what, json shape, const std::string& dtype) {
    arr.push_back({{"what", what}, {"shape", std::move(shape)}, {"dtype", dtype}});
  };
  row(block, "block input: residual stream X", shape_json({"B", "T", hc, d}), "bf16");
  row(block, "block input: delayed pre-mix (previous sublayer's pre)", shape_json({"B", "T", hc}), "fp32");
  row(block, "hc mixes (per sublayer)", shape_json({"B", "T", mix}), "fp32");
  row(block, "  → pre, post", shape_json({"B", "T", hc}), "fp32");
  row(block, "  → comb (Sinkhorn-normalised)", shape_json({"B", "T", hc, hc}), "fp32");
  row(block, "attention input (hc_pre + attn_norm)", shape_json({"B", "T", d}), "bf16");
  row(block, "q low-rank (wq_a + q_norm)", shape_json({"B", "T", s(c.q_lora_rank)}), "bf16");
  row(block, "q (wq_b, RoPE on the last dims)", shape_json({"B", "T", s(c.n_heads), s(c.head_dim)}), "bf16");
  row(block, "window KV (wkv + kv_norm + RoPE + FP8 QDQ)", shape_json({"B", "T", s(c.head_dim)}), "bf16");
  row(block, "attention output (sparse_attn, inverse RoPE)", shape_json({"B", "T", s(c.n_heads), s(c.head_dim)}), "bf16");
  row(block, "grouped wo_a output", shape_json({"B", "T", s(c.o_groups), s(c.o_lora_rank)}), "bf16");
  row(block, "attention sublayer output (wo_b)", shape_json({"B", "T", d}), "bf16");
  row(block, "gate scores", shape_json({"B", "T", s(c.n_routed_experts)}), "fp32");
  row(block, "routing (expert ids, weights)", shape_json({"B", "T", s(c.n_activated_experts)}), "int32, fp32");
  row(block, "expert hidden (SwiGLU)", shape_json({"B", "T", s(c.moe_inter_dim)}), "fp32 → bf16");
  row(block, "MoE sublayer output", shape_json({"B", "T", d}), "bf16");
  row(block, "block output: residual stream X", shape_json({"B", "T", hc, d}), "bf16");
  row(block, "block output: pre-mix for the next sublayer", shape_json({"B", "T", hc}), "fp32");

  json group = json::array();
  row(group, "group input/output: residual stream", shape_json({"B", "T", hc, d}), "bf16");
  row(group, "hand-off: compressed KV rows (ratio r)", shape_json({"B", "⌊(P+T)/r⌋", s(c.head_dim)}), "bf16 (FP4-QDQ values)");
  row(group, "hand-off: index keys", shape_json({"B", "⌊(P+T)/r⌋", s(c.index_head_dim)}), "bf16 (FP4-QDQ values)");
  row(group, "hand-off: selected positions", shape_json({"B", "T", s(c.index_topk)}), "int32");
  row(group, "hand-off: candidate blocks", shape_json({"B", "T", fmt::format("⌈⌊(P+T)/r⌋/{}⌉", c.candidate_block_size)}), "bool");
  row(group, "indexer scores (tiled over queries)", shape_json({"B", "T", "⌊(P+T)/r⌋"}), "bf16");

  json model = json::array();
  row(model, "input ids", shape_json({"B", "T"}), "int64");
  if (c.has_engram())
    row(model, "Engram hashes", shape_json({"B", "T", s(c.engram_layer_ids.size()), s((c.engram_max_ngram_size - 1) * c.engram_n_heads)}), "int64");
  row(model, "embedding", shape_json({"B", "T", d}), "bf16");
  row(model, "collapsed hidden (hc_pre + norm)", shape_json({"B", "T", d}), "bf16");
  row(model, "logits", shape_json({"B", s(c.vocab_size)}), "fp32");
  if (c.n_mtp_layers > 0)
    row(model, "DSpark main hidden", shape_json({"B", "T", s(c.dspark_target_layer_ids.size() * c.dim)}), "bf16");
  return {{"note", "B = batch, T = new tokens this call, P = tokens already in the sequence"},
          {"block", block},
          {"layer_group", group},
          {"model", model}};
}

}  // namespace

json build_inspect_report(const ModelConfig& c, const InspectOptions& opt) {
  c.validate();
  const Manifest m = build_manifest(c);
  const std::vector<LayerRole> roles = layer_roles(c);
  const ParamCount pc = count_params(c, m, roles);
  const std::int64_t ctx = opt.ctx > 0 ? opt.ctx : c.max_seq_len;
  const MemoryPlan mp = plan_memory(c, m, roles, ctx, std::max<std::int64_t>(1, opt.batch));

  json r;
  r["schema"] = "dsv4.inspect/1";
  r["config"] = config_to_json(c);
  r["config_source"] = c.source;
  r["unknown_config_keys"] = c.unknown_keys;

  // Checkpoint inventory.
  std::map<std::string, std::pair<std::int64_t, std::uint64_t>> by_dtype;
  for (const TensorSpec& t : m.tensors) {
    auto& e = by_dtype[std::string(dtype_name(t.dtype))];
    e.first++;
    e.second += t.bytes();
  }
  json dt = json::object();
  for (auto& [k, v] : by_dtype) dt[k] = {{"tensors", v.first}, {"bytes", v.second}};
  r["checkpoint"] = {{"tensors", m.tensors.size()}, {"bytes", m.total_bytes()}, {"by_dtype", dt}};

  // Layers, types and groups.
  json layers = json::array();
  for (std::size_t i = 0; i < roles.size(); ++i) layers.push_back(layer_json(c, roles[i], pc.layers[i]));
  r["layers"] = layers;

  std::map<std::pair<std::string, std::int64_t>, std::vector<std::int64_t>> types;
  for (const LayerRole& ro : roles)
    if (!ro.is_mtp) types[{ro.kind(), pc.layers[ro.id].params}].push_back(ro.id);
  json lt = json::array();
  for (auto& [k, ids] : types) lt.push_back({{"kind", k.first}, {"params_per_layer", k.second}, {"layers", ids}});
  std::sort(lt.begin(), lt.end(), [](const json& a, const json& b) { return a["layers"][0] < b["layers"][0]; });
  r["layer_types"] = lt;

  json groups = json::array();
  for (const GroupRun& g : pc.group_runs)
    groups.push_back({{"first_layer", g.first_layer},
                      {"last_layer", g.last_layer},
                      {"count", g.count},
                      {"composition", g.composition},
                      {"params_per_group", g.params_per_group},
                      {"params", g.params()}});
  r["layer_groups"] = groups;

  // Per-component tables for one representative layer of each kind (and the Engram layers).
  json comps = json::array();
  std::map<std::string, bool> seen;
  for (const LayerRole& ro : roles) {
    std::string key = ro.kind() + (ro.engram_index >= 0 ? "+engram" : "") +
                      (ro.is_mtp ? fmt::format("{}", ro.mtp_stage) : "");
    if (seen[key]) continue;
    seen[key] = true;
    json t = {{"layer", ro.id}, {"kind", ro.kind()}, {"components", json::array()}};
    for (Component cp : {Component::AttnCore, Component::Compressor, Component::IndexerQuery, Component::IndexerKey,
                         Component::Gate, Component::RoutedExperts, Component::SharedExpert, Component::Norms,
                         Component::HyperConnections, Component::EngramDense, Component::EngramTable,
                         Component::DSparkExtra}) {
      json rows = component_table(m, ro.id, cp, ro.prefix());
      if (rows.empty()) continue;
      const std::int64_t sum = sum_params(rows);
      t["components"].push_back({{"component", std::string(component_name(cp))}, {"params", sum}, {"tensors", rows}});
    }
    comps.push_back(t);
  }
  json globals = json::array();
  for (Component cp : {Component::Embed, Component::Head, Component::FinalNorm, Component::ImageDelims, Component::Vision}) {
    json rows = component_table(m, -1, cp, "");
    if (rows.empty()) continue;
    const std::int64_t sum = sum_params(rows);
    if (cp == Component::Vision && rows.size() > 12) {
      // 32 blocks of 8 tensors: summarise the tower by total rather than listing 260 rows.
      rows = json::array({{{"name", fmt::format("vision tower ({} blocks) + patch_embed + norm + aligner", c.vision_n_layers)},
                           {"dtype", "BF16"}, {"dims", json::array()}, {"count", 1}, {"params_each", sum}, {"params", sum}}});
    }
    globals.push_back({{"component", std::string(component_name(cp))}, {"params", sum}, {"tensors", rows}});
  }
  r["component_tables"] = comps;
  r["global_tables"] = globals;

  json bc = json::object();
  for (auto& [k, v] : pc.by_component) bc[std::string(component_name(k))] = v;
  r["params"] = {{"total", pc.total},
                 {"backbone_layers", pc.backbone_layers},
                 {"engram", pc.engram},
                 {"engram_tables", pc.engram_tables},
                 {"embed", pc.embed},
                 {"head", pc.head},
                 {"final_norm", pc.final_norm},
                 {"dspark", pc.dspark},
                 {"vision", pc.vision},
                 {"image_delims", pc.image_delims},
                 {"by_component", bc},
                 {"activated_per_token_layers", pc.activated_backbone},
                 {"activated_per_token", pc.activated_total}};

  r["shapes"] = shapes_json(c);

  json state = json::array();
  for (const StateBuffer& sb : mp.state)
    state.push_back({{"layer", sb.layer},
                     {"buffer", sb.name},
                     {"dtype", sb.dtype},
                     {"row_elems", sb.row_elems},
                     {"fixed_rows", sb.fixed_rows},
                     {"rows_per_ratio", sb.rows_per_ratio},
                     {"rows_at_ctx", sb.rows(ctx)},
                     {"bytes_at_ctx", sb.bytes(ctx)}});
  r["memory"] = {
      {"ctx", ctx},
      {"batch", mp.batch},
      {"weights",
       {{"routed_experts", mp.routed_experts},
        {"dense", mp.dense},
        {"engram_tables", mp.engram_tables},
        {"engram_dense", mp.engram_dense},
        {"dspark", mp.dspark},
        {"vision", mp.vision},
        {"total", mp.total_weights}}},
      {"state",
       {{"bytes_per_token", mp.state_bytes_per_token},
        {"fixed_bytes_per_sequence", mp.state_fixed_bytes},
        {"bytes_per_sequence", mp.state_bytes_per_sequence},
        {"bytes_total", mp.state_bytes_total},
        {"buffers", state}}},
      {"decode_read_per_token",
       {{"weight_bytes", mp.decode_weight_bytes}, {"cache_bytes", mp.decode_cache_bytes}, {"total_bytes", mp.decode_bytes()}}},
      {"resident_total_bytes", mp.total_weights + static_cast<std::uint64_t>(mp.state_bytes_total)}};

  if (c.has_engram()) {
    json eg = json::array();
    EngramLayout lay = engram_layout(c);
    for (const auto& l : lay.layers) eg.push_back({{"layer", l.layer_id}, {"rows", l.rows}, {"primes", l.primes}, {"offsets", l.offsets}});
    r["engram_layout"] = eg;
  }
  return r;
}

}  // namespace dsv4
