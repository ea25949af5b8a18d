#pragma once
// A 16 × 16 transpose of dwords in AVX-512 registers, for the lane-major layouts of the
// prefill kernel (bf16_gemm_avx512_lanes.cc). Include only from translation units compiled for
// AVX-512.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace dsv4::kernels::bf16_detail {

// v[r] (16 dwords each) → v[c] holds dword c of every former v[r], in r order.
inline void transpose16(__m512i (&v)[16]) {
  __m512i t[16];
  for (int k = 0; k < 8; ++k) {
    t[2 * k] = _mm512_unpacklo_epi32(v[2 * k], v[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_epi32(v[2 * k], v[2 * k + 1]);
  }
  // u[4k + j], 128-bit lane q: rows 4k…4k+3 of column 4q + j.
  __m512i u[16];
  for (int k = 0; k < 4; ++k) {
    u[4 * k + 0] = _mm512_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
    u[4 * k + 1] = _mm512_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
    u[4 * k + 2] = _mm512_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
    u[4 * k + 3] = _mm512_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
  }
  // Column 4q + j = 128-bit lane q of u[j], u[4 + j], u[8 + j], u[12 + j].
  for (int j = 0; j < 4; ++j) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xEE);
    const __m512i x2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44);
    const __m512i x3 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xEE);
    v[j] = _mm512_shuffle_i32x4(x0, x2, 0x88);
    v[4 + j] = _mm512_shuffle_i32x4(x0, x2, 0xDD);
    v[8 + j] = _mm512_shuffle_i32x4(x1, x3, 0x88);
    v[12 + j] = _mm512_shuffle_i32x4(x1, x3, 0xDD);
  }
}

// Block b of a 16-row group g of a lane-major weight panel (bf16_gemm_isa.h): v[r] holds the
// block's 16 pairs of row 16g + r; after the transpose, pair l of the 16 rows goes to plane l.
inline void store_lane_block(__m512i (&v)[16], std::uint32_t* wl, std::size_t plane, std::size_t b, int groups,
                             int g) {
  transpose16(v);
  const std::size_t at = (b * static_cast<std::size_t>(groups) + static_cast<std::size_t>(g)) * 16;
  for (std::size_t l = 0; l < 16; ++l) _mm512_storeu_si512(wl + l * plane + at, v[l]);
}

}  // namespace dsv4::kernels::bf16_detail
