#pragma once
// RMSNorm — spec §2.7, the oracle's ops.rmsnorm (tests/oracle/dsv4_oracle/ops.py).
//
// y = bf16(w · (x · rsqrt(mean(x²) + eps))), split at the torch ops, each rounded once:
//   ms  = strict mean of the exact float64 squares (one op: exact sum / n, rounded once)
//   d   = fp32(ms + fp32(eps))       eps is a double constant cast to fp32 (fp32(1e−20) is normal)
//   r   = strict rsqrt(d)            1/sqrt in double, rounded once
//   y_k = fp32(x_k · r)
//   out = bf16(fp32(w_k · y_k))      w widened exactly to fp32 (bf16 or fp32 parameter)
#include <cstddef>
#include <span>

#include "numeric/bf16.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {

// x [rows, d] fp32 (bf16 values in the model), w [d], out [rows, d] (bf16-valued fp32).
// out may alias x. Rows are split over `pool` (may be null) when there are enough of them; each
// row's arithmetic is the same on any thread.
void rmsnorm(std::span<const float> x, std::span<const float> w, double eps, std::span<float> out,
             std::size_t rows, ThreadPool* pool = nullptr);
void rmsnorm(std::span<const float> x, std::span<const BF16> w, double eps, std::span<float> out,
             std::size_t rows, ThreadPool* pool = nullptr);

// The per-row factor r = rsqrt(fp32(mean(x²) + fp32(eps))) (shared with hc_mixes, §5.1).
float rms_factor(std::span<const float> x, double eps);

}  // namespace dsv4::kernels
