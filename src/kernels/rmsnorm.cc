// RMSNorm (§2.7). See rmsnorm.h.
#include "kernels/rmsnorm.h"

#include <vector>

#include "kernels/fp32_ops.h"
#include "kernels/strict_dot.h"
#include "kernels/transcendental.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4::kernels {

float rms_factor(std::span<const float> x, double eps) {
  const float ms = strict_mean_sq(x);
  return strict_rsqrt(add32(ms, static_cast<float>(eps)));
}

void rmsnorm(std::span<const float> x, std::span<const float> w, double eps, std::span<float> out,
             std::size_t rows, ThreadPool* pool) {
  const std::size_t d = w.size();
  if (x.size() != rows * d) fail("rmsnorm: x has {} elements, expected {}x{}", x.size(), rows, d);
  if (out.size() != x.size()) fail("rmsnorm: out has {} elements, expected {}", out.size(), x.size());
  parallel_for(rows * d >= kParallelElements ? pool : nullptr, rows, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const std::span<const float> xr = x.subspan(r * d, d);
      const float f = rms_factor(xr, eps);  // read all of the row before out (may alias) is written
      // Two fp32 products, each rounded (nothing here is an addition, so no contraction can
      // fuse them: mul32's barrier is not needed, and without it the loop vectorises).
      float* o = out.data() + r * d;
      const float* xp = xr.data();
      for (std::size_t k = 0; k < d; ++k) o[k] = round_bf16(w[k] * (xp[k] * f));
    }
  });
}

void rmsnorm(std::span<const float> x, std::span<const BF16> w, double eps, std::span<float> out,
             std::size_t rows, ThreadPool* pool) {
  ScratchFrame frame;
  const std::span<float> wf = frame.uninit<float>(w.size());
  for (std::size_t k = 0; k < w.size(); ++k) wf[k] = bf16_to_f32(w[k]);
  rmsnorm(x, wf, eps, out, rows, pool);
}

}  // namespace dsv4::kernels
