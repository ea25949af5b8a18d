// Model::forward_spec — the DSpark draft head (spec §9), exactly as §9.1–9.4 define it. Only the
// forward exists here (as in the reference); the drafting / verification loop is separate work.
//
// Driving it (§9.5): after each main call, pass the token just chosen; the sequence holds that
// call's captured hiddens. A prefill at 0 of S tokens → forward_spec(seq, next, 0) seeds each
// stage's ring with S main_kv rows; a decode step at p → forward_spec(seq, next, p) drafts.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernels/attention_fast.h"
#include "kernels/hyper_connections.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/sparse_attention.h"
#include "model/attention.h"
#include "model/model.h"
#include "numeric/bf16.h"
#include "util/error.h"

namespace dsv4 {
namespace {

// §9.3 for start_pos > 0: draft positions P_i = start_pos + 1 + i; kv = ring [W rows] ++ the
// draft rows; every draft query lists ring slots 0 .. min(W, start_pos + 1) − 1 in SLOT order,
// then the draft rows (bidirectional inside the block).
void dspark_attention(const ForwardContext& ctx, const LayerWeights& w, LayerCache& ring,
                      std::span<const float> x, std::size_t B, std::int64_t start_pos,
                      std::span<const float> main_x, std::span<float> out) {
  const ModelConfig& c = ctx.cfg;
  const auto H = static_cast<std::size_t>(c.n_heads), D = static_cast<std::size_t>(c.head_dim);
  const auto W = static_cast<std::size_t>(c.window_size);
  std::vector<std::int64_t> P(B);
  for (std::size_t i = 0; i < B; ++i) P[i] = start_pos + 1 + static_cast<std::int64_t>(i);
  std::vector<float> qr(B * static_cast<std::size_t>(c.q_lora_rank)), q(B * H * D);
  project_q(ctx, w, x, B, P, qr, q);
  std::vector<float> kv_d(B * D);
  project_window_kv(ctx, w, x, B, P, kv_d);
  const std::int64_t mpos[1] = {start_pos};
  std::vector<float> mkv(D);
  project_window_kv(ctx, w, main_x, 1, mpos, mkv);
  ring_write(ring, mkv, mpos, W, D);
  std::vector<std::uint16_t> rows = ring.win_kv;  // bf16 bits, as the ring holds them
  rows.resize(ring.win_kv.size() + kv_d.size());
  pack_bf16_rows(kv_d, rows.data() + ring.win_kv.size(), "draft window kv");
  const std::size_t n_ring = std::min<std::size_t>(W, static_cast<std::size_t>(start_pos) + 1);
  const std::size_t K = n_ring + B;
  std::vector<std::int32_t> idx(B * K);
  for (std::size_t s = 0; s < B; ++s) {
    for (std::size_t a = 0; a < n_ring; ++a) idx[s * K + a] = static_cast<std::int32_t>(a);
    for (std::size_t a = 0; a < B; ++a) idx[s * K + n_ring + a] = static_cast<std::int32_t>(W + a);
  }
  std::vector<float> o(B * H * D);
  const float scale = static_cast<float>(std::pow(static_cast<double>(D), -0.5));
  if (ctx.opt.numerics == kernels::Numerics::kFast)
    kernels::sparse_attn_fast(q, {rows.data(), rows.size() / D, nullptr, 0}, w.attn_sink, idx, scale, {B, H, D, K}, o,
                              ctx.pool);
  else {
    std::vector<float> rows_f(rows.size());
    unpack_bf16(rows.data(), rows.size(), rows_f.data());
    kernels::sparse_attn(q, rows_f, w.attn_sink, idx, scale, {B, H, D, rows.size() / D, K}, o);
  }
  kernels::apply_rope(o, H, D, *w.rope, P, /*inverse=*/true);
  output_projection(ctx, w, o, B, out);
}

}  // namespace

SpecOutput Model::forward_spec(SequenceState& seq, std::int64_t input_id, std::int64_t start_pos,
                               Dump* dump) {
  const ModelConfig& c = config();
  if (stages_.empty()) fail("the model has no DSpark stages (n_mtp_layers = 0)");
  if (seq.main_hidden_rows == 0) fail("forward_spec: run the main forward first (no captured hiddens)");
  if (input_id < 0 || input_id >= c.vocab_size) fail("token id {} is out of range 0..{}", input_id, c.vocab_size - 1);
  const std::size_t Sm = seq.main_hidden_rows;
  if (start_pos > 0 && Sm != 1)
    fail("forward_spec at start_pos > 0 takes the hidden of ONE main position, got {} (spec §9.3, §9.5)", Sm);
  const auto B = static_cast<std::size_t>(c.dspark_block_size);
  const std::int64_t last = start_pos + static_cast<std::int64_t>(std::max(Sm - 1, B));
  if (static_cast<std::size_t>(last) >= max_positions_ + B + 1)
    fail("DSpark position {} is beyond the RoPE tables", last);
  ForwardContext ctx{c, opts_.forward, pool_.get(), dump};
  const auto dim = static_cast<std::size_t>(c.dim), hc = static_cast<std::size_t>(c.hc_mult);
  const LayerWeights& st0 = stages_.front();
  const std::string p0 = st0.role->prefix();
  // §9.1 step 1: main_x = main_norm(main_proj(main_hidden)); the draft block's embeddings.
  std::vector<float> main_x(Sm * dim);
  kernels::linear(seq.main_hidden, Sm, weights_->linear(p0 + "main_proj"), main_x, ctx.lin());
  kernels::rmsnorm(main_x, weights_->bf16(p0 + "main_norm.weight"), c.norm_eps, main_x, Sm);
  ctx.dump_f32("dspark.main_x", {static_cast<std::int64_t>(Sm), static_cast<std::int64_t>(dim)}, main_x.data());
  std::vector<std::int64_t> ids(B, c.dspark_noise_token_id);
  ids[0] = input_id;
  std::vector<float> X_buf(B * hc * dim), X_alt_buf(B * hc * dim);
  std::span<float> X = X_buf, X_alt = X_alt_buf;
  embed(ids, X);
  std::vector<float> pre(B * hc, 0.0f);
  for (std::size_t t = 0; t < B; ++t) pre[t * hc] = 1.0f;
  const auto W = static_cast<std::size_t>(c.window_size), D = static_cast<std::size_t>(c.head_dim);
  for (std::size_t s = 0; s < stages_.size(); ++s) {
    const LayerWeights& w = stages_[s];
    LayerCache& ring = seq.dspark[s];
    if (start_pos == 0) {  // §9.2: only seed the ring from the prefill's hiddens
      std::vector<std::int64_t> pos(Sm);
      for (std::size_t i = 0; i < Sm; ++i) pos[i] = static_cast<std::int64_t>(i);
      std::vector<float> mkv(Sm * D);
      project_window_kv(ctx, w, main_x, Sm, pos, mkv);
      ring_write(ring, mkv, pos, W, D);
      continue;
    }
    auto attn = [&](std::span<const float> a_in, std::span<float> a_out) {
      dspark_attention(ctx, w, ring, a_in, B, start_pos, main_x, a_out);
    };
    const std::string tag = fmt::format("D{}.", s);
    block(ctx, w, B, X, X_alt, pre, {}, attn, tag);
  }
  if (start_pos == 0) return {};

  // §9.4 forward_head.
  const LayerWeights& lastw = stages_.back();
  const std::string pl = lastw.role->prefix();
  std::vector<float> z(B * dim), zn(B * dim);
  kernels::hc_pre(X, pre, B, hc, dim, z);
  kernels::rmsnorm(z, weights_->bf16(pl + "norm.weight"), c.norm_eps, zn, B);
  const auto V = static_cast<std::size_t>(c.vocab_size);
  SpecOutput out;
  out.logits.resize(B * V);
  auto lin = ctx.lin();
  lin.f32_output = true;
  kernels::linear(zn, B, weights_->matrix("head.weight"), out.logits, lin);
  const auto rank = static_cast<std::size_t>(c.dspark_markov_rank);
  const std::span<const BF16> emb = weights_->bf16(pl + "markov_head.embed.weight");
  const kernels::WeightRef mhead = weights_->matrix(pl + "markov_head.head.weight");
  out.ids.push_back(input_id);
  std::vector<float> E(B * rank), bias(V);
  for (std::size_t i = 0; i < B; ++i) {
    const auto tok = static_cast<std::size_t>(out.ids[i]);
    for (std::size_t r = 0; r < rank; ++r) E[i * rank + r] = bf16_to_f32(emb[tok * rank + r]);
    kernels::linear(std::span<const float>(E.data() + i * rank, rank), 1, mhead, bias, lin);
    float* lg = out.logits.data() + i * V;
    std::size_t best = 0;
    for (std::size_t v = 0; v < V; ++v) {
      lg[v] = lg[v] + bias[v];
      if (lg[v] > lg[best]) best = v;  // greedy, lowest index on ties
    }
    out.ids.push_back(static_cast<std::int64_t>(best));
  }
  std::vector<float> zc(B * (dim + rank));
  for (std::size_t i = 0; i < B; ++i) {
    std::copy_n(z.begin() + static_cast<std::ptrdiff_t>(i * dim), dim, zc.begin() + static_cast<std::ptrdiff_t>(i * (dim + rank)));
    std::copy_n(E.begin() + static_cast<std::ptrdiff_t>(i * rank), rank, zc.begin() + static_cast<std::ptrdiff_t>(i * (dim + rank) + dim));
  }
  out.confidence.resize(B);
  kernels::linear(zc, B, weights_->matrix(pl + "confidence_head.proj.weight"), out.confidence, lin);
  ctx.dump_f32("dspark.z", {static_cast<std::int64_t>(B), static_cast<std::int64_t>(dim)}, z.data());
  ctx.dump_f32("dspark.logits", {static_cast<std::int64_t>(B), static_cast<std::int64_t>(V)}, out.logits.data());
  ctx.dump_f32("dspark.confidence", {static_cast<std::int64_t>(B)}, out.confidence.data());
  return out;
}

}  // namespace dsv4
