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

// Weight rows [j0, j1) against activation rows [0, m): 16 weight rows at a time, each tile's
// rows read once from memory and then kept in cache while every activation row passes over them.
// A short tile repeats its last row (the extra results are dropped).
template <class T>
void f32_gemm_rows(const float* x, std::size_t m, std::size_t k, const T* w, std::size_t j0, std::size_t j1,
                   float* out, std::size_t ldo) {
  for (std::size_t j = j0; j < j1; j += 16) {
    const std::size_t nr = std::min<std::size_t>(16, j1 - j);
    const T* rows[16];
    for (std::size_t r = 0; r < 16; ++r) rows[r] = w + (j + std::min(r, nr - 1)) * k;
    for (std::size_t i = 0; i < m; ++i) {
      const float* xi = x + i * k;
      V acc[16];
      for (V& a : acc) a = zero();
      std::size_t c = 0;
      for (; c + 16 <= k; c += 16) {
        const V xc = load(xi + c);
        for (int r = 0; r < 16; ++r) acc[r] = fma(xc, load_w(rows[r] + c), acc[r]);
      }
      if (c < k) {
        const V xc = load_n(xi + c, k - c);
        for (int r = 0; r < 16; ++r) acc[r] = fma(xc, load_w_n(rows[r] + c, k - c), acc[r]);
      }
      const V s = reduce16(acc);
      if (nr == 16) {
        store(out + i * ldo + j, s);
      } else {
        store_n(out + i * ldo + j, s, nr);
      }
    }
  }
}

}  // namespace dsv4::kernels::DSV4_SIMD16_NS
