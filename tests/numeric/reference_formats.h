#pragma once
// Independent reference models of the number formats (§2.1–2.2), for the numeric tests only.
//
// Written deliberately unlike the code under test: values come from std::ldexp / std::frexp on the
// format's fields, rounding is a nearest-value search in double over the code table (or over the
// two neighbouring representable values), and ties are resolved by looking at the code's parity.
// Nothing here calls src/numeric. Every fp32 value is exact in double, so distances between them
// are computed exactly.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ref {

// Value of an E4M3FN code from its fields; NaN for 0x7F / 0xFF.
inline double e4m3_value(unsigned code) {
  const unsigned e = (code >> 3) & 15u, m = code & 7u;
  const double sign = (code & 0x80u) ? -1.0 : 1.0;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(static_cast<double>(m), -9)
                            : std::ldexp(static_cast<double>(8 + m), static_cast<int>(e) - 10);
  return sign * mag;
}

// Rule for an exact midpoint between two candidate codes.
enum class Tie { Even, AwayFromZero };

// Nearest E4M3FN code to x by exhaustive search over the 127 finite magnitudes; |x| ≥ 448
// saturates; NaN → 0x7F with the sign bit of x. Sign is kept for results of magnitude zero.
inline unsigned e4m3_nearest(double x, Tie tie = Tie::Even) {
  const unsigned sign = std::signbit(x) ? 0x80u : 0u;
  if (std::isnan(x)) return sign | 0x7Fu;
  const double a = std::fabs(x);
  if (a >= 448.0) return sign | 0x7Eu;
  unsigned best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (unsigned c = 0; c <= 0x7Eu; ++c) {
    const double d = std::fabs(e4m3_value(c) - a);
    if (d < best_d) {
      best = c;
      best_d = d;
    } else if (d == best_d) {  // codes ascend with magnitude, so c is the larger neighbour
      if (tie == Tie::AwayFromZero || (c % 2 == 0)) best = c;
    }
  }
  return sign | best;
}

inline const double kE2m1Mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

inline unsigned e2m1_nearest(double x, Tie tie = Tie::Even) {
  const unsigned sign = std::signbit(x) ? 8u : 0u;
  const double a = std::fabs(x);
  unsigned best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (unsigned c = 0; c < 8; ++c) {
    const double d = std::fabs(kE2m1Mag[c] - a);
    if (d < best_d) {
      best = c;
      best_d = d;
    } else if (d == best_d) {
      if (tie == Tie::AwayFromZero || (c % 2 == 0)) best = c;
    }
  }
  return sign | best;
}

// Value of a bf16 pattern from its fields.
inline double bf16_value(std::uint16_t bits) {
  const unsigned e = (bits >> 7) & 0xFFu, m = bits & 0x7Fu;
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  if (e == 0xFF)
    return m ? std::numeric_limits<double>::quiet_NaN()
             : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -133);
  return sign * std::ldexp(static_cast<double>(128 + m), static_cast<int>(e) - 134);
}

// Nearest bf16 value (as a double, ±inf on overflow) to a finite real x given in double.
// The grid is spaced ulp = 2^(k−8) in the binade [2^(k−1), 2^k) of frexp, 2^−133 below 2^−126;
// x/ulp is split into integer and fraction and the fraction compared with 1/2.
inline double bf16_nearest(double x, Tie tie = Tie::Even) {
  if (x == 0 || std::isinf(x)) return x;
  const double a = std::fabs(x);
  int k = 0;
  std::frexp(a, &k);
  const int ulp_exp = a < std::ldexp(1.0, -126) ? -133 : k - 8;
  const double n = std::ldexp(a, -ulp_exp);  // exact: scaling by a power of two
  double lo = std::floor(n);
  const double frac = n - lo;
  if (frac > 0.5 || (frac == 0.5 && (tie == Tie::AwayFromZero || std::fmod(lo, 2.0) != 0))) lo += 1;
  double r = std::ldexp(lo, ulp_exp);
  if (r >= std::ldexp(1.0, 128)) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, x);
}

// Bits of the bf16 holding the value v (v must be a bf16 value, ±inf allowed): v is an exact
// fp32, so its fp32 pattern truncated to 16 bits is that bf16.
inline std::uint16_t bf16_bits_of(double v) {
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(v)) >> 16);
}

// 2^ceil(log2 t) for t > 0 via frexp: t = m·2^k with m in [1/2, 1); exactly a power of two iff
// m = 1/2.
inline double pow2_ceil(double t) {
  int k = 0;
  const double m = std::frexp(t, &k);
  return m == 0.5 ? t : std::ldexp(1.0, k);
}

// fp32 product a·b rounded once: the double product of two floats is exact (48 bits).
inline float mul_f32(float a, float b) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b));
}

// Correctly rounded fp32 quotient a/b for positive normal a, b with a normal quotient: pick, among
// the fp32 values around the double quotient, the one minimizing |c·b − a| (c·b is exact in double
// — 24 + 24 bits — and c·b − a is exact by Sterbenz since c·b ≈ a). Ties go to the even mantissa.
inline float div_f32(float a, float b) {
  const float q0 = static_cast<float>(static_cast<double>(a) / static_cast<double>(b));
  float best = q0;
  double best_d = std::numeric_limits<double>::infinity();
  for (float c : {std::nextafter(q0, 0.0f), q0, std::nextafter(q0, 1e30f)}) {
    const double d = std::fabs(static_cast<double>(c) * b - a);
    const bool even = (std::bit_cast<std::uint32_t>(c) & 1u) == 0;
    if (d < best_d || (d == best_d && even)) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

}  // namespace ref
