// See attention.h.
#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "kernels/attention_fast.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/sparse_attention.h"
#include "kernels/topk.h"
#include "model/compressor.h"
#include "model/indexer.h"
#include "model/model_qdq.h"
#include "numeric/bf16.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4 {
namespace {

// A window part: the kv rows the call attends (row i at position rows_pos[i]) and each query's
// window slots (indices into rows, −1 = empty) [S, W].
struct WindowPart {
  std::vector<std::uint16_t> rows;  // bf16 bits, as the ring holds them
  std::vector<std::int64_t> rows_pos;
  std::vector<std::int64_t> slots;
  std::size_t width = 0;
};

// Compact window for a call at any start_pos: a query at p sees positions max(0, p−W+1) .. p,
// from the ring for earlier positions plus this call. Row i of `rows` is position lo + i.
void window_compact(WindowPart& wp, LayerCache& cache, std::span<const float> kv, std::size_t S,
                    std::int64_t start_pos, std::size_t W, std::size_t D) {
  wp.rows.clear();
  wp.rows_pos.clear();
  const std::int64_t Wi = static_cast<std::int64_t>(W);
  const std::int64_t lo = std::max<std::int64_t>(0, start_pos - Wi + 1);
  for (std::int64_t p = lo; p < start_pos; ++p) {
    const auto slot = static_cast<std::size_t>(p % Wi);
    if (cache.win_pos[slot] != p)
      fail("window ring does not hold position {} (calls on a sequence must be contiguous)", p);
    wp.rows.insert(wp.rows.end(), cache.win_kv.begin() + static_cast<std::ptrdiff_t>(slot * D),
                   cache.win_kv.begin() + static_cast<std::ptrdiff_t>((slot + 1) * D));
    wp.rows_pos.push_back(p);
  }
  const std::size_t n0 = wp.rows.size();
  wp.rows.resize(n0 + kv.size());
  pack_bf16_rows(kv, wp.rows.data() + n0, "window kv");
  for (std::size_t i = 0; i < S; ++i) wp.rows_pos.push_back(start_pos + static_cast<std::int64_t>(i));
  wp.width = W;
  wp.slots.assign(S * W, -1);
  for (std::size_t i = 0; i < S; ++i) {
    const std::int64_t p = start_pos + static_cast<std::int64_t>(i);
    const std::int64_t first = std::max<std::int64_t>(0, p - Wi + 1) - lo;
    const std::int64_t n = std::min<std::int64_t>(p + 1, Wi);
    for (std::int64_t a = 0; a < n; ++a) wp.slots[i * W + static_cast<std::size_t>(a)] = first + a;
  }
  ring_write(cache, kv, std::span<const std::int64_t>(wp.rows_pos).last(S), W, D);
}

// The reference's window part (§6.2 steps 2–3): prefill at 0 uses the chunk's own rows; decode
// (S = 1) uses the ring in slot order with the slots listed oldest first.
void window_reference(WindowPart& wp, LayerCache& cache, std::span<const float> kv, std::size_t S,
                      std::int64_t start_pos, std::size_t W, std::size_t D) {
  const std::int64_t Wi = static_cast<std::int64_t>(W);
  ScratchFrame frame;
  const std::span<std::int64_t> pos = frame.uninit<std::int64_t>(S);
  for (std::size_t i = 0; i < S; ++i) pos[i] = start_pos + static_cast<std::int64_t>(i);
  if (start_pos == 0) {  // the reference branches on start_pos == 0 (also for S = 1)
    const std::size_t Wp = std::min(S, W);
    wp.rows.resize(kv.size());
    pack_bf16_rows(kv, wp.rows.data(), "window kv");
    wp.rows_pos.assign(pos.begin(), pos.end());
    wp.width = Wp;
    wp.slots.assign(S * Wp, -1);
    for (std::size_t i = 0; i < S; ++i) {
      const std::int64_t base = std::max<std::int64_t>(0, pos[i] - Wi + 1);
      for (std::size_t a = 0; a < Wp; ++a) {
        const std::int64_t sl = base + static_cast<std::int64_t>(a);
        wp.slots[i * Wp + a] = sl > pos[i] ? -1 : sl;
      }
    }
    ring_write(cache, kv, pos, W, D);
    return;
  }
  if (S != 1)
    fail("--attn-slots reference defines only a prefill at start_pos 0 and decode (one token); "
         "got {} tokens at start_pos {} (chunked prefill needs --attn-slots compact)", S, start_pos);
  ring_write(cache, kv, pos, W, D);
  const std::int64_t o = (start_pos % Wi) + 1;
  wp.rows = cache.win_kv;
  wp.rows_pos = cache.win_pos;
  wp.width = W;
  wp.slots.resize(W);
  for (std::size_t a = 0; a < W; ++a) {
    const std::int64_t sl = (o + static_cast<std::int64_t>(a)) % Wi;
    wp.slots[a] = sl > start_pos ? -1 : sl;
  }
}

// §6.3 / §6.5 / §6.7 for one layer: publishes what a source publishes and returns the rows each
// query attends (−1 padding at the end) with their width.
const std::vector<std::int64_t>& compressed_part(const ForwardContext& ctx, const LayerWeights& w,
                                                 SequenceState& seq, Handoff& hand,
                                                 std::span<const float> x, std::span<const float> qr,
                                                 std::size_t S, std::int64_t start_pos,
                                                 std::size_t* width, std::string_view tag) {
  const ModelConfig& c = ctx.cfg;
  const LayerRole& role = *w.role;
  const std::int64_t r = role.ratio;
  const auto id = static_cast<std::size_t>(role.id);
  const auto D = static_cast<std::size_t>(c.head_dim), hd = static_cast<std::size_t>(c.index_head_dim);
  const auto n_cmp = static_cast<std::size_t>((start_pos + static_cast<std::int64_t>(S)) / r);
  ScratchFrame frame;
  const std::span<std::int64_t> pos = frame.uninit<std::int64_t>(S), visible = frame.uninit<std::int64_t>(S);
  for (std::size_t i = 0; i < S; ++i) {
    pos[i] = start_pos + static_cast<std::int64_t>(i);
    visible[i] = (pos[i] + 1) / r;
  }
  LayerCache& cache = seq.layers[id];
  if (role.kv_source) {
    if (n_cmp > cache.cmp_kv.size() / D) fail("layer {}: compressed cache overflow", role.id);
    OpTimer timer(ctx, "attention/compressor");
    thread_local CompressorOutput lat;  // its buffer is reused from call to call
    compress(ctx, w, cache, x, S, start_pos, lat);
    if (lat.groups > 0) {
      const auto fg = static_cast<std::size_t>(lat.first_group);
      if (role.index_source) {  // §6.7 step 1: keys from the UN-rotated latent
        if ((fg + lat.groups) * hd > cache.idx_k.size()) fail("layer {}: index key cache overflow", role.id);
        const std::span<float> keys = frame.uninit<float>(lat.groups * hd);
        index_keys(ctx, w, lat.latent, lat.groups, lat.first_group, keys);
        pack_bf16_rows(keys, cache.idx_k.data() + fg * hd, "index key");
        if (ctx.opt.index_keys == IndexKeys::kReference) seq.shared_index_k = role.id;
      }
      ctx.dump_f32(tag, "compressor_latent", {static_cast<std::int64_t>(lat.groups), static_cast<std::int64_t>(D)},
                   lat.latent.data());
      // §6.3 step 3: rotate at the group's first position, FP4 QDQ (E4M3, block 16), store.
      const std::span<std::int64_t> gpos = frame.uninit<std::int64_t>(lat.groups);
      for (std::size_t g = 0; g < lat.groups; ++g) gpos[g] = (lat.first_group + static_cast<std::int64_t>(g)) * r;
      kernels::apply_rope(lat.latent, 1, D, *w.rope, gpos);
      fp4_e4m3_qdq_inplace(lat.latent);
      pack_bf16_rows(lat.latent, cache.cmp_kv.data() + fg * D, "compressed kv");
    }
    hand.ran[id] = 1;
    hand.n_cmp[id] = n_cmp;
  }
  if (role.kv_from < 0 || !hand.ran[static_cast<std::size_t>(role.kv_from)])
    fail("layer {}: its kv source {} did not run this call", role.id, role.kv_from);

  if (!role.index_source) {
    const auto from = static_cast<std::size_t>(role.topk_from);
    if (role.topk_from < 0 || hand.topk_k.size() <= from || !hand.ran[from])
      fail("layer {}: its top-k source {} did not run", role.id, role.topk_from);
    *width = hand.topk_k[from];
    return hand.topk[from];
  }
  hand.ran[id] = 1;
  if (n_cmp == 0) {
    hand.topk[id].clear();
    hand.topk_k[id] = 0;
    *width = 0;
    return hand.topk[id];
  }
  // Index keys scored (§6.7 step 3, §16.2).
  const std::uint16_t* K;
  if (ctx.opt.index_keys == IndexKeys::kReference) {
    if (seq.shared_index_k < 0)
      fail("layer {}: --index-keys reference and no index keys were ever published", role.id);
    const auto& owner = seq.layers[static_cast<std::size_t>(seq.shared_index_k)].idx_k;
    if (owner.size() / hd < n_cmp) fail("layer {}: the shared index_k slot is too short", role.id);
    K = owner.data();
  } else {
    K = seq.layers[static_cast<std::size_t>(role.index_keys_from)].idx_k.data();
  }
  // Candidate users score only the candidates (the rest would be −inf anyway, §6.7 step 7).
  std::span<const std::uint8_t> cand_mask;
  if (role.uses_candidates) {
    const auto src = static_cast<std::size_t>(c.candidate_source_layer);
    if (c.candidate_source_layer < 0 || hand.cand[src].size() != S * n_cmp)
      fail("layer {}: candidate source {} did not run this call", role.id, c.candidate_source_layer);
    cand_mask = hand.cand[src];
  }
  OpTimer timer(ctx, "attention/indexer");
  const std::span<float> I = frame.uninit<float>(S * n_cmp);
  index_scores(ctx, w, x, qr, std::span<const std::uint16_t>(K, n_cmp * hd), n_cmp, pos, cand_mask, I);
  if (role.candidate_source) {
    auto& cand = hand.cand[id];
    // A decode step's mask grows by a row every r positions: reserve the whole context once
    // (max_len / r bytes) so the steady-state decode loop does not reallocate it.
    if (S == 1) cand.reserve(seq.max_len() / static_cast<std::size_t>(r) + 1);
    cand.assign(S * n_cmp, 0);
    kernels::select_candidate_blocks(I, S, n_cmp, visible, static_cast<std::size_t>(c.candidate_topk_blocks),
                                     static_cast<std::size_t>(c.candidate_block_size), cand);
    ctx.dump_b8(tag, "candidates", {static_cast<std::int64_t>(S), static_cast<std::int64_t>(n_cmp)}, cand.data());
  }
  ctx.dump_f32(tag, "index_scores", {static_cast<std::int64_t>(S), static_cast<std::int64_t>(n_cmp)}, I.data());
  std::size_t k = 0;
  select_topk(I, S, n_cmp, visible, c.index_topk, ctx.opt.attn_slots == AttnSlots::kCompact, &k, hand.topk[id], ctx.pool);
  hand.topk_k[id] = k;
  *width = k;
  return hand.topk[id];
}

}  // namespace

