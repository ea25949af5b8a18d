// The body of f32_gemm (f32_gemm.h), written once against simd16.h and compiled per target by
// f32_gemm_{scalar,avx2,avx512}.cc. Include after simd16.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dsv4::kernels::DSV4_SIMD16_NS {

template <class T>
inline V load_w(const T* p) {
  if constexpr (sizeof(T) == 2) return load_bf16(p);
  else return load(p);
}
template <class T>
inline V load_w_n(const T* p, std::size_t n) {
  if constexpr (sizeof(T) == 2) return load_bf16_n(p, n);
  else return load_n(p, n);
}

// Weight rows [j0, j1) against activation rows [0, m), R weight rows at a time (R ≤ 16), each
// tile's rows read once from memory and then kept in cache while every activation row passes over
// them. A short tile repeats its last row (the extra results are dropped).
// kPrefetch: the first activation row's pass prefetches, in address order, the tile about 20 KB
// ahead (the tiles' rows are adjacent, so the tiles are one contiguous region). The loads
// themselves are R interleaved streams, which the hardware prefetchers follow poorly: the head's
// mat-vec read memory at ~0.85 of a plain sweep's rate with R = 16 and no prefetch, ~0.95 with
// R = 2 and this (paired measurements, bench/kernels_bench.cc).
template <std::size_t R, bool kPrefetch, class T>
void f32_gemm_tiles(const float* x, std::size_t m, std::size_t k, const T* w, std::size_t j0, std::size_t j1,
                    float* out, std::size_t ldo) {
  constexpr std::size_t kStepBytes = R * 16 * sizeof(T);  // of a tile, per 16 columns
  const std::size_t tile_bytes = R * k * sizeof(T);
  const std::size_t ahead = std::max<std::size_t>(1, (20 * 1024 + tile_bytes / 2) / tile_bytes) * tile_bytes;
  for (std::size_t j = j0; j < j1; j += R) {
    const std::size_t nr = std::min<std::size_t>(R, j1 - j);
    const T* rows[R];
    for (std::size_t r = 0; r < R; ++r) rows[r] = w + (j + std::min(r, nr - 1)) * k;
    // (an address, never dereferenced: prefetches do not fault)
    const std::uintptr_t next = reinterpret_cast<std::uintptr_t>(rows[0]) + ahead;
    for (std::size_t i = 0; i < m; ++i) {
      const float* xi = x + i * k;
      V acc[16];
      for (V& a : acc) a = zero();
      std::size_t c = 0;
      for (; c + 16 <= k; c += 16) {
        if (kPrefetch && i == 0)  // the lines of the tile ahead that start in this step's bytes
          for (std::size_t o = (c / 16 * kStepBytes + 63) / 64 * 64; o < (c / 16 + 1) * kStepBytes; o += 64)
            __builtin_prefetch(reinterpret_cast<const void*>(next + o), 0, 3);
        const V xc = load(xi + c);
        for (std::size_t r = 0; r < R; ++r) acc[r] = fma(xc, load_w(rows[r] + c), acc[r]);
      }
      if (c < k) {
        const V xc = load_n(xi + c, k - c);
        for (std::size_t r = 0; r < R; ++r) acc[r] = fma(xc, load_w_n(rows[r] + c, k - c), acc[r]);
      }
      const V s = reduce16(acc);  // (rows R…15 reduce zeros; their lanes are not stored)
      if (nr == 16) {
        store(out + i * ldo + j, s);
      } else {
        store_n(out + i * ldo + j, s, nr);
      }
    }
  }
}

// Decode (one or two activation rows): 2-row tiles, prefetched; the tile's two FMA chains per
// column block are enough to keep up with memory. More rows: 16-row tiles, each row of weights
// reused from cache by every activation row.
template <class T>
void f32_gemm_rows(const float* x, std::size_t m, std::size_t k, const T* w, std::size_t j0, std::size_t j1,
                   float* out, std::size_t ldo) {
  if (m <= 2) return f32_gemm_tiles<2, true>(x, m, k, w, j0, j1, out, ldo);
  f32_gemm_tiles<16, false>(x, m, k, w, j0, j1, out, ldo);
}

}  // namespace dsv4::kernels::DSV4_SIMD16_NS
