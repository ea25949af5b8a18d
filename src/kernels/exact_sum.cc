// Exact sums (rule 2): the superaccumulator and the error-bound decision. See exact_sum.h.
#include "kernels/exact_sum.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "util/error.h"

namespace dsv4::kernels {
namespace {

constexpr std::uint64_t kMask32 = 0xFFFFFFFFull;
// Bit 0 of the accumulator weighs 2^−1074, the smallest subnormal double.
constexpr int kMinExp = -1074;

bool bit_at(const std::uint32_t* d, int nd, int i) {
  if (i < 0 || i >= 32 * nd) return false;
  return (d[i >> 5] >> (i & 31)) & 1u;
}

// Any set bit with index < idx.
bool any_below(const std::uint32_t* d, int nd, int idx) {
  if (idx <= 0) return false;
  const int full = std::min(idx >> 5, nd);
  for (int i = 0; i < full; ++i)
    if (d[i] != 0) return true;
  if (full < nd && (idx & 31) != 0) {
    const std::uint32_t part = d[full] & ((1u << (idx & 31)) - 1u);
    if (part != 0) return true;
  }
  return false;
}

int top_bit(const std::uint32_t* d, int nd) {
  for (int i = nd - 1; i >= 0; --i)
    if (d[i] != 0) return 32 * i + 31 - std::countl_zero(d[i]);
  return -1;
}

// RNE64 of (±) Σ d_i 2^(32i) · 2^e0, plus an infinitesimal when `sticky` (a nonzero remainder
// below bit 0). The result's lowest bit is never below 2^−1074 (subnormals are rounded at their
// own quantum, as IEEE does), and a carry past 2^1024 gives inf through ldexp.
double round_digits(const std::uint32_t* d, int nd, int e0, bool sticky, bool neg) {
  const int p = top_bit(d, nd);
  if (p < 0 && !sticky) return 0.0;
  const int min_lsb = kMinExp - e0;
  const int lsb = std::max(p - 52, min_lsb);
  std::uint64_t mant = 0;
  for (int i = lsb; i <= p; ++i)
    if (bit_at(d, nd, i)) mant |= 1ull << (i - lsb);
  const bool guard = bit_at(d, nd, lsb - 1);
  sticky = sticky || any_below(d, nd, lsb - 1);
  if (guard && (sticky || (mant & 1u))) ++mant;
  const double mag = std::ldexp(static_cast<double>(mant), lsb + e0);  // exact, or inf
  return neg ? -mag : mag;
}

float to_f32_keep_plus_zero(double r) { return r == 0.0 ? 0.0f : static_cast<float>(r); }

}  // namespace

void ExactAccumulator::clear() {
  limb_.fill(0);
  pending_ = 0;
}

void ExactAccumulator::add(double t) {
  const std::uint64_t u = std::bit_cast<std::uint64_t>(t);
  const int e = static_cast<int>((u >> 52) & 0x7FF);
  std::uint64_t m = u & ((1ull << 52) - 1);
  if (e == 0x7FF) fail("ExactAccumulator: non-finite term {}", t);
  int off = 0;  // bit index of m's lowest bit in accumulator units (2^−1074)
  if (e == 0) {
    if (m == 0) return;
  } else {
    m |= 1ull << 52;
    off = e - 1;
  }
  const int i = off >> 5;
  const int sh = off & 31;
  // m·2^sh spans at most 85 bits: split into three digits without a 128-bit type.
  const std::uint64_t lo = (m & kMask32) << sh;  // < 2^63
  const std::uint64_t hi = (m >> 32) << sh;      // < 2^52
  const std::int64_t d0 = static_cast<std::int64_t>(lo & kMask32);
  const std::int64_t d1 = static_cast<std::int64_t>((lo >> 32) + (hi & kMask32));  // < 2^33
  const std::int64_t d2 = static_cast<std::int64_t>(hi >> 32);
  if (u >> 63) {
    limb_[i] -= d0;
    limb_[i + 1] -= d1;
    limb_[i + 2] -= d2;
  } else {
    limb_[i] += d0;
    limb_[i + 1] += d1;
    limb_[i + 2] += d2;
  }
  if (++pending_ >= kNormalizeEvery) normalize();
}

// Carry propagation: every limb but the top ends in [0, 2^32); the top limb keeps the sign.
void ExactAccumulator::normalize() {
  for (int i = 0; i + 1 < kLimbs; ++i) {
    const std::int64_t carry = limb_[i] >> 32;  // floor division (arithmetic shift, C++20)
    limb_[i] &= static_cast<std::int64_t>(kMask32);
    limb_[i + 1] += carry;
  }
  pending_ = 0;
}

bool ExactAccumulator::magnitude(std::array<std::uint32_t, kLimbs>& mag) const {
  ExactAccumulator c = *this;
  c.normalize();
  const bool neg = c.limb_[kLimbs - 1] < 0;
  if (neg) {
    for (auto& l : c.limb_) l = -l;
    c.normalize();
  }
  for (int i = 0; i < kLimbs; ++i) mag[i] = static_cast<std::uint32_t>(c.limb_[i]);
  return neg;
}

bool ExactAccumulator::is_zero() const {
  std::array<std::uint32_t, kLimbs> mag;
  magnitude(mag);
  return top_bit(mag.data(), kLimbs) < 0;
}

double ExactAccumulator::round64() const {
  std::array<std::uint32_t, kLimbs> mag;
  const bool neg = magnitude(mag);
  const double r = round_digits(mag.data(), kLimbs, kMinExp, false, neg);
  return r == 0.0 ? 0.0 : r;
}

double ExactAccumulator::mean64(std::uint64_t n) const {
  if (n == 0 || n > kMask32) fail("ExactAccumulator::mean64: count {} outside [1, 2^32)", n);
  std::array<std::uint32_t, kLimbs> mag;
  const bool neg = magnitude(mag);
  // Quotient of (sum · 2^96) / n by schoolbook division with 32-bit digits: the 96 extra bits
  // give the quotient ≥ 2^64 significant bits for any nonzero sum, far more than the 53 + guard
  // bits the rounding needs; the remainder only matters as a sticky bit.
  constexpr int kShiftLimbs = 3;
  std::array<std::uint32_t, kLimbs + kShiftLimbs> q{};
  std::uint64_t rem = 0;
  for (int i = kLimbs - 1; i >= 0; --i) {
    const std::uint64_t cur = (rem << 32) | mag[i];  // rem < n < 2^32: no overflow
    q[i + kShiftLimbs] = static_cast<std::uint32_t>(cur / n);
    rem = cur % n;
  }
  for (int i = kShiftLimbs - 1; i >= 0; --i) {
    const std::uint64_t cur = rem << 32;
    q[i] = static_cast<std::uint32_t>(cur / n);
    rem = cur % n;
  }
  const double r = round_digits(q.data(), kLimbs + kShiftLimbs, kMinExp - 32 * kShiftLimbs,
                                rem != 0, neg);
  return r == 0.0 ? 0.0 : r;
}

float ExactAccumulator::round32() const { return to_f32_keep_plus_zero(round64()); }
float ExactAccumulator::mean32(std::uint64_t n) const { return to_f32_keep_plus_zero(mean64(n)); }

bool decide_sum_f32(double s, double abs_sum, std::size_t n, float* out) {
  if (!std::isfinite(s)) {
    *out = static_cast<float>(s);
    return true;
  }
  const double b = (static_cast<double>(n) * 0x1p-52) * abs_sum;
  const float lo = static_cast<float>(s - b);
  const float hi = static_cast<float>(s + b);
  if (std::bit_cast<std::uint32_t>(lo) != std::bit_cast<std::uint32_t>(hi)) return false;
  // A decided zero is an exact zero (a nonzero sum near 0 has s ± b of opposite signs).
  *out = to_f32_keep_plus_zero(s);
  return true;
}

bool decide_mean_f32(double s, double abs_sum, std::size_t n, float* out) {
  const MeanInterval m = mean_interval(s, abs_sum, static_cast<double>(n));  // n = 0: NaN, as numpy's mean of nothing
  if (!std::isfinite(m.q)) {
    *out = static_cast<float>(m.q);
    return true;
  }
  if (!m.decided()) return false;
  *out = to_f32_keep_plus_zero(m.q);
  return true;
}

double exact_sum_f64(std::span<const double> terms) {
  double s = 0.0;
  for (double t : terms) s += t;
  if (!std::isfinite(s)) return s;
  ExactAccumulator acc;
  for (double t : terms) acc.add(t);
  return acc.round64();
}

float exact_sum_f32(std::span<const double> terms) {
  double s = 0.0, a = 0.0;
  for (double t : terms) {
    s += t;
    a += std::fabs(t);
  }
  float out;
  if (decide_sum_f32(s, a, terms.size(), &out)) return out;
  ExactAccumulator acc;
  for (double t : terms) acc.add(t);
  return acc.round32();
}

float exact_mean_f32(std::span<const double> terms) {
  double s = 0.0, a = 0.0;
  for (double t : terms) {
    s += t;
    a += std::fabs(t);
  }
  float out;
  if (decide_mean_f32(s, a, terms.size(), &out)) return out;
  ExactAccumulator acc;
  for (double t : terms) acc.add(t);
  return acc.mean32(terms.size());
}

}  // namespace dsv4::kernels
