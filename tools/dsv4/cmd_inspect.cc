// dsv4 inspect: the architecture, parameter counts and memory plan of a model, from a config
// file or a model directory. The content is built by the library (io/inspect_report.h) as JSON;
// this file only renders it as text.
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "commands.h"
#include "io/checkpoint_validation.h"
#include "io/config.h"
#include "io/inspect_report.h"
#include "util/error.h"
#include "util/human_format.h"

namespace dsv4::cli {
namespace {

using json = nlohmann::json;

struct InspectArgs {
  std::string config_path;
  std::string model_dir;
  bool as_json = false;
  std::int64_t ctx = 0;
  std::int64_t batch = 1;
};

std::string n(const json& v) { return with_commas(v.get<std::int64_t>()); }
std::string b(const json& v) {
  auto x = v.get<std::uint64_t>();
  if (x < 1024) return fmt::format("{} B", x);
  return fmt::format("{} B ({})", with_commas(static_cast<std::int64_t>(x)), human_bytes(x));
}

// "0, 1, 3–7, 9–13" from a sorted list of layer ids.
std::string ranges(const json& ids) {
  std::string out;
  std::size_t i = 0;
  while (i < ids.size()) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1].get<std::int64_t>() == ids[j].get<std::int64_t>() + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ids[i].get<std::int64_t>())
                  : fmt::format("{}–{}", ids[i].get<std::int64_t>(), ids[j].get<std::int64_t>());
    i = j + 1;
  }
  return out;
}

std::string dims(const json& d, const char* sep = " × ") {
  std::vector<std::string> parts;
  for (auto& x : d) parts.push_back(x.is_string() ? x.get<std::string>() : std::to_string(x.get<std::int64_t>()));
  return fmt::format("{}", fmt::join(parts, sep));
}