void pack_bf16_rows(std::span<const float> src, std::uint16_t* dst, const char* what) {
  const std::size_t bad = pack_bf16_exact(src.data(), src.size(), dst);
  if (bad != src.size())
    fail("internal error: {} value {} (element {}) is not a bf16 value and cannot be cached exactly", what,
         src[bad], bad);
}

void ring_write(LayerCache& cache, std::span<const float> kv, std::span<const std::int64_t> positions,
                std::size_t W, std::size_t D) {
  const std::size_t n = positions.size();
  for (std::size_t i = (n > W ? n - W : 0); i < n; ++i) {
    const auto slot = static_cast<std::size_t>(positions[i] % static_cast<std::int64_t>(W));
    pack_bf16_rows(kv.subspan(i * D, D), cache.win_kv.data() + slot * D, "window kv");
    cache.win_pos[slot] = positions[i];
  }
}

void project_q(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> x,
               std::size_t S, std::span<const std::int64_t> positions, std::span<float> qr,
               std::span<float> q) {
  OpTimer timer(ctx, "attention/q");
  const ModelConfig& c = ctx.cfg;
  kernels::linear(x, S, w.wq_a, qr, ctx.lin());
  kernels::rmsnorm(qr, w.q_norm, c.norm_eps, qr, S, ctx.pool);
  const auto H = static_cast<std::size_t>(c.n_heads), D = static_cast<std::size_t>(c.head_dim);
  kernels::linear(qr, S, w.wq_b, q, ctx.lin());
  kernels::apply_rope(q, H, D, *w.rope, positions);
}

