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

// Canonical dots of G queries against 16 bf16 rows (rows[k] may point at a zero row for
// padding): res[g] lane k = dot(q[g], rows[k]). The rows are taken 4 at a time with all G
// queries, so each row chunk is widened from bf16 once for the G heads (not once per head), and
// a step is G + 4 loads for 4G FMAs. Every accumulator still takes dims c ≡ l (mod 16) in
// ascending order, and the 16 of a head are reduced by the canonical tree: the same bits as one
// head at a time.
template <int G>
inline void dots16(const float* const* q, const std::uint16_t* const* rows, std::size_t D, V* res) {
  V part[G][16];
  for (int k0 = 0; k0 < 16; k0 += 4) {
    V acc[G][4];
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < 4; ++k) acc[g][k] = zero();
    std::size_t c = 0;
    for (; c + 16 <= D; c += 16) {
      V r[4];
      for (int k = 0; k < 4; ++k) r[k] = load_bf16(rows[k0 + k] + c);
      for (int g = 0; g < G; ++g) {
        const V qc = load(q[g] + c);
        for (int k = 0; k < 4; ++k) acc[g][k] = fma(qc, r[k], acc[g][k]);
      }
    }
    if (c < D) {
      V r[4];
      for (int k = 0; k < 4; ++k) r[k] = load_bf16_n(rows[k0 + k] + c, D - c);
      for (int g = 0; g < G; ++g) {
        const V qc = load_n(q[g] + c, D - c);
        for (int k = 0; k < 4; ++k) acc[g][k] = fma(qc, r[k], acc[g][k]);
      }
    }
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < 4; ++k) part[g][k0 + k] = acc[g][k];
  }
  for (int g = 0; g < G; ++g) res[g] = reduce16(part[g]);
}

// Dim vectors per step of the value pass: 4 keeps 16 of AVX-512's 32 registers as accumulators
// (G = 4 heads × 4 vectors); AVX2's 16 registers hold one (two halves per vector). Any value gives
// the same bits.
inline constexpr int kValueChunks = DSV4_SIMD16 == 2 ? 4 : 1;

// Dims [c, c + 16·(C − 1) + w) of o[g] = bf16((Σ_j pb[g·npad + j] · row_j, fp32 FMAs in ascending j)
// / l[g]) for the G heads, into out + g·D (w < 16 only with C = 1). Each slot's G weights are
// broadcast once per C vectors and each row vector widened once for the G heads: with C = 1 a
// step was G broadcasts and one row load for G FMAs, and the broadcasts kept the load ports, not
// the FMA units, busy.
template <int G, int C>
inline void value_chunk(const std::uint16_t* const* rows, std::size_t n, const float* pb, std::size_t npad,
                        const float* l, std::size_t c, std::size_t w, float* out, std::size_t D) {
  // (Fully unrolled, so that GCC keeps the accumulators in registers.)
  V acc[G][C];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int k = 0; k < C; ++k) acc[g][k] = zero();
  for (std::size_t j = 0; j < n; ++j) {
    V p[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) p[g] = set1(pb[g * npad + j]);
#pragma GCC unroll 4
    for (int k = 0; k < C; ++k) {
      const V r = w == 16 ? load_bf16(rows[j] + c + 16 * k) : load_bf16_n(rows[j] + c, w);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[g][k] = fma(p[g], r, acc[g][k]);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < C; ++k) {
      const V o = round_bf16(div(acc[g][k], set1(l[g])));
      float* dst = out + g * D + c + 16 * k;
      if (w == 16) store(dst, o);
      else store_n(dst, o, w);
    }
}

