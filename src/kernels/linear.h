#pragma once
// Linear layers y = x · Wᵀ over weights kept in their checkpoint format — spec §2.5/§2.6, the
// oracle's ops.linear_fp8 / linear_fp4 / linear_bf16 / linear_f32
// (tests/oracle/dsv4_oracle/ops.py).
//
// Op splits (strict, rule 5 of docs/strict-numerics.md):
//   FP8 (E4M3 codes, E8M0 scales per 32×32 block) and FP4 (packed E2M1, E8M0 scales per row and
//   32 columns): act_quant the bf16 input (§2.3, 1×32, ue8m0; dsv4::act_quant), then ONE
//   rounding of the exact Σ_k (qa·sa)·(qw·sw) to fp32 (every dequantized value and every product
//   is exact in float64), then bf16. The kernel's block partials are not reproduced (rule 5).
//   BF16 weight: exact Σ_k x·w rounded once to fp32, then bf16 (F.linear, fp32 accumulation).
//   F32 weight: exact Σ_k x·w rounded once to fp32 (fp32 output).
// Fast (Numerics::kFast): FP8/FP4 weights, and BF16 weights with bf16-valued inputs, run on the
//   bf16 kernels of bf16_gemm.h (act_quant'd activations and weights dequantized exactly to bf16,
//   fp32 accumulation in one fixed order on every instruction set); F32 weights and fp32 inputs
//   run on f32_gemm.h (the canonical 16-lane FMA dot of the fast attention kernels). Either way each output element is computed the same way
//   whatever m, the thread split or the batch it is part of.
// Weights are dequantized one row at a time while the product runs; no fp32 copy of a whole
// weight is ever made.
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/strict_dot.h"
#include "numeric/bf16.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {

enum class WeightFormat : std::uint8_t {
  kBF16,  // data: BF16 [rows, cols]
  kF32,   // data: float [rows, cols]
  kFP8,   // data: E4M3 codes [rows, cols]; scale: E8M0 [ceil(rows/32), ceil(cols/32)]
  kFP4,   // data: packed E2M1 [rows, cols/2] (element 2j in the low nibble);
          // scale: E8M0 [rows, ceil(cols/32)]
};

const char* weight_format_name(WeightFormat f);

// A non-owning view of one weight matrix in its stored format (typically bytes of a memory-mapped
// checkpoint). rows = N (output features), cols = K (input features, logical elements).
// Build it with the factories, which check the buffer sizes against the shape.
struct WeightRef {
  WeightFormat format = WeightFormat::kF32;
  std::size_t rows = 0;
  std::size_t cols = 0;
  const void* data = nullptr;
  const std::uint8_t* scale = nullptr;  // E8M0 codes for kFP8 / kFP4, null otherwise

  static WeightRef bf16(std::span<const BF16> w, std::size_t rows, std::size_t cols);
  static WeightRef f32(std::span<const float> w, std::size_t rows, std::size_t cols);
  static WeightRef fp8(std::span<const std::uint8_t> codes, std::span<const std::uint8_t> scale,
                       std::size_t rows, std::size_t cols);
  static WeightRef fp4(std::span<const std::uint8_t> packed, std::span<const std::uint8_t> scale,
                       std::size_t rows, std::size_t cols);

  // Shape of the scale tensor (0 × 0 for unscaled formats).
  std::size_t scale_rows() const;
  std::size_t scale_cols() const;

  // Row r dequantized exactly: float64 values (FP8/FP4: code value times 2^(scale − 127), NaN for
  // a NaN code or the 0xFF scale). out.size() == cols.
  void dequant_row(std::size_t r, std::span<double> out) const;
};

// out[i, j] = Σ_k x[i, k]·W[j, k] for x [m, K] (row-major fp32; bf16 values for FP8/FP4, checked),
// out [m, N]. Output is bf16-valued fp32 for kBF16 / kFP8 / kFP4, fp32 for kF32.
// FP8/FP4 need K % 32 == 0 (act_quant blocks). Shape mismatches throw dsv4::Error.
void linear(std::span<const float> x, std::size_t m, const WeightRef& w, std::span<float> out,
            Numerics mode = Numerics::kStrict);

struct LinearOptions {
  Numerics mode = Numerics::kStrict;
  // FP8/FP4 weights: act_quant the input first (§2.3), as every FP8/FP4 linear of the model does.
  // false: the input's own (bf16) values times the exact weight values, bf16 output — the
  // reference's bf16 einsum with wo_a dequantized at conversion (§3.2 step 6, §6.1 step 7), done
  // here on the stored FP8 weight without a bf16 copy (E4M3 × 2^k is exact in bf16).
  bool quantize_input = true;
  // BF16 weights: keep the fp32 result instead of rounding it to bf16 — the reference's fp32
  // F.linear on a bf16 parameter promoted at load (gate, head, ratio-2 compressor, §2.6).
  bool f32_output = false;
  // Output features are split over the pool's threads in fixed ranges; every output element is
  // computed by the same code whatever the split, so results do not depend on the thread count.
  ThreadPool* pool = nullptr;
};
void linear(std::span<const float> x, std::size_t m, const WeightRef& w, std::span<float> out,
            const LinearOptions& opt);

}  // namespace dsv4::kernels