void project_window_kv(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> x, std::size_t S,
                       std::span<const std::int64_t> positions, std::span<float> kv) {
  OpTimer timer(ctx, "attention/kv");
  const ModelConfig& c = ctx.cfg;
  const auto D = static_cast<std::size_t>(c.head_dim);
  kernels::linear(x, S, w.wkv, kv, ctx.lin());
  kernels::rmsnorm(kv, w.kv_norm, c.norm_eps, kv, S, ctx.pool);
  kernels::apply_rope(kv, 1, D, *w.rope, positions);
  fp8_qdq_inplace(kv);
}

void output_projection(const ForwardContext& ctx, const LayerWeights& w, std::span<const float> o,
                       std::size_t S, std::span<float> out) {
  OpTimer timer(ctx, "attention/out");
  const ModelConfig& c = ctx.cfg;
  const auto G = static_cast<std::size_t>(c.o_groups), R = static_cast<std::size_t>(c.o_lora_rank);
  const std::size_t in_g = w.wo_a.cols;  // (H / G) · D
  ScratchFrame frame;
  const std::span<float> og = frame.zeros<float>(S * in_g), ug = frame.zeros<float>(S * R),
                         u = frame.zeros<float>(S * G * R);
  auto lin = ctx.lin();
  lin.quantize_input = false;  // bf16 einsum on the (exactly) dequantized wo_a
  for (std::size_t g = 0; g < G; ++g) {
    for (std::size_t s = 0; s < S; ++s)
      std::copy_n(o.begin() + static_cast<std::ptrdiff_t>((s * G + g) * in_g), in_g,
                  og.begin() + static_cast<std::ptrdiff_t>(s * in_g));
    kernels::WeightRef wg = w.wo_a;  // rows g·R .. g·R + R − 1 (R is a multiple of 32)
    wg.rows = R;
    wg.data = static_cast<const std::uint8_t*>(w.wo_a.data) + g * R * in_g;
    wg.scale = w.wo_a.scale + (g * R / 32) * w.wo_a.scale_cols();
    kernels::linear(og, S, wg, ug, lin);
    for (std::size_t s = 0; s < S; ++s)
      std::copy_n(ug.begin() + static_cast<std::ptrdiff_t>(s * R), R,
                  u.begin() + static_cast<std::ptrdiff_t>((s * G + g) * R));
  }
  kernels::linear(u, S, w.wo_b, out, ctx.lin());
}

