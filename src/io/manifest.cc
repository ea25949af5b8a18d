#include "io/manifest.h"

#include <fmt/format.h>

#include "io/config.h"
#include "io/engram_layout.h"
#include "io/layer_roles.h"
#include "util/error.h"

namespace dsv4 {

std::string_view component_name(Component c) {
  switch (c) {
    case Component::AttnCore: return "attention";
    case Component::Compressor: return "compressor";
    case Component::IndexerQuery: return "indexer_query";
    case Component::IndexerKey: return "indexer_key";
    case Component::Gate: return "gate";
    case Component::RoutedExperts: return "routed_experts";
    case Component::SharedExpert: return "shared_expert";
    case Component::Norms: return "norms";
    case Component::HyperConnections: return "hyper_connections";
    case Component::EngramDense: return "engram_dense";
    case Component::EngramTable: return "engram_table";
    case Component::Embed: return "embed";
    case Component::Head: return "head";
    case Component::FinalNorm: return "final_norm";
    case Component::DSparkExtra: return "dspark_extra";
    case Component::Vision: return "vision";
    case Component::ImageDelims: return "image_delims";
  }
  return "?";
}

std::int64_t TensorSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::uint64_t TensorSpec::bytes() const { return static_cast<std::uint64_t>(numel()) * dtype_size(dtype); }

std::int64_t TensorSpec::params() const {
  if (is_scale) return 0;
  return dtype == DType::I8 ? 2 * numel() : numel();
}

const TensorSpec* Manifest::find(std::string_view name) const {
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : &tensors[it->second];
}

std::uint64_t Manifest::total_bytes() const {
  std::uint64_t s = 0;
  for (const auto& t : tensors) s += t.bytes();
  return s;
}

std::int64_t Manifest::total_params() const {
  std::int64_t s = 0;
  for (const auto& t : tensors) s += t.params();
  return s;
}

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

class Builder {
 public:
  explicit Builder(Manifest& m) : m_(m) {}

  void add(std::string name, DType dt, std::vector<std::int64_t> shape, Component c, std::int64_t layer,
           bool is_scale = false, std::int64_t expert = -1) {
    if (m_.by_name.count(name)) fail("manifest: tensor '{}' generated twice (internal error)", name);
    m_.by_name.emplace(name, m_.tensors.size());
    m_.tensors.push_back({std::move(name), dt, std::move(shape), c, layer, is_scale, expert});
  }
  // An FP8 linear: E4M3 weight [out, in] + E8M0 scale over 32×32 blocks (spec §2.5).
  void fp8(const std::string& base, std::int64_t out, std::int64_t in, Component c, std::int64_t layer,
           std::int64_t expert = -1) {
    add(base + ".weight", DType::F8_E4M3, {out, in}, c, layer, false, expert);
    add(base + ".scale", DType::F8_E8M0, {ceil_div(out, 32), ceil_div(in, 32)}, c, layer, true, expert);
  }
  // An FP4 linear: E2M1 packed two per byte as I8 [out, in/2] + E8M0 scale per row per 32 columns.
  void fp4(const std::string& base, std::int64_t out, std::int64_t in, Component c, std::int64_t layer,
           std::int64_t expert) {
    add(base + ".weight", DType::I8, {out, in / 2}, c, layer, false, expert);
    add(base + ".scale", DType::F8_E8M0, {out, in / 32}, c, layer, true, expert);
  }

