// Strict dot products and reductions (rule 2). See strict_dot.h.
#include "kernels/strict_dot.h"

#include <cmath>

#include "kernels/exact_sum.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

// float64 sum and absolute sum of the exact products a[k]·b[k], four interleaved partial sums
// (the bound of rule 2 holds for any summation order).
template <class T>
void sum_products(const T* a, const T* b, std::size_t k, double* s_out, double* abs_out) {
  double s[4] = {0, 0, 0, 0}, ab[4] = {0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 4 <= k; i += 4) {
    for (int j = 0; j < 4; ++j) {
      const double p = static_cast<double>(a[i + j]) * static_cast<double>(b[i + j]);
      s[j] += p;
      ab[j] += std::fabs(p);
    }
  }
  for (; i < k; ++i) {
    const double p = static_cast<double>(a[i]) * static_cast<double>(b[i]);
    s[0] += p;
    ab[0] += std::fabs(p);
  }
  *s_out = (s[0] + s[1]) + (s[2] + s[3]);
  *abs_out = (ab[0] + ab[1]) + (ab[2] + ab[3]);
}

template <class T>
float dot_impl(const T* a, const T* b, std::size_t k) {
  double s, ab;
  sum_products(a, b, k, &s, &ab);
  float out;
  if (decide_sum_f32(s, ab, k, &out)) return out;
  ExactAccumulator acc;
  for (std::size_t i = 0; i < k; ++i) acc.add(static_cast<double>(a[i]) * static_cast<double>(b[i]));
  return acc.round32();
}

float fast_dot(const float* a, const float* b, std::size_t k) {
  float acc = 0.0f;
  for (std::size_t i = 0; i < k; ++i) acc += a[i] * b[i];
  return acc;
}

}  // namespace

float strict_dot(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) fail("strict_dot: lengths {} and {} differ", a.size(), b.size());
  return dot_impl(a.data(), b.data(), a.size());
}

float strict_dot64(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size()) fail("strict_dot64: lengths {} and {} differ", a.size(), b.size());
  return dot_impl(a.data(), b.data(), a.size());
}

void matmul_nt(std::span<const float> a, std::span<const float> b, std::span<float> out,
               std::size_t m, std::size_t n, std::size_t k, Numerics mode) {
  if (a.size() != m * k) fail("matmul_nt: a has {} elements, expected {}x{}", a.size(), m, k);
  if (b.size() != n * k) fail("matmul_nt: b has {} elements, expected {}x{}", b.size(), n, k);
  if (out.size() != m * n) fail("matmul_nt: out has {} elements, expected {}x{}", out.size(), m, n);
  for (std::size_t i = 0; i < m; ++i) {
    const float* ai = a.data() + i * k;
    for (std::size_t j = 0; j < n; ++j) {
      const float* bj = b.data() + j * k;
      out[i * n + j] = mode == Numerics::kStrict ? dot_impl(ai, bj, k) : fast_dot(ai, bj, k);
    }
  }
}

float strict_sum(std::span<const float> x) {
  double s = 0.0, ab = 0.0;
  for (float v : x) {
    s += v;
    ab += std::fabs(static_cast<double>(v));
  }
  float out;
  if (decide_sum_f32(s, ab, x.size(), &out)) return out;
  ExactAccumulator acc;
  for (float v : x) acc.add(v);
  return acc.round32();
}

float strict_mean(std::span<const float> x) {
  double s = 0.0, ab = 0.0;
  for (float v : x) {
    s += v;
    ab += std::fabs(static_cast<double>(v));
  }
  float out;
  if (decide_mean_f32(s, ab, x.size(), &out)) return out;
  ExactAccumulator acc;
  for (float v : x) acc.add(v);
  return acc.mean32(x.size());
}

float strict_mean_sq(std::span<const float> x) {
  // dot16_f64's 16 partial sums: decide_mean_f32's bound holds for a float64 sum in any order, so
  // the bits are those of one running sum, and the 16 chains overlap where one running sum
  // waited ~4 cycles per element (this is RMSNorm's loop, over every row of a prefill).
  const double s = dot16_f64(x.data(), x.data(), x.size());
  float out;
  // The squares are their own absolute values (NaN squares make s NaN, decided).
  if (decide_mean_f32(s, s, x.size(), &out)) return out;
  ExactAccumulator acc;
  for (float v : x) acc.add(static_cast<double>(v) * static_cast<double>(v));
  return acc.mean32(x.size());
}

}  // namespace dsv4::kernels
