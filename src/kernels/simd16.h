// A 16-lane fp32 vector for the fast attention kernels, one definition per instruction set.
//
// Include this header with DSV4_SIMD16 set to 0 (scalar), 1 (AVX2 + FMA: two 8-lane halves) or
// 2 (AVX-512), inside a translation unit compiled for that target; everything lands in namespace
// dsv4::kernels::simd16_<target>, so the three versions never collide.
//
// Why one lane count for every target: the fast kernels define their results through lane-wise
// IEEE operations on 16 lanes (fma, add, mul, div, min/max, round-to-nearest) and a fixed
// reduction tree. Each operation here is correctly rounded and element-wise, so a kernel written
// once against this interface gives the same bits on AVX-512, AVX2 and the scalar fallback — the
// scalar build IS the reference the SIMD builds are tested against, bit for bit.
//
// Semantics pinned for bit-identity (they follow the x86 instructions):
//   min(a, b) = a < b ? a : b      max(a, b) = a > b ? a : b     (so max(NaN, 0) = 0, max(−0, 0) = +0)
//   round_bf16: round to nearest even, NaN kept quiet — numeric/bf16.h's round_bf16 lane-wise.
//   exp: exp_fast below, the same operations in every build.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if DSV4_SIMD16 > 0
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsic headers as
// uninitialized (a known false positive of those headers); nothing here reads undefined lanes.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#endif

#if DSV4_SIMD16 == 0
#define DSV4_SIMD16_NS simd16_scalar
#elif DSV4_SIMD16 == 1
#define DSV4_SIMD16_NS simd16_avx2
#else
#define DSV4_SIMD16_NS simd16_avx512
#endif

namespace dsv4::kernels::DSV4_SIMD16_NS {

#if DSV4_SIMD16 == 0

struct V {
  float v[16];
};
inline V zero() { return V{}; }
inline V set1(float x) {
  V r;
  for (float& e : r.v) e = x;
  return r;
}
inline V load(const float* p) {
  V r;
  std::memcpy(r.v, p, sizeof r.v);
  return r;
}
inline V load_n(const float* p, std::size_t n) {  // lanes ≥ n are +0
  V r{};
  std::memcpy(r.v, p, n * sizeof(float));
  return r;
}
// 16 bf16 bit patterns widened exactly to fp32 (lanes ≥ n are +0).
inline V load_bf16_n(const std::uint16_t* p, std::size_t n) {
  V r{};
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = static_cast<std::uint32_t>(p[i]) << 16;
    std::memcpy(&r.v[i], &u, sizeof u);
  }
  return r;
}
inline V load_bf16(const std::uint16_t* p) { return load_bf16_n(p, 16); }
// Two adjacent bf16 values p[0], p[1] (bit patterns), each widened and broadcast to every lane.
inline void set1_bf16_pair(const std::uint16_t* p, V& even, V& odd) {
  even = set1(std::bit_cast<float>(static_cast<std::uint32_t>(p[0]) << 16));
  odd = set1(std::bit_cast<float>(static_cast<std::uint32_t>(p[1]) << 16));
}
inline void store(float* p, V a) { std::memcpy(p, a.v, sizeof a.v); }
inline void store_n(float* p, V a, std::size_t n) { std::memcpy(p, a.v, n * sizeof(float)); }
#define DSV4_LANEWISE(expr)             \
  V r;                                  \
  for (int i = 0; i < 16; ++i) r.v[i] = (expr); \
  return r