 private:
  Manifest& m_;
};

// The tensors every block has: attention core, norms, hyper-connections, gate, experts.
void add_block(Builder& b, const ModelConfig& c, const LayerRole& r) {
  const std::string p = r.prefix();
  const std::int64_t L = r.id, d = c.dim;
  const Component A = Component::AttnCore;
  b.add(p + "attn.attn_sink", DType::F32, {c.n_heads}, A, L);
  b.fp8(p + "attn.wq_a", c.q_lora_rank, d, A, L);
  b.add(p + "attn.q_norm.weight", DType::BF16, {c.q_lora_rank}, A, L);
  b.fp8(p + "attn.wq_b", c.n_heads * c.head_dim, c.q_lora_rank, A, L);
  b.fp8(p + "attn.wkv", c.head_dim, d, A, L);
  b.add(p + "attn.kv_norm.weight", DType::BF16, {c.head_dim}, A, L);
  b.fp8(p + "attn.wo_a", c.o_groups * c.o_lora_rank, c.n_heads / c.o_groups * c.head_dim, A, L);
  b.fp8(p + "attn.wo_b", d, c.o_groups * c.o_lora_rank, A, L);

  if (r.kv_source) {
    b.add(p + "attn.compressor.norm.weight", DType::BF16, {c.head_dim}, Component::Compressor, L);
    b.add(p + "attn.compressor.wkv.weight", DType::BF16, {c.head_dim, d}, Component::Compressor, L);
    if (r.ratio > 1) b.add(p + "attn.compressor.wgate.weight", DType::BF16, {c.head_dim, d}, Component::Compressor, L);
  }
  if (r.index_source) {
    b.fp8(p + "attn.indexer.wq_b", c.index_n_heads * c.index_head_dim, c.q_lora_rank, Component::IndexerQuery, L);
    b.add(p + "attn.indexer.weights_proj.weight", DType::BF16, {c.index_n_heads, d}, Component::IndexerQuery, L);
  }
  if (r.owns_index_keys) {
    b.add(p + "attn.indexer.wk.weight", DType::BF16, {c.index_head_dim, c.head_dim}, Component::IndexerKey, L);
    b.add(p + "attn.indexer.k_norm.weight", DType::BF16, {c.index_head_dim}, Component::IndexerKey, L);
  }

  const std::int64_t n_exp = r.is_mtp ? c.dspark_n_routed_experts : c.n_routed_experts;
  b.add(p + "ffn.gate.weight", DType::BF16, {n_exp, d}, Component::Gate, L);
  b.add(p + "ffn.gate.bias", DType::F32, {n_exp}, Component::Gate, L);
  b.add(p + "ffn.gate.bias_vl", DType::F32, {n_exp}, Component::Gate, L);
  const std::int64_t inter = c.moe_inter_dim;
  for (std::int64_t e = 0; e < n_exp; ++e) {
    const std::string ep = fmt::format("{}ffn.experts.{}.", p, e);
    if (c.fp4_experts()) {
      b.fp4(ep + "w1", inter, d, Component::RoutedExperts, L, e);
      b.fp4(ep + "w2", d, inter, Component::RoutedExperts, L, e);
      b.fp4(ep + "w3", inter, d, Component::RoutedExperts, L, e);
    } else {
      b.fp8(ep + "w1", inter, d, Component::RoutedExperts, L, e);
      b.fp8(ep + "w2", d, inter, Component::RoutedExperts, L, e);
      b.fp8(ep + "w3", inter, d, Component::RoutedExperts, L, e);
    }
  }
  if (c.n_shared_experts > 0) {
    const std::int64_t si = inter * c.n_shared_experts;
    b.fp8(p + "ffn.shared_experts.w1", si, d, Component::SharedExpert, L);
    b.fp8(p + "ffn.shared_experts.w2", d, si, Component::SharedExpert, L);
    b.fp8(p + "ffn.shared_experts.w3", si, d, Component::SharedExpert, L);
  }
  b.add(p + "attn_norm.weight", DType::BF16, {d}, Component::Norms, L);
  b.add(p + "ffn_norm.weight", DType::BF16, {d}, Component::Norms, L);
  const std::int64_t mix = (2 + c.hc_mult) * c.hc_mult;
  for (const char* s : {"attn", "ffn"}) {
    b.add(fmt::format("{}hc_{}_fn", p, s), DType::F32, {mix, c.hc_mult * d}, Component::HyperConnections, L);
    b.add(fmt::format("{}hc_{}_base", p, s), DType::F32, {mix}, Component::HyperConnections, L);
    b.add(fmt::format("{}hc_{}_scale", p, s), DType::F32, {3}, Component::HyperConnections, L);
  }
}

void add_engram(Builder& b, const ModelConfig& c, const LayerRole& r, std::int64_t rows) {
  const std::string p = r.prefix() + "engram.";
  const std::int64_t L = r.id, hd = c.engram_head_dim;
  b.add(p + "embed.weight", DType::F8_E4M3, {rows, hd}, Component::EngramTable, L);
  b.add(p + "embed.scale", DType::F8_E8M0, {rows, hd / 32}, Component::EngramTable, L, true);
  const std::int64_t in = (c.engram_max_ngram_size - 1) * c.engram_n_heads * hd;
  b.fp8(p + "wkv", c.dim * (c.hc_mult + 1), in, Component::EngramDense, L);
  b.add(p + "q_weight", DType::BF16, {c.hc_mult, c.dim}, Component::EngramDense, L);
  b.add(p + "k_weight", DType::BF16, {c.hc_mult, c.dim}, Component::EngramDense, L);
}

void add_vision(Builder& b, const ModelConfig& c) {
  const std::int64_t vd = c.vision_dim, p = c.vision_patch_size, r = c.vision_downsample_ratio;
  const Component V = Component::Vision;
  b.add("vision.patch_embed.proj.weight", DType::BF16, {vd, 3 * p * p}, V, -1);
  b.add("vision.patch_embed.proj.bias", DType::BF16, {vd}, V, -1);
  for (std::int64_t i = 0; i < c.vision_n_layers; ++i) {
    const std::string q = fmt::format("vision.blocks.{}.", i);
    b.add(q + "norm1.weight", DType::BF16, {vd}, V, -1);
    b.add(q + "attn.wqkv.weight", DType::BF16, {3 * vd, vd}, V, -1);
    b.add(q + "attn.wqkv.bias", DType::BF16, {3 * vd}, V, -1);
    b.add(q + "attn.wo.weight", DType::BF16, {vd, vd}, V, -1);
    b.add(q + "attn.wo.bias", DType::BF16, {vd}, V, -1);
    b.add(q + "norm2.weight", DType::BF16, {vd}, V, -1);
    b.add(q + "mlp.w1.weight", DType::BF16, {2 * c.vision_inter_dim, vd}, V, -1);
    b.add(q + "mlp.w2.weight", DType::BF16, {vd, c.vision_inter_dim}, V, -1);
  }
  b.add("vision.norm.weight", DType::BF16, {vd}, V, -1);
  b.add("aligner.w1.weight", DType::BF16, {c.dim, vd * r * r}, V, -1);
  b.add("aligner.w1.bias", DType::BF16, {c.dim}, V, -1);
  b.add("aligner.w2.weight", DType::BF16, {c.dim, c.dim}, V, -1);
  b.add("aligner.w2.bias", DType::BF16, {c.dim}, V, -1);
}

}  // namespace

