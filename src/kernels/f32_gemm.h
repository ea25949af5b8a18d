#pragma once
// Fast-numerics linear for fp32 activations: out[i, j] = Σ_d x[i, d] · w[j, d] with F32 or BF16
// weights (the head, the fp32 compressor and DSpark projections, any BF16 weight fed an input that
// is not bf16-valued), where bf16_gemm cannot be used because the inputs have no bf16 form.
//
// The definition (one fixed order, so a result never depends on m, the batch, the thread split or
// the instruction set): the canonical 16-lane dot of the fast attention kernels (simd16.h) — lane
// l accumulates fma(x[d], w[d], acc) over d ≡ l (mod 16) in ascending d, the tail lanes taking
// +0 operands, then the lanes are summed by the halving tree (l, l+8) → (l, l+4) → (l, l+2) →
// (l, l+1). BF16 weights widen exactly to fp32. The scalar build (std::fma) is the reference the
// AVX2 and AVX-512 builds are tested against bit for bit (tests/kernels/f32_gemm_test.cc).
//
// Why it matters: the vocabulary head is the largest single read of a decode step (129,280 rows),
// and as a plain sequential fp32 loop it ran at about a third of the memory bandwidth.
#include <cstddef>
#include <span>

#include "kernels/attention_fast.h"  // SimdPath, best_simd_path
#include "kernels/linear.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {

// out[i·n + j] for i < m, j < n = w.rows; w is F32 or BF16 with w.cols = k; x is m × k fp32.
// Work is split over the pool in fixed panels of 16 weight rows.
void f32_gemm(std::span<const float> x, std::size_t m, const WeightRef& w, std::span<float> out,
              ThreadPool* pool, SimdPath path = best_simd_path());

namespace f32_detail {
// Rows [j0, j1) of the output for every activation row, one build per instruction set.
#define DSV4_F32_GEMM_DECL(t)                                                                       \
  void f32_gemm_rows_##t(const float* x, std::size_t m, std::size_t k, const void* w, bool bf16, \
                         std::size_t j0, std::size_t j1, float* out, std::size_t ldo);
DSV4_F32_GEMM_DECL(scalar)
DSV4_F32_GEMM_DECL(avx2)
DSV4_F32_GEMM_DECL(avx512)
#undef DSV4_F32_GEMM_DECL
}  // namespace f32_detail

}  // namespace dsv4::kernels
