// The AVX2+FMA path of bf16_gemm: the definition's 16 lanes as two 8-lane fp32 accumulators.
// A 32-element bf16 block read as 16 dwords puts elements 2l and 2l+1 in dword l, so the odd
// element is the dword's high half (mask) and the even one its low half (shift) — no shuffles.
// fma(a, w, acc) rounds acc + a·w once, and a·w is exact, so each step is VDPBF16PS's add.
// Weight rows are dequantized to bf16 by the portable decoder (fast_weight_row) first.
// Compiled with -mavx2 -mfma (CMakeLists.txt); only called after a run-time check.
#include "kernels/bf16_gemm_isa.h"

#if defined(__FMA__)
#include <immintrin.h>

#include <algorithm>

namespace dsv4::kernels::bf16_detail {
namespace {

constexpr int kMr = 4;

inline float reduce16(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// Lanes below 2^−126 are flushed as VDPBF16PS flushes them.
inline __m256 ftz(__m256 v) {
  const __m256 tiny = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), v), _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
  return _mm256_andnot_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), tiny), v);
}

inline void step(__m256& acc, __m256i a, __m256i w) {
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  const __m256 a_odd = _mm256_castsi256_ps(_mm256_and_si256(a, hi_mask));
  const __m256 w_odd = _mm256_castsi256_ps(_mm256_and_si256(w, hi_mask));
  const __m256 a_even = _mm256_castsi256_ps(_mm256_slli_epi32(a, 16));
  const __m256 w_even = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  acc = ftz(_mm256_fmadd_ps(a_odd, w_odd, acc));
  acc = ftz(_mm256_fmadd_ps(a_even, w_even, acc));
}

template <int MR>
void rows(const std::uint16_t* const* a, const std::uint16_t* w, std::size_t k32, float* res) {
  __m256 lo[MR], hi[MR];
  for (int i = 0; i < MR; ++i) lo[i] = hi[i] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < k32; b += kBlock) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + b));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + b + 16));
    for (int i = 0; i < MR; ++i) {
      step(lo[i], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i] + b)), w0);
      step(hi[i], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i] + b + 16)), w1);
    }
  }
  for (int i = 0; i < MR; ++i) res[i] = reduce16(lo[i], hi[i]);
}

}  // namespace

void gemm_rows_avx2(const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                    float* out, std::size_t ldo) {
  std::uint16_t* wrow = scratch_u16(a.k32);
  const std::uint16_t* ar[kMr];
  float res[kMr];
  for (std::size_t j = j0; j < j1; ++j) {
    fast_weight_row(w, j, wrow, a.k32);
    if (!row_in_fast_range(w, j)) {  // the scalar definition, as on every path
      for (std::size_t i = 0; i < a.m; ++i) out[i * ldo + j] = lane16_dot_scalar(a.row(i), wrow, a.k32);
      continue;
    }
    for (std::size_t i0 = 0; i0 < a.m; i0 += kMr) {
      const std::size_t mr = std::min<std::size_t>(kMr, a.m - i0);
      for (std::size_t i = 0; i < mr; ++i) ar[i] = a.row(i0 + i);
      switch (mr) {
        case 1: rows<1>(ar, wrow, a.k32, res); break;
        case 2: rows<2>(ar, wrow, a.k32, res); break;
        case 3: rows<3>(ar, wrow, a.k32, res); break;
        default: rows<4>(ar, wrow, a.k32, res); break;
      }
      for (std::size_t i = 0; i < mr; ++i) out[(i0 + i) * ldo + j] = res[i];
    }
  }
}

}  // namespace dsv4::kernels::bf16_detail

#else  // not compiled for this target: never dispatched to (isa_supported is false)
#include "util/error.h"
namespace dsv4::kernels::bf16_detail {
void gemm_rows_avx2(const Bf16Acts&, const WeightRef&, std::size_t, std::size_t, float*, std::size_t) {
  fail("bf16_gemm: this build has no gemm_rows_avx2 path");
}
}  // namespace dsv4::kernels::bf16_detail
#endif
