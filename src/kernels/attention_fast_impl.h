// The bodies of the fast attention kernels (attention_fast.h), written once against simd16.h and
// compiled per target by attention_fast_{scalar,avx2,avx512}.cc. Include after simd16.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/attention_fast.h"
#include "util/scratch_arena.h"

namespace dsv4::kernels::DSV4_SIMD16_NS {

// Canonical dots of q against 16 rows (rows[k] may point at a zero row for padding).
inline V dots16(const float* q, const float* const* rows, std::size_t D) {
  V acc[16];
  for (V& a : acc) a = zero();
  std::size_t c = 0;
  for (; c + 16 <= D; c += 16) {
    const V qc = load(q + c);
    for (int k = 0; k < 16; ++k) acc[k] = fma(qc, load(rows[k] + c), acc[k]);
  }
  if (c < D) {
    const V qc = load_n(q + c, D - c);
    for (int k = 0; k < 16; ++k) acc[k] = fma(qc, load_n(rows[k] + c, D - c), acc[k]);
  }
  return reduce16(acc);
}

// Per-thread scratch that only grows (no allocation once the largest shape has been seen).
struct AttnScratch {
  std::vector<float> zero_row;
};
inline AttnScratch& attn_scratch() {
  thread_local AttnScratch s;
  return s;
}

// One query t, heads h0 .. h0 + G − 1.
template <int G>
void attend_group(const float* q, const KvRows& kv, const float* sink, const std::int32_t* slots,
                  float scale, std::size_t H, std::size_t D, std::size_t K, std::size_t t,
                  std::size_t h0, float* out) {
  // The slot rows and the scores come from this thread's arena: K (and with it their size)
  // grows with the context, and a growing vector would allocate inside the decode loop.
  ScratchFrame frame;
  const std::span<const float*> rows = frame.uninit<const float*>(K + 16);
  std::size_t n = 0;
  for (std::size_t j = 0; j < K; ++j)
    if (slots[j] >= 0) rows[n++] = kv.row(static_cast<std::size_t>(slots[j]), D);
  if (n == 0) {
    for (int g = 0; g < G; ++g) std::fill_n(out + (t * H + h0 + g) * D, D, 0.0f);
    return;
  }
  const std::size_t npad = (n + 15) / 16 * 16;
  const float* zero_row = frame.zeros<float>(D).data();
  for (std::size_t j = n; j < npad; ++j) rows[j] = zero_row;
  const std::span<float> s_buf = frame.uninit<float>(G * npad), pb_buf = frame.uninit<float>(G * npad);
  // Scores, 16 slots at a time (the rows of a tile stay in L1 for the G heads).
  for (std::size_t j0 = 0; j0 < npad; j0 += 16)
    for (int g = 0; g < G; ++g)
      store(s_buf.data() + g * npad + j0, mul(dots16(q + (t * H + h0 + g) * D, rows.data() + j0, D), set1(scale)));
  float l_sum[G];
  for (int g = 0; g < G; ++g) {
    float* s = s_buf.data() + g * npad;
    float* pb = pb_buf.data() + g * npad;
    float mu = s[0];
    for (std::size_t j = 1; j < n; ++j) mu = s[j] > mu ? s[j] : mu;
    for (std::size_t j0 = 0; j0 < npad; j0 += 16) store(s + j0, exp_fast(add(load(s + j0), set1(-mu))));
    float l = 0.0f;
    for (std::size_t j = 0; j < n; ++j) l += s[j];
    l += lane(exp_fast(set1(sink[h0 + g] - mu)), 0);
    for (std::size_t j0 = 0; j0 < npad; j0 += 16) store(pb + j0, round_bf16(load(s + j0)));
    l_sum[g] = l;
  }
  // Values: 16 dims at a time, every slot in order, G accumulators sharing each row load.
  for (std::size_t c = 0; c < D; c += 16) {
    const std::size_t w = std::min<std::size_t>(16, D - c);
    V acc[G];
    for (int g = 0; g < G; ++g) acc[g] = zero();
    for (std::size_t j = 0; j < n; ++j) {
      const V r = w == 16 ? load(rows[j] + c) : load_n(rows[j] + c, w);
      for (int g = 0; g < G; ++g) acc[g] = fma(set1(pb_buf[g * npad + j]), r, acc[g]);
    }
    for (int g = 0; g < G; ++g) {
      const V o = round_bf16(div(acc[g], set1(l_sum[g])));
      float* dst = out + (t * H + h0 + g) * D + c;
      if (w == 16) store(dst, o);
      else store_n(dst, o, w);
    }
  }
}

inline void sparse_attn_items(const float* q, const KvRows& kv, const float* sink, const std::int32_t* idx,
                              float scale, const FastAttnShape& sh, float* out, std::size_t i0, std::size_t i1) {
  const std::size_t groups = (sh.heads + 3) / 4;
  for (std::size_t i = i0; i < i1; ++i) {
    const std::size_t t = i / groups, h0 = (i % groups) * 4;
    const std::int32_t* slots = idx + t * sh.slots;
    switch (std::min<std::size_t>(4, sh.heads - h0)) {
      case 4: attend_group<4>(q, kv, sink, slots, scale, sh.heads, sh.dim, sh.slots, t, h0, out); break;
      case 3: attend_group<3>(q, kv, sink, slots, scale, sh.heads, sh.dim, sh.slots, t, h0, out); break;
      case 2: attend_group<2>(q, kv, sink, slots, scale, sh.heads, sh.dim, sh.slots, t, h0, out); break;
      default: attend_group<1>(q, kv, sink, slots, scale, sh.heads, sh.dim, sh.slots, t, h0, out); break;
    }
  }
}

inline constexpr std::size_t kKeyBlock = 64;

// Items [i0, i1) of (key block b, query s), b-major.
inline void index_score_items(const float* q, const float* w, const float* K, const std::int64_t* visible,
                              const std::uint8_t* cand, const IndexScoreShape& sh, float* I, std::size_t i0,
                              std::size_t i1) {
  const std::size_t S = sh.queries, nh = sh.heads, hd = sh.dim, T = sh.keys;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  AttnScratch& scr = attn_scratch();
  if (scr.zero_row.size() < hd) scr.zero_row.assign(hd, 0.0f);
  const float* rows[16];
  for (std::size_t i = i0; i < i1; ++i) {
    const std::size_t b = i / S, s = i % S;
    const std::size_t t0 = b * kKeyBlock, t1 = std::min(T, t0 + kKeyBlock);
    const std::size_t vis = static_cast<std::size_t>(std::max<std::int64_t>(0, visible[s]));
    float* Irow = I + s * T;
    for (std::size_t a = t0; a < t1; a += 16) {
      const std::size_t n = std::min<std::size_t>(16, t1 - a);
      bool any = false;
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t t = a + k;
        any = any || (t < vis && (cand == nullptr || cand[s * T + t]));
      }
      if (!any) {
        std::fill_n(Irow + a, n, neg_inf);
        continue;
      }
      for (std::size_t k = 0; k < 16; ++k) rows[k] = k < n ? K + (a + k) * hd : scr.zero_row.data();
      V sum = zero();
      for (std::size_t h = 0; h < nh; ++h) {
        const V score = round_bf16(dots16(q + (s * nh + h) * hd, rows, hd));
        sum = add(sum, round_bf16(mul(max(score, zero()), set1(w[s * nh + h]))));
      }
      float tmp[16];
      store(tmp, round_bf16(sum));
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t t = a + k;
        Irow[t] = (t < vis && (cand == nullptr || cand[s * T + t])) ? tmp[k] : neg_inf;
      }
    }
  }
}

}  // namespace dsv4::kernels::DSV4_SIMD16_NS
