// See model.h. The top-level forward (spec §4) and the block with its hyper-connections (§5).
#include "model/model.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "kernels/hyper_connections.h"
#include "kernels/rmsnorm.h"
#include "kernels/strict_dot.h"
#include "model/attention.h"
#include "model/moe.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4 {

std::unique_ptr<Model> Model::load(const std::string& dir, const ModelOptions& opts) {
  std::unique_ptr<Model> m(new Model());
  m->opts_ = opts;
  auto progress = [&](std::string_view stage, std::size_t done, std::size_t total) {
    if (opts.progress) opts.progress(stage, done, total);
  };
  progress("checkpoint", 0, 1);
  m->weights_ = ModelWeights::open(dir);
  progress("checkpoint", 1, 1);
  m->pool_ = std::make_unique<ThreadPool>(opts.threads);
  const ModelConfig& c = m->weights_->config();
  m->final_norm_ = m->weights_->bf16("norm.weight");
  m->head_ = m->weights_->matrix("head.weight");
  m->max_positions_ = opts.max_positions ? opts.max_positions : static_cast<std::size_t>(c.max_seq_len);
  // RoPE tables (§2.8), one per (base, YaRN); DSpark reads up to start_pos + block_size.
  const std::size_t n_pos = m->max_positions_ + static_cast<std::size_t>(c.dspark_block_size) + 1;
  std::vector<std::pair<double, bool>> keys;
  for (const LayerRole& r : m->weights_->roles()) {
    const std::pair<double, bool> key{r.rope_base, r.yarn};
    std::size_t i = 0;
    while (i < keys.size() && keys[i] != key) ++i;
    if (i == keys.size()) {
      kernels::RopeParams p;
      p.dim = static_cast<std::size_t>(c.rope_head_dim);
      p.base = r.rope_base;
      p.yarn = r.yarn;
      p.original_seq_len = c.original_seq_len;
      p.factor = c.rope_factor;
      p.beta_fast = c.beta_fast;
      p.beta_slow = c.beta_slow;
      keys.push_back(key);
      m->ropes_.push_back(std::make_unique<kernels::RopeTable>(kernels::rope_table(p, n_pos)));
    }
    (r.is_mtp ? m->stages_ : m->layers_).push_back(LayerWeights::load(*m->weights_, r, m->ropes_[i].get()));
    progress("layers", m->layers_.size() + m->stages_.size(), m->weights_->roles().size());
  }
  if (c.has_engram()) {
    const std::string tok = (std::filesystem::path(dir) / "tokenizer.json").string();
    if (!std::filesystem::exists(tok))
      fail("{}: the model has Engram layers, which need tokenizer.json for the compressed token map "
           "(spec §8.2)", tok);
    progress("engram map", 0, 1);
    m->engram_map_ = std::make_unique<EngramTokenMap>(build_engram_token_map(tok));
    progress("engram map", 1, 1);
    m->hasher_ = std::make_unique<EngramHasher>(c, *m->engram_map_);
  }
  return m;
}

std::unique_ptr<SequenceState> Model::new_sequence(std::size_t max_len) const {
  if (max_len == 0) max_len = max_positions_;
  if (max_len > max_positions_)
    fail("context {} exceeds the model's {} positions (RoPE tables; raise max positions)", max_len,
         max_positions_);
  return std::make_unique<SequenceState>(config(), weights_->roles(), max_len);
}

void Model::check_call(const SequenceState& seq, std::span<const std::int64_t> ids) const {
  const ModelConfig& c = config();
  if (ids.empty()) fail("forward needs at least one token");
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c.vocab_size)
      fail("token id {} at index {} is out of range 0..{}", ids[i], i, c.vocab_size - 1);
  const std::int64_t end = seq.pos() + static_cast<std::int64_t>(ids.size());
  if (end > static_cast<std::int64_t>(seq.max_len()))
    fail("context overflow: positions up to {} exceed the sequence's context of {} tokens", end - 1,
         seq.max_len());
  if (opts_.forward.attn_slots == AttnSlots::kReference && !(seq.pos() == 0 || ids.size() == 1))
    fail("--attn-slots reference reproduces the reference's slot lists, which exist only for a "
         "prefill at position 0 and decode (one token); chunked prefill ({} tokens at {}) needs "
         "--attn-slots compact", ids.size(), seq.pos());
}

