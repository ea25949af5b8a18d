// Dispatch, argument checks and the work split of f32_gemm (f32_gemm.h).
#include "kernels/f32_gemm.h"

#include "util/error.h"

namespace dsv4::kernels {

void f32_gemm(std::span<const float> x, std::size_t m, const WeightRef& w, std::span<float> out,
              ThreadPool* pool, SimdPath path) {
  const std::size_t n = w.rows, k = w.cols;
  if (w.format != WeightFormat::kF32 && w.format != WeightFormat::kBF16)
    fail("f32_gemm: {} weight, expected F32 or BF16", weight_format_name(w.format));
  if (x.size() != m * k) fail("f32_gemm: input has {} elements, expected {}x{}", x.size(), m, k);
  if (out.size() != m * n) fail("f32_gemm: output has {} elements, expected {}x{}", out.size(), m, n);
  if (m == 0 || n == 0) return;
  if (w.data == nullptr) fail("f32_gemm: {} weight without data", weight_format_name(w.format));
  const bool bf16 = w.format == WeightFormat::kBF16;
  // Fixed panels of 16 output columns: the same tiles whatever the thread count.
  const std::size_t panels = (n + 15) / 16;
  auto run = [&](std::size_t p0, std::size_t p1) {
    const std::size_t j0 = p0 * 16, j1 = std::min(n, p1 * 16);
    switch (path) {
      case SimdPath::kAvx512: f32_detail::f32_gemm_rows_avx512(x.data(), m, k, w.data, bf16, j0, j1, out.data(), n); break;
      case SimdPath::kAvx2: f32_detail::f32_gemm_rows_avx2(x.data(), m, k, w.data, bf16, j0, j1, out.data(), n); break;
      case SimdPath::kScalar: f32_detail::f32_gemm_rows_scalar(x.data(), m, k, w.data, bf16, j0, j1, out.data(), n); break;
    }
  };
  parallel_for(pool, panels, run);
}

}  // namespace dsv4::kernels