// One query t, heads h0 .. h0 + G − 1.
template <int G>
void attend_group(const float* q, const KvRows& kv, const float* sink, const std::int32_t* slots,
                  float scale, std::size_t H, std::size_t D, std::size_t K, std::size_t t,
                  std::size_t h0, float* out) {
  // The slot rows and the scores come from this thread's arena: K (and with it their size)
  // grows with the context, and a growing vector would allocate inside the decode loop.
  ScratchFrame frame;
  const std::span<const std::uint16_t*> rows = frame.uninit<const std::uint16_t*>(K + 16);
  std::size_t n = 0;
  for (std::size_t j = 0; j < K; ++j)
    if (slots[j] >= 0) rows[n++] = kv.row(static_cast<std::size_t>(slots[j]), D);
  if (n == 0) {
    for (int g = 0; g < G; ++g) std::fill_n(out + (t * H + h0 + g) * D, D, 0.0f);
    return;
  }
  const std::size_t npad = (n + 15) / 16 * 16;
  const std::uint16_t* zero_row = frame.zeros<std::uint16_t>(D).data();
  for (std::size_t j = n; j < npad; ++j) rows[j] = zero_row;
  const std::span<float> s_buf = frame.uninit<float>(G * npad), pb_buf = frame.uninit<float>(G * npad);
  // Scores, 16 slots at a time (the rows of a tile stay in L1 for the G heads).
  const float* qg[G];
  for (int g = 0; g < G; ++g) qg[g] = q + (t * H + h0 + g) * D;
  for (std::size_t j0 = 0; j0 < npad; j0 += 16) {
    V d[G];
    dots16<G>(qg, rows.data() + j0, D, d);
    for (int g = 0; g < G; ++g) store(s_buf.data() + g * npad + j0, mul(d[g], set1(scale)));
  }
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
  // Values: C × 16 dims at a time while they last, then 16 (the tail narrower).
  std::size_t c = 0;
  for (; c + 16 * kValueChunks <= D; c += 16 * kValueChunks)
    value_chunk<G, kValueChunks>(rows.data(), n, pb_buf.data(), npad, l_sum, c, 16, out + (t * H + h0) * D, D);
  for (; c < D; c += 16) value_chunk<G, 1>(rows.data(), n, pb_buf.data(), npad, l_sum, c, std::min<std::size_t>(16, D - c), out + (t * H + h0) * D, D);
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
// Keys scored together (the accumulators of a chunk: kKeysPerChunk × 2 head vectors). Any value
// gives the same bits; 8 keeps 16 of AVX-512's 32 registers busy, 4 fits AVX2's 16.
inline constexpr int kKeysPerChunk = DSV4_SIMD16 == 2 ? 8 : 4;

// One query against NK keys, heads h0 .. h0 + 16·HV − 1 in the lanes: each (key, head) is an fp32
// FMA chain over d ascending from +0, then z = bf16(max(bf16(dot), 0) · w) into z[k·hp + h].
// qt is the query transposed ([hd][hp], heads padded to hp with zeros), so a head vector is one
// load and a key element one broadcast: no horizontal sums, and every FMA does 16 heads' work.
template <int NK, int HV>
inline void key_chunk(const float* qt, const float* wp, std::size_t hp, std::size_t hd, const std::uint16_t* const* keys,
                      std::size_t h0, float* z) {
  // (Fully unrolled, so that GCC keeps the accumulators in registers instead of on the stack.)
  V acc[NK][HV];
#pragma GCC unroll 16
  for (int k = 0; k < NK; ++k)
#pragma GCC unroll 4
    for (int j = 0; j < HV; ++j) acc[k][j] = zero();
  // Key elements d and d + 1 come from one 32-bit broadcast (hd is even; checked by the caller).
  for (std::size_t d = 0; d < hd; d += 2) {
    V qe[HV], qo[HV];
#pragma GCC unroll 4
    for (int j = 0; j < HV; ++j) {
      qe[j] = load(qt + d * hp + h0 + 16 * j);
      qo[j] = load(qt + (d + 1) * hp + h0 + 16 * j);
    }
#pragma GCC unroll 16
    for (int k = 0; k < NK; ++k) {
      V ke, ko;
      set1_bf16_pair(keys[k] + d, ke, ko);
#pragma GCC unroll 4
      for (int j = 0; j < HV; ++j) acc[k][j] = fma(qo[j], ko, fma(qe[j], ke, acc[k][j]));
    }
  }
#pragma GCC unroll 16
  for (int k = 0; k < NK; ++k)
#pragma GCC unroll 4
    for (int j = 0; j < HV; ++j) {
      const V score = round_bf16(acc[k][j]);
      store(z + k * hp + h0 + 16 * j, round_bf16(mul(max(score, zero()), load(wp + h0 + 16 * j))));
    }
}

// Items [i0, i1) of (key block b, query s), b-major. qt [S][hd][hp] and wp [S][hp] are the queries
// and weights with heads padded to hp (a multiple of 16) — see index_scores_fast.
inline void index_score_items(const float* qt, const float* wp, const std::uint16_t* K, const std::int64_t* visible,
                              const std::uint8_t* cand, const IndexScoreShape& sh, float* I, std::size_t i0,
                              std::size_t i1) {
  const std::size_t S = sh.queries, nh = sh.heads, hd = sh.dim, T = sh.keys;
  const std::size_t hp = (nh + 15) / 16 * 16;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  ScratchFrame frame;
  const std::uint16_t* zero_row = frame.zeros<std::uint16_t>(hd).data();
  const std::span<float> z = frame.uninit<float>(16 * hp);
  const std::uint16_t* keys[16];
  for (std::size_t i = i0; i < i1; ++i) {
    const std::size_t b = i / S, s = i % S;
    const std::size_t t0 = b * kKeyBlock, t1 = std::min(T, t0 + kKeyBlock);
    const std::size_t vis = static_cast<std::size_t>(std::max<std::int64_t>(0, visible[s]));
    const float* q = qt + s * hd * hp;
    const float* w = wp + s * hp;
    float* Irow = I + s * T;
    // Whether key t gets a score at all (visible and, where a mask is given, a candidate).
    const auto on = [&](std::size_t t) { return t < vis && (cand == nullptr || cand[s * T + t] != 0); };
    for (std::size_t a = t0; a < t1; a += 16) {
      const std::size_t n = std::min<std::size_t>(16, t1 - a);
      bool live[16 / kKeysPerChunk] = {};
      bool any = false;
      for (std::size_t k = 0; k < n; ++k)
        if (on(a + k)) live[k / kKeysPerChunk] = any = true;
      if (!any) {
        std::fill_n(Irow + a, n, neg_inf);
        continue;
      }
      for (std::size_t k = 0; k < 16; ++k) keys[k] = k < n ? K + (a + k) * hd : zero_row;
      // A chunk with no key to score is skipped (the candidate users' blocks are 8 keys).
      for (std::size_t k0 = 0; k0 < n; k0 += kKeysPerChunk) {
        if (!live[k0 / kKeysPerChunk]) continue;
        for (std::size_t h0 = 0; h0 < hp;) {
          float* zc = z.data() + k0 * hp;
          if (hp - h0 >= 32) {
            key_chunk<kKeysPerChunk, 2>(q, w, hp, hd, keys + k0, h0, zc);
            h0 += 32;
          } else {
            key_chunk<kKeysPerChunk, 1>(q, w, hp, hd, keys + k0, h0, zc);
            h0 += 16;
          }
        }
      }
      // Σ_h z_h per key, ascending h from +0 (the padded heads are not summed).
      alignas(64) float sum[16] = {};
      for (std::size_t k = 0; k < n; ++k) {
        if (!on(a + k)) continue;  // (its chunk may have been skipped: z is not its)
        float acc = 0.0f;
        for (std::size_t h = 0; h < nh; ++h) acc += z[k * hp + h];
        sum[k] = acc;
      }
      store(sum, round_bf16(load(sum)));
      for (std::size_t k = 0; k < n; ++k) Irow[a + k] = on(a + k) ? sum[k] : neg_inf;
    }
  }
}

}  // namespace dsv4::kernels::DSV4_SIMD16_NS