void Model::embed(std::span<const std::int64_t> ids, std::span<float> X) const {
  const ModelConfig& c = config();
  const auto dim = static_cast<std::size_t>(c.dim), hc = static_cast<std::size_t>(c.hc_mult);
  const std::span<const BF16> table = weights_->bf16("embed.weight");
  if (X.size() != ids.size() * hc * dim) fail("embed: X has {} elements, expected {}", X.size(), ids.size() * hc * dim);
  for (std::size_t t = 0; t < ids.size(); ++t)
    for (std::size_t ci = 0; ci < hc; ++ci)
      for (std::size_t d = 0; d < dim; ++d)
        X[(t * hc + ci) * dim + d] = bf16_to_f32(table[static_cast<std::size_t>(ids[t]) * dim + d]);
}

std::vector<float> Model::forward(SequenceState& seq, std::span<const std::int64_t> ids, Dump* dump) {
  const BatchItem item{&seq, ids};
  return std::move(run_split({&item, 1}, dump)[0]);
}

std::vector<float> Model::forward_last(SequenceState& seq, std::span<const std::int64_t> ids) {
  const BatchItem item{&seq, ids, LogitRows::kLast};
  return std::move(run_split({&item, 1}, nullptr)[0]);
}

std::vector<float> Model::forward_compare_fast(SequenceState& seq, std::span<const std::int64_t> ids,
                                              std::vector<double>& rel_err) {
  const BatchItem item{&seq, ids};
  rel_err.clear();
  return std::move(run_split({&item, 1}, nullptr, &rel_err)[0]);
}

std::vector<std::vector<float>> Model::forward_batch(std::span<const BatchItem> items) {
  return run_split(items, nullptr);
}

void Model::forward_batch_into(std::span<const BatchItem> items, std::span<float> logits) {
  run(items, nullptr, nullptr, logits);
}

std::size_t Model::logit_rows(std::span<const BatchItem> items) {
  std::size_t n = 0;
  for (const BatchItem& it : items) n += it.logits == LogitRows::kLast ? 1 : it.ids.size();
  return n;
}

std::vector<std::vector<float>> Model::run_split(std::span<const BatchItem> items, Dump* dump,
                                                 std::vector<double>* rel_err) {
  const auto V = static_cast<std::size_t>(config().vocab_size);
  std::vector<float> all(logit_rows(items) * V);
  run(items, dump, rel_err, all);
  std::vector<std::vector<float>> out(items.size());
  std::size_t r = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::size_t n = logit_rows(items.subspan(i, 1));
    out[i].assign(all.begin() + static_cast<std::ptrdiff_t>(r * V), all.begin() + static_cast<std::ptrdiff_t>((r + n) * V));
    r += n;
  }
  return out;
}