Manifest build_manifest(const ModelConfig& c) {
  c.validate();
  Manifest m;
  Builder b(m);
  b.add("embed.weight", DType::BF16, {c.vocab_size, c.dim}, Component::Embed, -1);
  b.add("head.weight", DType::BF16, {c.vocab_size, c.dim}, Component::Head, -1);
  b.add("norm.weight", DType::BF16, {c.dim}, Component::FinalNorm, -1);
  if (c.has_vision())
    for (const char* n : {"image_start", "image_end", "image_newline"})
      b.add(n, DType::BF16, {c.dim}, Component::ImageDelims, -1);

  const EngramLayout engram = engram_layout(c);
  for (const LayerRole& r : layer_roles(c)) {
    if (r.engram_index >= 0) add_engram(b, c, r, engram.layers[r.engram_index].rows);
    add_block(b, c, r);
    if (r.is_mtp && r.mtp_stage == 0) {
      const std::int64_t n_targets = static_cast<std::int64_t>(c.dspark_target_layer_ids.size());
      b.fp8(r.prefix() + "main_proj", c.dim, n_targets * c.dim, Component::DSparkExtra, r.id);
      b.add(r.prefix() + "main_norm.weight", DType::BF16, {c.dim}, Component::DSparkExtra, r.id);
    }
    if (r.is_mtp && r.mtp_stage == c.n_mtp_layers - 1) {
      const std::string p = r.prefix();
      b.add(p + "norm.weight", DType::BF16, {c.dim}, Component::DSparkExtra, r.id);
      b.add(p + "markov_head.embed.weight", DType::BF16, {c.vocab_size, c.dspark_markov_rank}, Component::DSparkExtra, r.id);
      b.add(p + "markov_head.head.weight", DType::BF16, {c.vocab_size, c.dspark_markov_rank}, Component::DSparkExtra, r.id);
      b.add(p + "confidence_head.proj.weight", DType::BF16, {1, c.dim + c.dspark_markov_rank}, Component::DSparkExtra, r.id);
    }
  }
  if (c.has_vision()) add_vision(b, c);
  return m;
}

}  // namespace dsv4
