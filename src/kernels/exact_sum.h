#pragma once
// Correctly rounded sums of exact float64 terms — rule 2 of docs/strict-numerics.md, the
// semantics of the oracle's strict._fsum32 / strict._strict_reduce (tests/oracle/dsv4_oracle/
// strict.py): RNE32(RNE64(Σ exact terms)), i.e. Python's math.fsum then one float32 rounding.
//
// Two layers:
//  * ExactAccumulator — a fixed-point superaccumulator covering every finite double (2^−1074 ..
//    2^1024, plus carry headroom), so any number of finite terms is summed with no rounding at
//    all; round64() / mean64() then round the exact value once. This is the fallback.
//  * exact_sum_f32 / exact_mean_f32 — the fast path the oracle uses: a float64 sum s in any
//    order and the bound b = n·2^−52·Σ|t|; when RNE32(s − b) and RNE32(s + b) have the same bits
//    the fp32 result is decided (every value in between rounds to those bits), otherwise the
//    accumulator recomputes it exactly. Both paths give the same bits by construction.
//
// Signed zeros (the oracle's convention): an exact sum (or mean) whose float64 rounding is zero
// is +0; a nonzero value that underflows only in the fp32 rounding keeps its sign.
// Non-finite terms: the IEEE float64 result of the plain sum (inf, or NaN for inf − inf or a NaN
// term), as the oracle's float64 sum gives; the accumulator itself only takes finite terms.
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dsv4::kernels {

class ExactAccumulator {
 public:
  ExactAccumulator() { clear(); }
  void clear();

  // Adds one finite term exactly. Precondition (checked): t is finite.
  void add(double t);
  // Adds a·b exactly where the product is exact in float64 (any two fp32 values).
  void add_product(double a, double b) { add(a * b); }

  // True when the exact sum is zero.
  bool is_zero() const;
  // RNE64 of the exact sum; an exact zero gives +0.
  double round64() const;
  // RNE64 of the exact sum divided by n (1 ≤ n < 2^32); a zero result gives +0.
  double mean64(std::uint64_t n) const;
  // RNE32(RNE64(sum)) with the zero convention above.
  float round32() const;
  float mean32(std::uint64_t n) const;

 private:
  // 32-bit digits in int64 limbs (carries deferred). Digit i weighs 2^(32·i − 1074).
  static constexpr int kLimbs = 70;
  // Terms added since the last carry propagation; each add puts < 2^34 into a limb, so the
  // limbs cannot overflow before 2^28 adds.
  static constexpr std::uint32_t kNormalizeEvery = 1u << 28;
  void normalize();
  // Normalised copy: sign and magnitude digits (each < 2^32), least significant first.
  bool magnitude(std::array<std::uint32_t, kLimbs>& mag) const;

  std::array<std::int64_t, kLimbs> limb_;
  std::uint32_t pending_ = 0;
};

// RNE32(RNE64(Σ terms)) (rule 2). Terms are exact values (e.g. products of two fp32 numbers).
float exact_sum_f32(std::span<const double> terms);
// RNE64(Σ terms), math.fsum semantics (exact zero → +0).
double exact_sum_f64(std::span<const double> terms);
// RNE32(RNE64(Σ terms / n)), n = terms.size() (strict.smean: the mean is one operation).
float exact_mean_f32(std::span<const double> terms);

// The decision step of rule 2, exposed for the kernels that form their own float64 sums.
// s: float64 sum of the n terms in any order, abs_sum: float64 Σ|t|.
// Returns true and sets *out when the fp32 rounding is decided; false when it must be recomputed
// exactly. Non-finite s is decided (its IEEE value).
bool decide_sum_f32(double s, double abs_sum, std::size_t n, float* out);
// Same for a mean q = s / n (bound widened for the division's rounding, as strict.smean).
bool decide_mean_f32(double s, double abs_sum, std::size_t n, float* out);

// The interval behind decide_mean_f32, for loops that decide many means at once: q = s / n and
// the fp32 roundings of q ∓ b, with b the sum's bound divided by n widened by 2^−50·|q| for the
// division's own rounding. For finite q the mean is decided exactly when lo and hi have the same
// bits, and is then RNE32(q) with a zero q read as +0 (strict.smean's convention; a sum taken
// from +0 in round-to-nearest is never −0, so its conversion alone gives that). Branch-free, so
// the callers' loops vectorise; decide_mean_f32 is written on it, so the two cannot drift apart.
// (Its products by powers of two are exact, so contraction into FMAs could only change results
// in the subnormal range; its callers are built without contraction.)
struct MeanInterval {
  double q;
  float lo, hi;
  bool decided() const { return std::bit_cast<std::uint32_t>(lo) == std::bit_cast<std::uint32_t>(hi); }
};
inline MeanInterval mean_interval(double s, double abs_sum, double n) {
  const double q = s / n;
  const double b = ((n * 0x1p-52) * abs_sum) / n + std::fabs(q) * 0x1p-50;
  return {q, static_cast<float>(q - b), static_cast<float>(q + b)};
}

}  // namespace dsv4::kernels