void Model::block(const ForwardContext& ctx, const LayerWeights& w, std::size_t N, std::span<float>& X,
                  std::span<float>& X_alt, std::span<float> pre, std::span<const std::uint8_t> image,
                  AttnFn attn, std::string_view tag) const {
  const ModelConfig& c = ctx.cfg;
  const auto dim = static_cast<std::size_t>(c.dim), hc = static_cast<std::size_t>(c.hc_mult);
  kernels::HcParams hp;
  hp.hc = hc;
  hp.iters = static_cast<int>(c.hc_sinkhorn_iters);
  hp.eps = c.hc_eps;
  ScratchFrame frame;
  const std::span<float> pre_a = frame.zeros<float>(N * hc), post_a = frame.zeros<float>(N * hc),
                         comb_a = frame.zeros<float>(N * hc * hc);
  const std::span<float> pre_f = frame.zeros<float>(N * hc), post_f = frame.zeros<float>(N * hc),
                         comb_f = frame.zeros<float>(N * hc * hc);
  const std::span<float> h = frame.zeros<float>(N * dim), y = frame.zeros<float>(N * dim);
  // The §5 ops on X in the call's numerics (fast: fixed-order arithmetic split over tokens).
  const bool fast = ctx.opt.numerics == kernels::Numerics::kFast;
  auto hc_mixes = [&](const auto& hw, std::span<float> p, std::span<float> q, std::span<float> cb) {
    if (fast) kernels::hc_mixes_fast(X, hw.fn, hw.scale, hw.base, c.norm_eps, N, dim, hp, p, q, cb, ctx.pool);
    else kernels::hc_mixes(X, hw.fn, hw.scale, hw.base, c.norm_eps, N, dim, hp, p, q, cb);
  };
  auto hc_pre = [&](std::span<const float> p, std::span<float> out) {
    if (fast) kernels::hc_pre_fast(X, p, N, hc, dim, out, ctx.pool);
    else kernels::hc_pre(X, p, N, hc, dim, out);
  };
  auto hc_post = [&](std::span<const float> q, std::span<const float> cb) {  // X ← post-mix(y, X)
    if (fast) kernels::hc_post_fast(y, X, q, cb, N, hc, dim, X_alt, ctx.pool);
    else kernels::hc_post(y, X, q, cb, N, hc, dim, X_alt);
    std::swap(X, X_alt);
  };
  // Attention sublayer: its input uses the previous block's FFN pre (delayed pre-mix, §5.4).
  {
    OpTimer t(ctx, "hc");
    hc_mixes(w.hc_attn, pre_a, post_a, comb_a);
    hc_pre(pre, h);
  }
  {
    OpTimer t(ctx, "norm");
    kernels::rmsnorm(h, w.attn_norm, c.norm_eps, h, N, ctx.pool);
  }
  ctx.dump_f32(tag, "attn_in", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(dim)}, h.data());
  {
    OpTimer t(ctx, "attention");
    attn(h, y);
  }
  ctx.dump_f32(tag, "attn_out", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(dim)}, y.data());
  {
    OpTimer t(ctx, "hc");
    hc_post(post_a, comb_a);
    // FFN sublayer: its input uses this block's attention pre.
    hc_mixes(w.hc_ffn, pre_f, post_f, comb_f);
    hc_pre(pre_a, h);
  }
  {
    OpTimer t(ctx, "norm");
    kernels::rmsnorm(h, w.ffn_norm, c.norm_eps, h, N, ctx.pool);
  }
  std::vector<std::int64_t> idx;
  std::vector<float> wts;
  {
    OpTimer t(ctx, "moe");
    moe_forward(ctx, w, h, N, image, y, ctx.dump ? &idx : nullptr, ctx.dump ? &wts : nullptr);
  }
  if (ctx.dump) {
    const auto k = static_cast<std::int64_t>(idx.size() / N);
    ctx.dump_f32(tag, "ffn_in", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(dim)}, h.data());
    ctx.dump_i64(tag, "moe_idx", {static_cast<std::int64_t>(N), k}, idx.data());
    ctx.dump_f32(tag, "moe_wts", {static_cast<std::int64_t>(N), k}, wts.data());
    ctx.dump_f32(tag, "moe_out", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(dim)}, y.data());
    ctx.dump_f32(tag, "hc_attn_pre", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(hc)}, pre_a.data());
    ctx.dump_f32(tag, "hc_ffn_pre", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(hc)}, pre_f.data());
  }
  {
    OpTimer t(ctx, "hc");
    hc_post(post_f, comb_f);
  }
  std::copy(pre_f.begin(), pre_f.end(), pre.begin());
  ctx.dump_f32(tag, "out", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(hc), static_cast<std::int64_t>(dim)}, X.data());
}

