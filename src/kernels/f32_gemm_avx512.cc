// The avx512 build of f32_gemm (f32_gemm_impl.h on simd16.h).
#include "kernels/f32_gemm.h"

#if defined(__AVX512F__)
#define DSV4_SIMD16 2
#include "kernels/simd16.h"
#include "kernels/f32_gemm_impl.h"

namespace dsv4::kernels::f32_detail {

void f32_gemm_rows_avx512(const float* x, std::size_t m, std::size_t k, const void* w, bool bf16, std::size_t j0,
                      std::size_t j1, float* out, std::size_t ldo) {
  if (bf16) DSV4_SIMD16_NS::f32_gemm_rows(x, m, k, static_cast<const std::uint16_t*>(w), j0, j1, out, ldo);
  else DSV4_SIMD16_NS::f32_gemm_rows(x, m, k, static_cast<const float*>(w), j0, j1, out, ldo);
}

}  // namespace dsv4::kernels::f32_detail

#else  // not compiled for this target: never dispatched to (best_simd_path never picks it)
#include "util/error.h"

namespace dsv4::kernels::f32_detail {

void f32_gemm_rows_avx512(const float*, std::size_t, std::size_t, const void*, bool, std::size_t, std::size_t, float*,
                      std::size_t) {
  fail("f32_gemm: this build has no avx512 path");
}

}  // namespace dsv4::kernels::f32_detail
#endif
