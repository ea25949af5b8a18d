#pragma once
// Single IEEE fp32 operations, each rounded once, for the strict kernels (docs/strict-numerics.md
// rule 1: every reference operation is RNE32 of its exact result).
//
// Why this exists: GCC contracts `a * b + c` into an FMA whenever the target has one and
// -ffp-contract=fast is in effect (GCC's default outside ISO C; it acts on SSA form, so it fuses
// across statements and inlined functions too). An FMA skips the rounding of the product, which
// breaks the one-rounding-per-op contract on aarch64 or with -march=native. mul32() therefore
// passes its result through an empty asm that the compiler must treat as opaque: the product is
// materialised (rounded to fp32) before anything can consume it. The barrier costs nothing at run
// time (no instruction is emitted).
//
// For + − × ÷ and sqrt, RNE32 of the exact result equals RNE32(RNE64(exact)) (double rounding is
// innocuous for these ops since 53 ≥ 2·24 + 2), so plain fp32 arithmetic is rule 1 exactly.
#include <cfloat>

static_assert(FLT_EVAL_METHOD == 0, "strict kernels require fp32 arithmetic without excess precision");

namespace dsv4::kernels {

// Forces v to be a materialised fp32 value (no contraction of the operation that produced it).
inline float fp32_barrier(float v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+x"(v));
#elif defined(__GNUC__) && defined(__aarch64__)
  asm("" : "+w"(v));
#else
  volatile float t = v;
  v = t;
#endif
  return v;
}

// Same for float64 intermediates (composite double evaluations such as x·sigmoid(x)).
inline double fp64_barrier(double v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+x"(v));
#elif defined(__GNUC__) && defined(__aarch64__)
  asm("" : "+w"(v));
#else
  volatile double t = v;
  v = t;
#endif
  return v;
}

inline float mul32(float a, float b) { return fp32_barrier(a * b); }
inline float add32(float a, float b) { return a + b; }
inline float sub32(float a, float b) { return a - b; }
inline float div32(float a, float b) { return a / b; }

// NaN-propagating max, as numpy's np.maximum / ndarray.max (the oracle's reductions): a NaN
// operand wins. (std::max would return whichever operand the comparison happens to favour.)
inline float max_nan(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}

}  // namespace dsv4::kernels
