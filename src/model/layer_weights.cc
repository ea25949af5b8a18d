// See layer_weights.h.
#include "model/layer_weights.h"

#include <fmt/format.h>

#include "model/model_weights.h"
#include "util/error.h"

namespace dsv4 {
namespace {

HcWeights load_hc(const ModelWeights& mw, const std::string& p, const char* which) {
  HcWeights h;
  const auto ref = mw.matrix(fmt::format("{}hc_{}_fn", p, which));
  h.fn = {static_cast<const float*>(ref.data), ref.rows * ref.cols};
  h.base = mw.floats(fmt::format("{}hc_{}_base", p, which));
  h.scale = mw.floats(fmt::format("{}hc_{}_scale", p, which));
  return h;
}

}  // namespace

LayerWeights LayerWeights::load(const ModelWeights& mw, const LayerRole& role,
                                const kernels::RopeTable* rope) {
  const ModelConfig& c = mw.config();
  const std::string p = role.prefix();
  LayerWeights w;
  w.role = &role;
  w.rope = rope;
  w.attn_sink = mw.floats(p + "attn.attn_sink");
  w.wq_a = mw.linear(p + "attn.wq_a");
  w.wq_b = mw.linear(p + "attn.wq_b");
  w.wkv = mw.linear(p + "attn.wkv");
  w.wo_a = mw.linear(p + "attn.wo_a");
  w.wo_b = mw.linear(p + "attn.wo_b");
  w.q_norm = mw.bf16(p + "attn.q_norm.weight");
  w.kv_norm = mw.bf16(p + "attn.kv_norm.weight");
  w.attn_norm = mw.bf16(p + "attn_norm.weight");
  w.ffn_norm = mw.bf16(p + "ffn_norm.weight");
  w.hc_attn = load_hc(mw, p, "attn");
  w.hc_ffn = load_hc(mw, p, "ffn");
  if (role.kv_source) {
    w.cmp_wkv = mw.matrix(p + "attn.compressor.wkv.weight");
    if (role.ratio > 1) w.cmp_wgate = mw.matrix(p + "attn.compressor.wgate.weight");
    w.cmp_norm = mw.bf16(p + "attn.compressor.norm.weight");
  }
  if (role.index_source) {
    w.idx_wq_b = mw.linear(p + "attn.indexer.wq_b");
    w.idx_weights_proj = mw.matrix(p + "attn.indexer.weights_proj.weight");
  }
  if (role.owns_index_keys) {
    w.idx_wk = mw.matrix(p + "attn.indexer.wk.weight");
    w.idx_k_norm = mw.bf16(p + "attn.indexer.k_norm.weight");
  }
  w.gate = mw.matrix(p + "ffn.gate.weight");
  w.gate_bias = mw.floats(p + "ffn.gate.bias");
  w.gate_bias_vl = mw.floats(p + "ffn.gate.bias_vl");
  const std::int64_t n_exp = role.is_mtp ? c.dspark_n_routed_experts : c.n_routed_experts;
  for (std::int64_t e = 0; e < n_exp; ++e) {
    const std::string ep = fmt::format("{}ffn.experts.{}.", p, e);
    w.experts.push_back({mw.linear(ep + "w1"), mw.linear(ep + "w2"), mw.linear(ep + "w3")});
  }
  if (c.n_shared_experts > 0) {
    const std::string sp = p + "ffn.shared_experts.";
    w.shared = ExpertWeights{mw.linear(sp + "w1"), mw.linear(sp + "w2"), mw.linear(sp + "w3")};
  }
  if (role.engram_index >= 0) {
    EngramWeights e;
    const TensorView& t = mw.tensor(p + "engram.embed.weight");
    e.table = t.bytes;
    e.rows = static_cast<std::size_t>(t.shape[0]);
    e.table_scale = mw.tensor(p + "engram.embed.scale").bytes;
    e.wkv = mw.linear(p + "engram.wkv");
    const auto q = mw.floats(p + "engram.q_weight"), k = mw.floats(p + "engram.k_weight");
    e.wgt.resize(q.size());
    // fp32(q)·fp32(k): exact (two bf16 significands fit in fp32).
    for (std::size_t i = 0; i < q.size(); ++i) e.wgt[i] = q[i] * k[i];
    w.engram = std::move(e);
  }
  return w;
}

}  // namespace dsv4