void Model::run(std::span<const BatchItem> items, Dump* dump, std::vector<double>* rel_err,
                std::span<float> logits) {
  const ModelConfig& c = config();
  if (items.empty()) return;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].seq == nullptr) fail("batch item {} has no sequence", i);
    for (std::size_t j = 0; j < i; ++j)
      if (items[j].seq == items[i].seq) fail("batch items {} and {} feed the same sequence", j, i);
    check_call(*items[i].seq, items[i].ids);
  }
  const auto V = static_cast<std::size_t>(c.vocab_size);
  const std::size_t NL = logit_rows(items);
  if (logits.size() != NL * V) fail("forward: the logits buffer has {} floats, expected {} rows × {}", logits.size(), NL, V);
  ForwardContext ctx{c, opts_.forward, pool_.get(), items.size() == 1 ? dump : nullptr, profile_};
  const auto dim = static_cast<std::size_t>(c.dim), hc = static_cast<std::size_t>(c.hc_mult);
  // Every temporary of the call lives in this frame (no heap allocation once the arena is warm).
  ScratchFrame frame;
  // Rows of the batch: item i owns rows [row0[i], row0[i] + S_i).
  const std::span<std::size_t> row0 = frame.zeros<std::size_t>(items.size() + 1);
  for (std::size_t i = 0; i < items.size(); ++i) row0[i + 1] = row0[i] + items[i].ids.size();
  const std::size_t N = row0.back();
  const std::span<std::int64_t> all_ids = frame.uninit<std::int64_t>(N);
  for (std::size_t i = 0; i < items.size(); ++i) std::copy(items[i].ids.begin(), items[i].ids.end(), all_ids.begin() + static_cast<std::ptrdiff_t>(row0[i]));

  // §4 steps 1–2: Engram hashes per sequence (text only: no image mask yet).
  std::span<std::int64_t> hashes;
  std::size_t cols = 0, n_eng = 0;
  if (hasher_) {
    OpTimer t(ctx, "engram hash");
    cols = hasher_->columns();
    n_eng = hasher_->layers();
    hashes = frame.zeros<std::int64_t>(N * n_eng * cols);
    for (std::size_t i = 0; i < items.size(); ++i)
      hasher_->hash(items[i].seq->engram_ids, items[i].ids, items[i].seq->pos(), {},
                    hashes.subspan(row0[i] * n_eng * cols, items[i].ids.size() * n_eng * cols));
  }
  // Steps 3, 5, 6. X and X_alt are the two residual buffers the layers alternate between.
  std::span<float> X = frame.uninit<float>(N * hc * dim), X_alt = frame.uninit<float>(N * hc * dim);
  {
    OpTimer t(ctx, "embed");
    embed(all_ids, X);
  }
  const std::span<float> pre = frame.zeros<float>(N * hc);
  for (std::size_t t = 0; t < N; ++t) pre[t * hc] = 1.0f;
  if (ctx.dump) {  // the embedding rows (copy 0 of each token)
    std::vector<float> e(N * dim);
    for (std::size_t t = 0; t < N; ++t) std::copy_n(X.begin() + static_cast<std::ptrdiff_t>(t * hc * dim), dim, e.begin() + static_cast<std::ptrdiff_t>(t * dim));
    ctx.dump_f32("embed", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(dim)}, e.data());
  }

  // The hand-offs between layers persist per sequence (their vectors keep their capacity).
  for (const BatchItem& it : items) it.seq->handoff.reset(static_cast<std::size_t>(c.n_layers));
  // The DSpark target hiddens (step 7b), written straight into each sequence's main_hidden
  // [S, n_targets · dim] (step 11; the vectors keep their capacity from call to call).
  std::size_t n_targets = 0, max_targets = 0;
  for (const LayerWeights& w : layers_) max_targets += w.role->dspark_target ? 1 : 0;
  for (const BatchItem& it : items) {
    it.seq->main_hidden.resize(it.ids.size() * max_targets * dim);
    it.seq->main_hidden_rows = 0;  // (set once every target has been written)
  }
  // One layer (Engram before the block, then the block) on X / pre with the given context,
  // sequences and hand-offs.
  auto layer = [&](const ForwardContext& lc, const LayerWeights& w, std::span<float>& X, std::span<float>& X_alt,
                   std::span<float> pre, std::span<SequenceState* const> seqs, std::span<Handoff* const> hands,
                   bool capture) {
    const LayerRole& role = *w.role;
    char tag_buf[24];
    const auto tag_end = fmt::format_to_n(tag_buf, sizeof tag_buf, "L{}.", role.id);
    const std::string_view tag(tag_buf, tag_end.out);
    const ForwardContext& ctx = lc;
    if (role.engram_index >= 0) {  // step 7a
      ScratchFrame lf;
      const std::span<std::int64_t> hl = lf.uninit<std::int64_t>(N * cols);
      for (std::size_t t = 0; t < N; ++t)
        std::copy_n(hashes.begin() + static_cast<std::ptrdiff_t>((t * n_eng + static_cast<std::size_t>(role.engram_index)) * cols),
                    cols, hl.begin() + static_cast<std::ptrdiff_t>(t * cols));
      const std::span<float> gate = lf.zeros<float>(N * hc);
      {
        OpTimer t(ctx, "engram");
        engram_forward(X, hl, {}, *w.engram, c, ctx.lin(), N, X_alt, gate);
      }
      ctx.dump_i64(tag, "engram_hashes", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(cols)}, hl.data());
      ctx.dump_f32(tag, "engram_gate", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(hc)}, gate.data());
      std::swap(X, X_alt);
    }
    if (role.dspark_target && capture) {  // step 7b: bf16 mean over the copies
      OpTimer t(ctx, "dspark hiddens");
      for (std::size_t i = 0; i < items.size(); ++i) {
        const std::size_t S = items[i].ids.size();
        kernels::hc_copy_mean_bf16(X.subspan(row0[i] * hc * dim, S * hc * dim), S, hc, dim,
                                   std::span<float>(items[i].seq->main_hidden).subspan(n_targets * dim),
                                   max_targets * dim, ctx.pool);
      }
      ++n_targets;
    }
    auto attn = [&](std::span<const float> a_in, std::span<float> a_out) {
      for (std::size_t i = 0; i < items.size(); ++i) {
        const std::size_t S = items[i].ids.size();
        attention_forward(ctx, w, *seqs[i], *hands[i], a_in.subspan(row0[i] * dim, S * dim), S,
                          seqs[i]->pos(), a_out.subspan(row0[i] * dim, S * dim), tag);
      }
    };
    block(ctx, w, N, X, X_alt, pre, {}, attn, tag);
  };
  const std::span<SequenceState*> seqs = frame.uninit<SequenceState*>(items.size());
  const std::span<Handoff*> hands = frame.uninit<Handoff*>(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    seqs[i] = items[i].seq;
    hands[i] = &items[i].seq->handoff;
  }
  for (const LayerWeights& w : layers_) {
    if (rel_err != nullptr) {
      // Fast mode on copies of this layer's input and state (identical inputs), then strict.
      ForwardContext fctx{c, opts_.forward, pool_.get(), nullptr};
      fctx.opt.numerics = kernels::Numerics::kFast;
      ForwardContext sctx = ctx;
      sctx.opt.numerics = kernels::Numerics::kStrict;
      std::vector<SequenceState> copies;
      for (SequenceState* s : seqs) copies.push_back(*s);
      std::vector<SequenceState*> cptr;
      std::vector<Handoff*> hptr;
      for (auto& s : copies) {
        cptr.push_back(&s);
        hptr.push_back(&s.handoff);
      }
      std::vector<float> xf(X.begin(), X.end()), xf_alt(X.size()), pf(pre.begin(), pre.end());
      std::span<float> Xf = xf, Xf_alt = xf_alt;
      layer(fctx, w, Xf, Xf_alt, pf, cptr, hptr, false);
      layer(sctx, w, X, X_alt, pre, seqs, hands, true);
      double num = 0, den = 0;
      for (std::size_t i = 0; i < X.size(); ++i) {
        const double d = static_cast<double>(Xf[i]) - X[i];
        num += d * d;
        den += static_cast<double>(X[i]) * X[i];
      }
      rel_err->push_back(den > 0 ? std::sqrt(num / den) : 0.0);
      continue;
    }
    layer(ctx, w, X, X_alt, pre, seqs, hands, true);
  }
  // Steps 8–9: collapse with the last FFN pre, final norm, fp32 head on the rows that want logits.
  std::span<float> x = frame.uninit<float>(N * dim);
  {
    OpTimer t(ctx, "norm");
    if (ctx.opt.numerics == kernels::Numerics::kFast) kernels::hc_pre_fast(X, pre, N, hc, dim, x, ctx.pool);
    else kernels::hc_pre(X, pre, N, hc, dim, x);
    kernels::rmsnorm(x, final_norm_, c.norm_eps, x, N, ctx.pool);
  }
  ctx.dump_f32("final_x", {static_cast<std::int64_t>(N), static_cast<std::int64_t>(dim)}, x.data());
  // The head on the rows that want logits only (out0[i]: item i's first row among them).
  const std::span<std::size_t> out0 = frame.zeros<std::size_t>(items.size() + 1);
  for (std::size_t i = 0; i < items.size(); ++i) out0[i + 1] = out0[i] + logit_rows(items.subspan(i, 1));
  if (NL != N) {
    const std::span<float> sel = frame.uninit<float>(NL * dim);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::size_t n = out0[i + 1] - out0[i], first = row0[i + 1] - n;
      std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(first * dim), n * dim,
                  sel.begin() + static_cast<std::ptrdiff_t>(out0[i] * dim));
    }
    x = sel;
  }
  auto lin = ctx.lin();
  lin.f32_output = true;
  {
    OpTimer t(ctx, "head");
    kernels::linear(x, NL, head_, logits, lin);
  }

  for (std::size_t i = 0; i < items.size(); ++i) {
    SequenceState& seq = *items[i].seq;
    const std::size_t S = items[i].ids.size();
    // Step 11: the DSpark target hiddens of this call are in seq.main_hidden (step 7b).
    seq.main_hidden_rows = S;
    seq.advance(S);
    // The hand-offs are needed only within a call. A decode step's stay (their capacity is what
    // the next step needs); a prefill chunk's [S, k] lists are freed rather than kept per sequence.
    if (S > 1) seq.handoff = Handoff{};
  }
}

}  // namespace dsv4
