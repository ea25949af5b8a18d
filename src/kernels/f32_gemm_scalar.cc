// The scalar build of f32_gemm (f32_gemm_impl.h on simd16.h): the definition itself.
#include "kernels/f32_gemm.h"

#define DSV4_SIMD16 0
#include "kernels/simd16.h"
#include "kernels/f32_gemm_impl.h"

namespace dsv4::kernels::f32_detail {

void f32_gemm_rows_scalar(const float* x, std::size_t m, std::size_t k, const void* w, bool bf16, std::size_t j0,
                          std::size_t j1, float* out, std::size_t ldo) {
  if (bf16) DSV4_SIMD16_NS::f32_gemm_rows(x, m, k, static_cast<const std::uint16_t*>(w), j0, j1, out, ldo);
  else DSV4_SIMD16_NS::f32_gemm_rows(x, m, k, static_cast<const float*>(w), j0, j1, out, ldo);
}

}  // namespace dsv4::kernels::f32_detail