void render_text(const json& r) {
  const json& c = r["config"];
  std::printf("DeepSeek V4.1 model  (config: %s)\n\n", r["config_source"].get<std::string>().c_str());
  std::printf("Architecture\n");
  std::printf("  vocab %s · dim %s · %s layers + %s DSpark stages · %s hyper-connection copies\n", n(c["vocab_size"]).c_str(),
              n(c["dim"]).c_str(), n(c["n_layers"]).c_str(), n(c["n_mtp_layers"]).c_str(), n(c["hc_mult"]).c_str());
  std::printf("  attention: %s heads × %s (RoPE on the last %s) · q low-rank %s · output %s groups × %s · window %s\n",
              n(c["n_heads"]).c_str(), n(c["head_dim"]).c_str(), n(c["rope_head_dim"]).c_str(), n(c["q_lora_rank"]).c_str(),
              n(c["o_groups"]).c_str(), n(c["o_lora_rank"]).c_str(), n(c["window_size"]).c_str());
  std::printf("  indexer: %s heads × %s · top-k %s · candidates %s blocks × %s from layer %s\n", n(c["index_n_heads"]).c_str(),
              n(c["index_head_dim"]).c_str(), n(c["index_topk"]).c_str(), n(c["candidate_topk_blocks"]).c_str(),
              n(c["candidate_block_size"]).c_str(),
              c["candidate_source_layer"].is_null() ? "—" : n(c["candidate_source_layer"]).c_str());
  std::printf("  MoE: %s routed experts (%s active, inter %s, %s) + %s shared · %s · route scale %g\n",
              n(c["n_routed_experts"]).c_str(), n(c["n_activated_experts"]).c_str(), n(c["moe_inter_dim"]).c_str(),
              c["expert_dtype"].is_null() ? "fp8" : c["expert_dtype"].get<std::string>().c_str(),
              n(c["n_shared_experts"]).c_str(), c["score_func"].get<std::string>().c_str(), c["route_scale"].get<double>());
  if (!c["engram_layer_ids"].empty())
    std::printf("  Engram: before layers %s · %s heads × %s · n-grams up to %s · compressed vocab %s\n",
                ranges(c["engram_layer_ids"]).c_str(), n(c["engram_n_heads"]).c_str(), n(c["engram_head_dim"]).c_str(),
                n(c["engram_max_ngram_size"]).c_str(), n(c["engram_compressed_vocab_size"]).c_str());
  if (c["n_mtp_layers"].get<std::int64_t>() > 0)
    std::printf("  DSpark: %s stages · block %s · reads the inputs of layers %s · %s experts (%s active) · Markov rank %s\n",
                n(c["n_mtp_layers"]).c_str(), n(c["dspark_block_size"]).c_str(), ranges(c["dspark_target_layer_ids"]).c_str(),
                n(c["dspark_n_routed_experts"]).c_str(), n(c["dspark_n_activated_experts"]).c_str(),
                n(c["dspark_markov_rank"]).c_str());
  if (c["vision_n_layers"].get<std::int64_t>() > 0)
    std::printf("  vision: ViT %s blocks × %s (%s heads, MLP %s), patch %s, %s×%s merge, ≤ %s tokens per image\n",
                n(c["vision_n_layers"]).c_str(), n(c["vision_dim"]).c_str(), n(c["vision_n_heads"]).c_str(),
                n(c["vision_inter_dim"]).c_str(), n(c["vision_patch_size"]).c_str(), n(c["vision_downsample_ratio"]).c_str(),
                n(c["vision_downsample_ratio"]).c_str(), n(c["vision_max_n_token"]).c_str());
  if (!r["unknown_config_keys"].empty())
    std::printf("  note: config keys not used by dsv4: %s\n", r["unknown_config_keys"].dump().c_str());

  std::printf("\nLayer roles\n");
  std::printf("  %-10s %-26s %5s  %-16s %-9s %-8s %-10s %s\n", "layer", "kind", "ratio", "RoPE", "KV rows", "top-k", "index keys",
              "notes");
  for (const json& l : r["layers"]) {
    auto from = [](const json& v) { return v.get<std::int64_t>() < 0 ? std::string("—") : std::to_string(v.get<std::int64_t>()); };
    std::string rope = fmt::format("θ={:g}{}", l["rope"]["base"].get<double>(), l["rope"]["yarn"].get<bool>() ? "+YaRN" : "");
    std::vector<std::string> notes;
    if (l["engram"].get<bool>()) notes.push_back("Engram before the block");
    if (l["uses_candidates"].get<bool>()) notes.push_back("masked by the candidate blocks");
    if (l["dspark_target"].get<bool>()) notes.push_back("input captured for DSpark");
    for (auto& p : l["publishes"]) notes.push_back("publishes " + p.get<std::string>());
    std::printf("  %-10s %-26s %5lld  %-16s %-9s %-8s %-10s %s\n", l["name"].get<std::string>().c_str(),
                l["kind"].get<std::string>().c_str(), static_cast<long long>(l["compress_ratio"].get<std::int64_t>()),
                rope.c_str(), from(l["kv_from"]).c_str(), from(l["topk_from"]).c_str(), from(l["index_keys_from"]).c_str(),
                fmt::format("{}", fmt::join(notes, "; ")).c_str());
  }

  std::printf("\nLayer types (parameters per layer; Engram counted apart)\n");
  for (const json& t : r["layer_types"])
    std::printf("  %-26s %20s   layers %s\n", t["kind"].get<std::string>().c_str(), n(t["params_per_layer"]).c_str(),
                ranges(t["layers"]).c_str());
  std::printf("\nLayer groups (a source of selected positions and the layers that reuse it)\n");
  for (const json& g : r["layer_groups"]) {
    std::int64_t cnt = g["count"].get<std::int64_t>();
    if (cnt > 1)
      std::printf("  layers %lld–%lld: %lld groups of %s = %s × %lld = %s\n", static_cast<long long>(g["first_layer"].get<std::int64_t>()),
                  static_cast<long long>(g["last_layer"].get<std::int64_t>()), static_cast<long long>(cnt),
                  g["composition"].get<std::string>().c_str(), n(g["params_per_group"]).c_str(), static_cast<long long>(cnt),
                  n(g["params"]).c_str());
    else
      std::printf("  layers %lld–%lld: %s = %s\n", static_cast<long long>(g["first_layer"].get<std::int64_t>()),
                  static_cast<long long>(g["last_layer"].get<std::int64_t>()), g["composition"].get<std::string>().c_str(),
                  n(g["params"]).c_str());
  }

  auto table = [&](const json& comps) {
    for (const json& cp : comps) {
      std::printf("    %-18s %20s\n", cp["component"].get<std::string>().c_str(), n(cp["params"]).c_str());
      for (const json& t : cp["tensors"]) {
        std::string calc = dims(t["dims"]);
        std::int64_t count = t["count"].get<std::int64_t>();
        std::string line = calc.empty() ? "" : calc + " = " + n(t["params_each"]);
        if (count > 1) line += fmt::format("; × {} = {}", count, n(t["params"]));
        std::printf("      %-24s %s\n", t["name"].get<std::string>().c_str(), line.c_str());
      }
    }
  };
  std::printf("\nParameters by component (one layer of each kind; in × out for linears)\n");
  for (const json& l : r["component_tables"]) {
    std::printf("  layer %lld (%s)\n", static_cast<long long>(l["layer"].get<std::int64_t>()), l["kind"].get<std::string>().c_str());
    table(l["components"]);
  }
  std::printf("  global\n");
  table(r["global_tables"]);

  const json& p = r["params"];
  std::printf("\nWhole model\n");
  std::printf("  %-40s %20s\n", "backbone layers (Engram apart)", n(p["backbone_layers"]).c_str());
  std::printf("  %-40s %20s\n", "Engram (tables + dense)", n(p["engram"]).c_str());
  std::printf("  %-40s %20s\n", "  of which tables", n(p["engram_tables"]).c_str());
  std::printf("  %-40s %20s\n", "embed", n(p["embed"]).c_str());
  std::printf("  %-40s %20s\n", "head", n(p["head"]).c_str());
  std::printf("  %-40s %20s\n", "final norm", n(p["final_norm"]).c_str());
  std::printf("  %-40s %20s\n", "DSpark stages", n(p["dspark"]).c_str());
  std::printf("  %-40s %20s\n", "vision (tower, aligner)", n(p["vision"]).c_str());
  std::printf("  %-40s %20s\n", "image delimiters", n(p["image_delims"]).c_str());
  std::printf("  %-40s %20s\n", "total parameters", n(p["total"]).c_str());
  std::printf("  %-40s %20s\n", "activated per text token (layers)", n(p["activated_per_token_layers"]).c_str());
  std::printf("  %-40s %20s\n", "activated per text token (+ head, 1 row)", n(p["activated_per_token"]).c_str());

  const json& ck = r["checkpoint"];
  std::printf("\nCheckpoint: %s tensors, %s\n", n(ck["tensors"]).c_str(), b(ck["bytes"]).c_str());
  for (auto it = ck["by_dtype"].begin(); it != ck["by_dtype"].end(); ++it)
    std::printf("  %-8s %8s tensors %s\n", it.key().c_str(), n(it.value()["tensors"]).c_str(), b(it.value()["bytes"]).c_str());
  if (r.contains("model_dir")) {
    const json& md = r["model_dir"];
    std::printf("  files: %s (%s shards, %s tensors, %s) — %s\n", md["path"].get<std::string>().c_str(), n(md["shards"]).c_str(),
                n(md["tensors"]).c_str(), b(md["bytes"]).c_str(), "validated against the manifest");
  }

  std::printf("\nTensor shapes (%s)\n", r["shapes"]["note"].get<std::string>().c_str());
  for (const char* part : {"block", "layer_group", "model"}) {
    std::printf("  %s\n", part);
    for (const json& s : r["shapes"][part])
      std::printf("    %-56s [%s] %s\n", s["what"].get<std::string>().c_str(), dims(s["shape"], ", ").c_str(),
                  s["dtype"].get<std::string>().c_str());
  }

  std::printf("\nWhat each layer keeps between forward calls, and what it only reads\n");
  for (const json& l : r["layers"]) {
    std::vector<std::string> keeps, reads;
    for (auto& k : l["keeps"]) keeps.push_back(k.get<std::string>());
    for (auto& k : l["reads"]) reads.push_back(k.get<std::string>());
    std::printf("  %-10s keeps %s%s\n", l["name"].get<std::string>().c_str(), fmt::format("{}", fmt::join(keeps, "; ")).c_str(),
                reads.empty() ? "" : fmt::format(" | reads {}", fmt::join(reads, "; ")).c_str());
  }

  const json& m = r["memory"];
  const json& w = m["weights"];
  std::printf("\nMemory plan (context %s tokens, batch %s; weights mapped in their stored formats)\n", n(m["ctx"]).c_str(),
              n(m["batch"]).c_str());
  std::printf("  resident weights\n");
  for (const char* k : {"routed_experts", "dense", "engram_tables", "engram_dense", "dspark", "vision", "total"})
    std::printf("    %-16s %s\n", k, b(w[k]).c_str());
  const json& st = m["state"];
  std::printf("  per-sequence state: %s per token + %s fixed = %s per sequence at this context; %s for the batch\n",
              b(st["bytes_per_token"]).c_str(), b(st["fixed_bytes_per_sequence"]).c_str(), b(st["bytes_per_sequence"]).c_str(),
              b(st["bytes_total"]).c_str());
  const json& d = m["decode_read_per_token"];
  std::printf("  read per decoded token at full context: weights %s + cache %s = %s\n", b(d["weight_bytes"]).c_str(),
              b(d["cache_bytes"]).c_str(), b(d["total_bytes"]).c_str());
  std::printf("  resident total (weights + state): %s\n", b(m["resident_total_bytes"]).c_str());
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* sub = app.add_subcommand("inspect", "Report the architecture, parameter counts and memory plan of a model");
  auto* cfg = sub->add_option("--config", args->config_path, "a config.json (inference or Hugging Face style)")->check(CLI::ExistingFile);
  auto* mdl = sub->add_option("-m,--model", args->model_dir, "a model directory (validated against the manifest)")->check(CLI::ExistingDirectory);
  cfg->excludes(mdl);
  sub->add_flag("--json", args->as_json, "emit the report as JSON (keys in docs/inspect-json.md)");
  sub->add_option("-c,--ctx", args->ctx, "context length for the memory plan (default: the config's max_seq_len)")->check(CLI::PositiveNumber);
  sub->add_option("--batch", args->batch, "number of sequences for the memory plan")->check(CLI::PositiveNumber);
  add_command(sub, [args]() {
    if (args->config_path.empty() && args->model_dir.empty()) fail("inspect needs --config FILE or -m DIR");
    ModelConfig c = args->model_dir.empty() ? load_model_config(args->config_path) : load_model_config_dir(args->model_dir);
    json r = build_inspect_report(c, {args->ctx, args->batch});
    if (!args->model_dir.empty()) {
      ModelDirSummary s = validate_model_dir(args->model_dir, c);
      r["model_dir"] = {{"path", args->model_dir}, {"shards", s.shards}, {"tensors", s.tensors}, {"bytes", s.bytes}};
    }
    if (args->as_json) {
      std::printf("%s\n", r.dump(2).c_str());
    } else {
      render_text(r);
    }
    return 0;
  });
}

}  // namespace dsv4::cli