void attention_forward(const ForwardContext& ctx, const LayerWeights& w, SequenceState& seq,
                       Handoff& hand, std::span<const float> x, std::size_t S,
                       std::int64_t start_pos, std::span<float> out, std::string_view tag) {
  const ModelConfig& c = ctx.cfg;
  const LayerRole& role = *w.role;
  const auto H = static_cast<std::size_t>(c.n_heads), D = static_cast<std::size_t>(c.head_dim);
  const auto W = static_cast<std::size_t>(c.window_size);
  ScratchFrame frame;
  const std::span<std::int64_t> pos = frame.uninit<std::int64_t>(S);
  for (std::size_t i = 0; i < S; ++i) pos[i] = start_pos + static_cast<std::int64_t>(i);
  LayerCache& cache = seq.layers[static_cast<std::size_t>(role.id)];
  const bool compact = ctx.opt.attn_slots == AttnSlots::kCompact;

  const std::span<float> qr = frame.zeros<float>(S * static_cast<std::size_t>(c.q_lora_rank)),
                         q = frame.zeros<float>(S * H * D), kv = frame.zeros<float>(S * D);
  project_q(ctx, w, x, S, pos, qr, q);
  project_window_kv(ctx, w, x, S, pos, kv);
  thread_local WindowPart wp;  // its vectors keep their capacity from call to call
  if (compact) window_compact(wp, cache, kv, S, start_pos, W, D);
  else window_reference(wp, cache, kv, S, start_pos, W, D);
  const std::size_t offset = wp.rows.size() / D;

  // kv rows: the window rows, then the kv source's compressed rows [0, n_cmp).
  const std::vector<std::uint16_t>& rows = wp.rows;
  std::size_t width = wp.width, cw = 0;
  const std::vector<std::int64_t>* sel = nullptr;
  std::size_t n_c = 0;
  const std::uint16_t* cmp_rows = nullptr;
  thread_local std::vector<float> strict_rows;  // the strict kernel's one fp32 row array
  const bool fast = ctx.opt.numerics == kernels::Numerics::kFast;
  if (role.ratio > 0) {
    sel = &compressed_part(ctx, w, seq, hand, x, qr, S, start_pos, &cw, tag);
    const auto src = static_cast<std::size_t>(role.kv_from);
    n_c = hand.n_cmp[src];
    cmp_rows = seq.layers[src].cmp_kv.data();
    // The strict kernel takes one fp32 row array; the fast one reads the caches in place.
    ctx.dump_i64(tag, "attn_cmp_pos", {static_cast<std::int64_t>(S), static_cast<std::int64_t>(cw)}, sel->data());
  }
  const std::size_t K = width + cw;
  const std::span<std::int32_t> idx = frame.filled<std::int32_t>(S * K, -1);
  for (std::size_t s = 0; s < S; ++s) {
    std::size_t n = 0;
    auto put = [&](std::int64_t v) {
      if (compact && v < 0) return;  // compact: holes move to the end
      idx[s * K + n++] = static_cast<std::int32_t>(v);
    };
    const std::size_t wrow = wp.slots.size() == width ? 0 : s;  // decode-reference: one list
    for (std::size_t a = 0; a < width; ++a) put(wp.slots[wrow * width + a]);
    for (std::size_t a = 0; a < cw; ++a) {
      const std::int64_t j = (*sel)[s * cw + a];
      put(j >= 0 ? j + static_cast<std::int64_t>(offset) : -1);
    }
  }
  if (ctx.dump) {
    std::vector<std::int64_t> sp(S * K, -1);
    for (std::size_t i = 0; i < S * K; ++i)
      if (idx[i] >= 0 && static_cast<std::size_t>(idx[i]) < offset) sp[i] = wp.rows_pos[static_cast<std::size_t>(idx[i])];
    ctx.dump_i64(tag, "attn_slot_pos", {static_cast<std::int64_t>(S), static_cast<std::int64_t>(K)}, sp.data());
  }
  const std::span<float> o = frame.zeros<float>(S * H * D);
  const float scale = static_cast<float>(std::pow(static_cast<double>(D), -0.5));
  std::optional<OpTimer> core_timer(std::in_place, ctx, "attention/core");
  if (fast) {
    // (query, 4 heads) items over the pool, the compressed rows read in the cache.
    const kernels::KvRows kvr{rows.data(), offset, cmp_rows, n_c};
    kernels::sparse_attn_fast(q, kvr, w.attn_sink, idx, scale, {S, H, D, K}, o, ctx.pool);
  } else {
    // (A named reference: inside the workers, `strict_rows` would name their own thread's copy.)
    std::vector<float>& srows = strict_rows;
    srows.resize(rows.size() + n_c * D);
    unpack_bf16(rows.data(), rows.size(), srows.data());
    if (n_c > 0) unpack_bf16(cmp_rows, n_c * D, srows.data() + rows.size());
    // Queries are independent: split them over the pool (each query's arithmetic is unchanged).
    auto attend = [&](std::size_t s0, std::size_t s1) {
      const kernels::SparseAttnShape shape{s1 - s0, H, D, srows.size() / D, K};
      kernels::sparse_attn(q.subspan(s0 * H * D, (s1 - s0) * H * D), srows, w.attn_sink,
                           std::span<const std::int32_t>(idx).subspan(s0 * K, (s1 - s0) * K), scale, shape,
                           o.subspan(s0 * H * D, (s1 - s0) * H * D));
    };
    parallel_for(ctx.pool, S, attend);
  }
  core_timer.reset();
  ctx.dump_f32(tag, "attn_core", {static_cast<std::int64_t>(S), static_cast<std::int64_t>(H), static_cast<std::int64_t>(D)}, o.data());
  kernels::apply_rope(o, H, D, *w.rope, pos, /*inverse=*/true);
  output_projection(ctx, w, o, S, out);
}

}  // namespace dsv4