inline V fma(V a, V b, V c) { DSV4_LANEWISE(std::fma(a.v[i], b.v[i], c.v[i])); }
inline V add(V a, V b) { DSV4_LANEWISE(a.v[i] + b.v[i]); }
inline V mul(V a, V b) { DSV4_LANEWISE(a.v[i] * b.v[i]); }
inline V div(V a, V b) { DSV4_LANEWISE(a.v[i] / b.v[i]); }
inline V min(V a, V b) { DSV4_LANEWISE(a.v[i] < b.v[i] ? a.v[i] : b.v[i]); }
inline V max(V a, V b) { DSV4_LANEWISE(a.v[i] > b.v[i] ? a.v[i] : b.v[i]); }
inline V round_int(V a) { DSV4_LANEWISE(std::nearbyint(a.v[i])); }  // ties to even (default mode)
// 2^n for integer-valued n in [−126, 127].
inline V pow2i(V n) {
  V r;
  for (int i = 0; i < 16; ++i) {
    const auto bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n.v[i]) + 127) << 23;
    std::memcpy(&r.v[i], &bits, 4);
  }
  return r;
}
// Lanes where a < b become 0, others keep x.
inline V zero_where_less(V x, V a, V b) { DSV4_LANEWISE(a.v[i] < b.v[i] ? 0.0f : x.v[i]); }
inline V round_bf16(V a) {
  V r;
  for (int i = 0; i < 16; ++i) {
    std::uint32_t u;
    std::memcpy(&u, &a.v[i], 4);
    u = (u & 0x7FFFFFFFu) > 0x7F800000u ? ((u | 0x00400000u) & 0xFFFF0000u)
                                        : ((u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u);
    std::memcpy(&r.v[i], &u, 4);
  }
  return r;
}
#undef DSV4_LANEWISE
inline float lane(V a, int i) { return a.v[i]; }

// The canonical reduction of 16 accumulators: lane k of the result is the sum of acc[k]'s lanes
// by the halving tree (i, i+8) → (i, i+4) → (i, i+2) → (i, i+1).
inline V reduce16(const V* acc) {
  V r;
  for (int k = 0; k < 16; ++k) {
    float a[16];
    std::memcpy(a, acc[k].v, sizeof a);
    for (int w = 8; w >= 1; w /= 2)
      for (int i = 0; i < w; ++i) a[i] = a[i] + a[i + w];
    r.v[k] = a[0];
  }
  return r;
}

#elif DSV4_SIMD16 == 1

struct V {
  __m256 lo, hi;  // lanes 0–7, 8–15
};
inline V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline V set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
inline V load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline __m256i mask8(std::size_t n) {  // lanes < n
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), iota);
}
inline V load_n(const float* p, std::size_t n) {
  const std::size_t nl = n < 8 ? n : 8, nh = n > 8 ? n - 8 : 0;
  return {_mm256_maskload_ps(p, mask8(nl)), _mm256_maskload_ps(p + 8, mask8(nh))};
}
inline __m256 widen_bf16_8(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
inline V load_bf16(const std::uint16_t* p) {
  return {widen_bf16_8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          widen_bf16_8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
inline V load_bf16_n(const std::uint16_t* p, std::size_t n) {
  alignas(32) std::uint16_t t[16] = {};
  std::memcpy(t, p, n * sizeof(std::uint16_t));
  return load_bf16(t);
}
inline void set1_bf16_pair(const std::uint16_t* p, V& even, V& odd) {  // one 32-bit broadcast
  std::int32_t u;
  std::memcpy(&u, p, sizeof u);
  const __m256i w = _mm256_set1_epi32(u);
  const __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  const __m256 o = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  even = {e, e};
  odd = {o, o};
}
inline void store(float* p, V a) {
  _mm256_storeu_ps(p, a.lo);
  _mm256_storeu_ps(p + 8, a.hi);
}
inline void store_n(float* p, V a, std::size_t n) {
  const std::size_t nl = n < 8 ? n : 8, nh = n > 8 ? n - 8 : 0;
  _mm256_maskstore_ps(p, mask8(nl), a.lo);
  _mm256_maskstore_ps(p + 8, mask8(nh), a.hi);
}
inline V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
inline V add(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline V mul(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline V div(V a, V b) { return {_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)}; }
inline V min(V a, V b) { return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
inline V max(V a, V b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
inline V round_int(V a) {
  constexpr int kMode = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  return {_mm256_round_ps(a.lo, kMode), _mm256_round_ps(a.hi, kMode)};
}
inline __m256 pow2i8(__m256 n) {
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_castsi256_ps(e);
}
inline V pow2i(V n) { return {pow2i8(n.lo), pow2i8(n.hi)}; }
inline V zero_where_less(V x, V a, V b) {
  return {_mm256_andnot_ps(_mm256_cmp_ps(a.lo, b.lo, _CMP_LT_OQ), x.lo),
          _mm256_andnot_ps(_mm256_cmp_ps(a.hi, b.hi, _CMP_LT_OQ), x.hi)};
}
inline __m256 round_bf16_8(__m256 a) {
  const __m256i u = _mm256_castps_si256(a);
  const __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
  // Signed compare is right here: absu ≤ 0x7FFFFFFF.
  const __m256i nan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7F800000));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb);
  const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
inline V round_bf16(V a) { return {round_bf16_8(a.lo), round_bf16_8(a.hi)}; }
inline float lane(V a, int i) {
  alignas(32) float t[16];
  _mm256_store_ps(t, a.lo);
  _mm256_store_ps(t + 8, a.hi);
  return t[i];
}

// Halving tree on 8 vectors x[0..7] (each the 8 lanes left after the (i, i+8) step) → one vector
// whose lane k is x[k]'s sum by (i, i+4) → (i, i+2) → (i, i+1).
inline __m256 reduce8x8(const __m256* x) {
  __m256 y[4];
  for (int p = 0; p < 4; ++p)  // [x_a[i] + x_a[i+4] | x_b[i] + x_b[i+4]]
    y[p] = _mm256_add_ps(_mm256_permute2f128_ps(x[2 * p], x[2 * p + 1], 0x20),
                         _mm256_permute2f128_ps(x[2 * p], x[2 * p + 1], 0x31));
  __m256 z[2];
  for (int p = 0; p < 2; ++p)  // per 128-bit lane: [a0+a2, a1+a3, b0+b2, b1+b3]
    z[p] = _mm256_add_ps(_mm256_shuffle_ps(y[2 * p], y[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(y[2 * p], y[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 w = _mm256_add_ps(_mm256_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm256_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
  // w holds keys in the order 0 2 4 6 | 1 3 5 7.
  return _mm256_permutevar8x32_ps(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
inline V reduce16(const V* acc) {
  __m256 x[16];
  for (int k = 0; k < 16; ++k) x[k] = _mm256_add_ps(acc[k].lo, acc[k].hi);  // (i, i+8)
  return {reduce8x8(x), reduce8x8(x + 8)};
}

#else  // AVX-512

using V = __m512;
inline V zero() { return _mm512_setzero_ps(); }
inline V set1(float x) { return _mm512_set1_ps(x); }
inline V load(const float* p) { return _mm512_loadu_ps(p); }
inline __mmask16 mask16(std::size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline V load_n(const float* p, std::size_t n) { return _mm512_maskz_loadu_ps(mask16(n), p); }
inline V widen_bf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
inline V load_bf16(const std::uint16_t* p) { return widen_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline V load_bf16_n(const std::uint16_t* p, std::size_t n) {
  alignas(32) std::uint16_t t[16] = {};  // (a masked 16-bit load would need AVX512BW)
  std::memcpy(t, p, n * sizeof(std::uint16_t));
  return load_bf16(t);
}
inline void set1_bf16_pair(const std::uint16_t* p, V& even, V& odd) {  // one 32-bit broadcast
  std::int32_t u;
  std::memcpy(&u, p, sizeof u);
  const __m512i w = _mm512_set1_epi32(u);
  even = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  odd = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
inline void store(float* p, V a) { _mm512_storeu_ps(p, a); }
inline void store_n(float* p, V a, std::size_t n) { _mm512_mask_storeu_ps(p, mask16(n), a); }
inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V add(V a, V b) { return _mm512_add_ps(a, b); }
inline V mul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V div(V a, V b) { return _mm512_div_ps(a, b); }
inline V min(V a, V b) { return _mm512_min_ps(a, b); }
inline V max(V a, V b) { return _mm512_max_ps(a, b); }
inline V round_int(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline V pow2i(V n) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}
inline V zero_where_less(V x, V a, V b) {
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)), x);
}
inline V round_bf16(V a) {
  const __m512i u = _mm512_castps_si512(a);
  const __m512i absu = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(absu, _mm512_set1_epi32(0x7F800000));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb);
  r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
  return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
inline float lane(V a, int i) {
  alignas(64) float t[16];
  _mm512_store_ps(t, a);
  return t[i];
}

// After the shuffles below, lane 4q + m of the last sum holds key q + 4m.
inline __m512i reduce16_order() { return _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15); }
inline V reduce16(const V* acc) {
  // (i, i+8): pairs (A, B) → [A[i] + A[i+8] (8 lanes) | B[i] + B[i+8]].
  V x[8];
  for (int p = 0; p < 8; ++p)
    x[p] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * p], acc[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(acc[2 * p], acc[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // (i, i+4) inside each 8-lane half: pairs (P = keys a,b; Q = keys c,d) → 4 lanes per key.
  V y[4];
  for (int p = 0; p < 4; ++p)
    y[p] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * p], x[2 * p + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(x[2 * p], x[2 * p + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  // (i, i+2) and (i, i+1) inside each 128-bit lane, as in the AVX2 version.
  V z[2];
  for (int p = 0; p < 2; ++p)
    z[p] = _mm512_add_ps(_mm512_shuffle_ps(y[2 * p], y[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(y[2 * p], y[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  const V w = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_permutexvar_ps(reduce16_order(), w);
}

#endif

// exp for the fast softmax: Cody–Waite reduction x = n·ln2 + r, |r| ≤ ln2/2, then the degree-6
// Taylor polynomial in Horner form with FMAs (≤ 2 ulp on the range), times 2^n. Arguments below
// −87.33 (where e^x leaves the normal range) give +0; above 88 they are clamped to 88.
inline V exp_fast(V x) {
  const V lo = set1(-87.33654f);
  V xc = min(max(x, lo), set1(88.0f));
  const V n = round_int(mul(xc, set1(1.44269504088896341f)));
  V r = fma(n, set1(-0.693359375f), xc);
  r = fma(n, set1(2.12194440e-4f), r);
  V p = set1(1.0f / 720.0f);
  p = fma(p, r, set1(1.0f / 120.0f));
  p = fma(p, r, set1(1.0f / 24.0f));
  p = fma(p, r, set1(1.0f / 6.0f));
  p = fma(p, r, set1(0.5f));
  p = fma(p, r, set1(1.0f));
  p = fma(p, r, set1(1.0f));
  return zero_where_less(mul(p, pow2i(n)), x, lo);
}

}  // namespace dsv4::kernels::DSV4_SIMD16_NS
