#pragma once
// Strict transcendentals — rule 3 of docs/strict-numerics.md, the oracle's strict.sexp, slog1p,
// ssqrt, srsqrt, ssigmoid, ssoftplus, ssilu, scos, ssin, spow, serf
// (tests/oracle/dsv4_oracle/strict.py; spec §2.10, §2.11).
//
// Each function widens its fp32 input(s) exactly to double, evaluates with the C library
// (glibc, as the oracle does through numpy's or math's float64 functions), and rounds ONCE to
// fp32. Composite functions that the reference computes as one torch op (sigmoid, softplus,
// silu, rsqrt) are one double evaluation written exactly as the oracle writes it, then one
// rounding. Identical libm + identical double expression ⇒ identical bits.
//
// The double intermediates pass through fp64_barrier so that no FMA contraction can change an
// expression (none of these has a multiply feeding an add, but the barrier keeps it that way).
#include <cmath>
#include <cstddef>

#include "kernels/fp32_ops.h"

namespace dsv4::kernels {

inline float strict_exp(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

inline float strict_log1p(float x) {
  return static_cast<float>(std::log1p(static_cast<double>(x)));
}

// IEEE sqrt is correctly rounded; RNE32(RNE64(sqrt)) equals RNE32(sqrt) but is written as the
// contract states.
inline float strict_sqrt(float x) { return static_cast<float>(std::sqrt(static_cast<double>(x))); }

// rsqrt(x) = 1 / sqrt(x), both in double, one rounding (torch.rsqrt is one op). 0 → +inf,
// −0 → −inf, negative → NaN (IEEE).
inline float strict_rsqrt(float x) {
  return static_cast<float>(1.0 / fp64_barrier(std::sqrt(static_cast<double>(x))));
}

// 1 / (1 + exp(−x)) in double (strict._sigmoid64).
inline double sigmoid64(double x) { return 1.0 / fp64_barrier(1.0 + std::exp(-x)); }

inline float strict_sigmoid(float x) { return static_cast<float>(sigmoid64(static_cast<double>(x))); }

// softplus with β = 1, threshold 20 (§2.11): the fp32 input itself when x > 20, otherwise
// RNE32(log1p(exp(x))) in double. NaN fails the comparison and gives NaN.
inline float strict_softplus(float x) {
  if (x > 20.0f) return x;
  return static_cast<float>(std::log1p(fp64_barrier(std::exp(static_cast<double>(x)))));
}

// silu(x) = x · (1 / (1 + exp(−x))) as one double evaluation (F.silu is one op).
inline float strict_silu(float x) {
  const double xd = static_cast<double>(x);
  return static_cast<float>(xd * fp64_barrier(sigmoid64(xd)));
}

// out[i] = strict_silu(x[i]) for i < n, bit for bit, in vectorised passes (silu_vector.cc). out
// must not overlap x.
void strict_silu_n(const float* x, float* out, std::size_t n);

inline float strict_cos(float x) { return static_cast<float>(std::cos(static_cast<double>(x))); }
inline float strict_sin(float x) { return static_cast<float>(std::sin(static_cast<double>(x))); }

// x ** y: double pow of the fp32 operands, one rounding.
inline float strict_pow(float x, float y) {
  return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y)));
}

// erf (vision GELU), double erf, one rounding.
inline float strict_erf(float x) { return static_cast<float>(std::erf(static_cast<double>(x))); }

}  // namespace dsv4::kernels
