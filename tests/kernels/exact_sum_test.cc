// Exact sums (src/kernels/exact_sum.h), two independent references:
//  * a big-integer check written here: every rounded result R must satisfy the definition of
//    round-to-nearest-even, (R + R⁻)/2 ≤ exact ≤ (R + R⁺)/2 with ties only at an even R, evaluated
//    in exact integer arithmetic in units of 2^−1076 (so every double and every midpoint is an
//    integer); the mean the same way with exact/n;
//  * the oracle (Python math.fsum / Fraction via strict.ssum / strict.smean on float64 terms).
// Term sets: random exponents over the whole double range, cancellation, exact double ties and
// near-ties (which also separate RNE32(RNE64(x)) from a direct RNE32(x)), subnormals, signed zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_oracle.h"
#include "kernels/exact_sum.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

// ---- a tiny signed big integer (reference only; clarity over speed) ------------------------

struct Big {
  bool neg = false;
  std::vector<std::uint32_t> mag;  // little endian, no leading zero limbs
  bool zero() const { return mag.empty(); }
};

void trim(Big& a) {
  while (!a.mag.empty() && a.mag.back() == 0) a.mag.pop_back();
  if (a.mag.empty()) a.neg = false;
}

int cmp_mag(const Big& a, const Big& b) {
  if (a.mag.size() != b.mag.size()) return a.mag.size() < b.mag.size() ? -1 : 1;
  for (std::size_t i = a.mag.size(); i-- > 0;)
    if (a.mag[i] != b.mag[i]) return a.mag[i] < b.mag[i] ? -1 : 1;
  return 0;
}

Big add(const Big& a, const Big& b) {
  Big r;
  if (a.neg == b.neg) {
    r.neg = a.neg;
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < std::max(a.mag.size(), b.mag.size()) || carry; ++i) {
      const std::uint64_t s = carry + (i < a.mag.size() ? a.mag[i] : 0) + (i < b.mag.size() ? b.mag[i] : 0);
      r.mag.push_back(static_cast<std::uint32_t>(s));
      carry = s >> 32;
    }
  } else {
    const bool a_big = cmp_mag(a, b) >= 0;
    const Big& x = a_big ? a : b;
    const Big& y = a_big ? b : a;
    r.neg = x.neg;
    std::int64_t borrow = 0;
    for (std::size_t i = 0; i < x.mag.size(); ++i) {
      std::int64_t s = static_cast<std::int64_t>(x.mag[i]) - borrow - (i < y.mag.size() ? y.mag[i] : 0);
      borrow = s < 0;
      if (s < 0) s += std::int64_t{1} << 32;
      r.mag.push_back(static_cast<std::uint32_t>(s));
    }
  }
  trim(r);
  return r;
}

int cmp(const Big& a, const Big& b) {
  if (a.zero() && b.zero()) return 0;
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  const int c = cmp_mag(a, b);
  return a.neg ? -c : c;
}

Big mul_small(const Big& a, std::uint32_t m) {
  Big r;
  r.neg = a.neg;
  std::uint64_t carry = 0;
  for (std::uint32_t d : a.mag) {
    const std::uint64_t p = static_cast<std::uint64_t>(d) * m + carry;
    r.mag.push_back(static_cast<std::uint32_t>(p));
    carry = p >> 32;
  }
  if (carry) r.mag.push_back(static_cast<std::uint32_t>(carry));
  trim(r);
  return r;
}

// A finite double as an exact integer in units of 2^−1076: from its fields, m·2^(E−1075) for a
// normal (E the biased exponent), m·2^−1074 for a subnormal.
Big from_double(double d) {
  Big r;
  const std::uint64_t u = std::bit_cast<std::uint64_t>(d);
  const int be = static_cast<int>((u >> 52) & 0x7FF);
  std::uint64_t m = u & ((1ull << 52) - 1);
  if (be != 0) m |= 1ull << 52;
  if (m == 0) return r;
  const int shift = be != 0 ? be + 1 : 2;  // (E − 1075) + 1076, or −1074 + 1076
  r.mag.assign(static_cast<std::size_t>(shift / 32) + 3, 0);
  for (int b = 0; b < 53; ++b)
    if ((m >> b) & 1u) {
      const int pos = shift + b;
      r.mag[static_cast<std::size_t>(pos / 32)] |= 1u << (pos % 32);
    }
  r.neg = (u >> 63) != 0;
  trim(r);
  return r;
}

// True when R is RNE64 of exact/n (exact in units of 2^−1076), the zero convention included.
::testing::AssertionResult is_rne(double r, const Big& exact, std::uint32_t n) {
  if (exact.zero()) {
    if (std::bit_cast<std::uint64_t>(r) == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "exact zero gave " << r;
  }
  if (!std::isfinite(r) || std::fabs(r) == std::numeric_limits<double>::max())
    return ::testing::AssertionFailure() << "result " << r << " outside the checked range";
  const double rm = std::nextafter(r, -INFINITY), rp = std::nextafter(r, INFINITY);
  const Big lo = mul_small(add(from_double(r), from_double(rm)), n);
  const Big hi = mul_small(add(from_double(r), from_double(rp)), n);
  const Big twice = add(exact, exact);
  const int cl = cmp(lo, twice), ch = cmp(twice, hi);
  const bool even = (std::bit_cast<std::uint64_t>(r) & 1u) == 0;
  if (cl > 0 || ch > 0 || ((cl == 0 || ch == 0) && !even))
    return ::testing::AssertionFailure() << "result " << r << " is not the nearest-even double";
  if (r == 0 && std::signbit(r)) return ::testing::AssertionFailure() << "zero result must be +0";
  return ::testing::AssertionSuccess();
}

Big exact_of(const std::vector<double>& t) {
  Big s;
  for (double v : t) s = add(s, from_double(v));
  return s;
}

// ---- term sets ------------------------------------------------------------------------------

double rand_double(Rng& r, int emin, int emax) {
  const double m = 1.0 + r.unif(0, 1);
  const double v = std::ldexp(m, r.uni(emin, emax));
  return r.uni(0, 1) ? -v : v;
}

// Case c of a deterministic family of adversarial term sets, each of exactly n terms.
std::vector<double> make_case(Rng& r, int c, std::size_t n) {
  std::vector<double> t(n, 0.0);
  switch (c % 9) {
    case 0:  // anything: exponents over (almost) the whole double range
      for (auto& v : t) v = rand_double(r, -1074, 1000);
      break;
    case 1: {  // massive cancellation leaving a small residue
      for (std::size_t i = 0; i + 1 < n; i += 2) {
        t[i] = rand_double(r, -50, 60);
        t[i + 1] = -t[i];
      }
      t[n - 1] = rand_double(r, -200, -20);
      t[r.uni(0, static_cast<int>(n) - 2)] += rand_double(r, -120, -60);  // rounded, still exact
      break;
    }
    case 2: {  // exact double tie 1 + 2^-53 (→ even), or just off it
      t[0] = 1.0 + r.uni(0, 3) * 0x1p-52;
      t[1] = 0x1p-53;
      const int k = r.uni(0, 2);
      if (k == 1) t[2] = 0x1p-300;
      if (k == 2) t[2] = -0x1p-300;
      break;
    }
    case 3: {  // exact fp32 tie after RNE64: RNE32(RNE64(x)) ≠ RNE32(x) when x is off the tie;
               // the tails put the double guard / sticky bits in every combination
      static const double kTail[] = {0, 0x1p-53, -0x1p-53, 0x1p-52, -0x1p-52, 0x1p-54, -0x1p-54};
      const double scale = std::ldexp(1.0, r.uni(-100, 100));
      t[0] = (1.0 + r.uni(0, 7) * 0x1p-23) * scale;
      t[1] = 0x1p-24 * scale;
      t[2] = (r.uni(0, 1) ? 1 : -1) * std::ldexp(scale, r.uni(-90, -55));
      t[3] = kTail[r.uni(0, 6)] * scale;
      break;
    }
    case 4:  // subnormals and values near the normal boundary
      for (auto& v : t) v = (r.uni(0, 1) ? -1 : 1) * std::ldexp(static_cast<double>(r.uni(0, 1 << 20)), -1074 + r.uni(0, 40));
      break;
    case 5:  // signed zeros only, or zeros with one tiny term
      for (auto& v : t) v = r.uni(0, 1) ? -0.0 : 0.0;
      if (r.uni(0, 1)) t[r.uni(0, static_cast<int>(n) - 1)] = -0x1p-1074;
      break;
    case 6: {  // products of fp32 values (the kernels' terms), with cancellation
      for (std::size_t i = 0; i < n; ++i) {
        const double a = static_cast<float>(r.gauss() * 100), b = static_cast<float>(r.gauss());
        t[i] = a * b;
      }
      double s = 0;
      for (std::size_t i = 0; i + 1 < n; ++i) s += t[i];
      t[n - 1] = -static_cast<double>(static_cast<float>(s));  // cancels to a tiny residue
      break;
    }
    case 7:  // huge and tiny magnitudes together
      for (std::size_t i = 0; i < n; ++i) t[i] = rand_double(r, i % 2 ? 900 : -1000, i % 2 ? 1000 : -900);
      break;
    default: {  // sums that land next to fp32 midpoints at various scales
      const int e = r.uni(-140, 120);
      t[0] = std::ldexp(1.0 + r.uni(0, 1 << 20) * 0x1p-23, e);
      t[1] = std::ldexp(1.0, e - 24);
      t[2] = std::ldexp((r.uni(0, 1) ? 1.0 : -1.0), e - 24 - r.uni(1, 60));
      break;
    }
  }
  return t;
}

// ---- tests ----------------------------------------------------------------------------------

TEST(ExactSum, AccumulatorIsCorrectlyRoundedSumAndMean) {
  Rng r(1);
  for (int c = 0; c < 900; ++c) {
    const std::size_t n = static_cast<std::size_t>(4 + c % 29);
    const auto t = make_case(r, c, n);
    kernels::ExactAccumulator acc;
    for (double v : t) acc.add(v);
    const Big e = exact_of(t);
    ASSERT_TRUE(is_rne(acc.round64(), e, 1)) << "sum, case " << c;
    ASSERT_TRUE(is_rne(acc.mean64(n), e, static_cast<std::uint32_t>(n))) << "mean, case " << c;
    // The fp32 results are the fp32 rounding of those, with the +0 convention; the fast path
    // (float64 sum + bound) gives the same bits as the accumulator.
    const double r64 = acc.round64();
    const float r32 = r64 == 0 ? 0.0f : static_cast<float>(r64);
    EXPECT_EQ(test::bits(acc.round32()), test::bits(r32)) << c;
    EXPECT_EQ(test::bits(exact_sum_f32(t)), test::bits(acc.round32())) << c;
    EXPECT_EQ(test::bits(exact_mean_f32(t)), test::bits(acc.mean32(n))) << c;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(exact_sum_f64(t)), std::bit_cast<std::uint64_t>(r64)) << c;
  }
}

TEST(ExactSum, DoubleRoundingIsPartOfTheContract) {
  // 1 + 2^-24 + 2^-80: RNE64 drops 2^-80, leaving the fp32 tie 1 + 2^-24, which goes to 1.
  std::vector<double> t = {1.0, 0x1p-24, 0x1p-80};
  EXPECT_EQ(exact_sum_f32(t), 1.0f);
  // 1 + 2^-24 + 2^-52 is a double, above the tie: rounds up.
  t = {1.0, 0x1p-24, 0x1p-52};
  EXPECT_EQ(exact_sum_f32(t), 1.0f + 0x1p-23f);
}

TEST(ExactSum, SignedZerosAndNonFinite) {
  std::vector<double> t = {-0.0, -0.0};
  EXPECT_EQ(test::bits(exact_sum_f32(t)), 0u);  // exact zero → +0
  t = {1e300, -1e300, -0x1p-1074};  // nonzero result that underflows fp32 keeps its sign
  EXPECT_EQ(test::bits(exact_sum_f32(t)), 0x80000000u);
  t = {INFINITY, 1.0};
  EXPECT_EQ(exact_sum_f32(t), INFINITY);
  t = {INFINITY, -INFINITY};
  EXPECT_TRUE(std::isnan(exact_sum_f32(t)));
  EXPECT_TRUE(std::isnan(exact_mean_f32({})));
  kernels::ExactAccumulator acc;
  EXPECT_THROW(acc.add(INFINITY), Error);
  EXPECT_THROW((void)acc.mean64(0), Error);
}

class ExactSumOracle : public test::OracleTest {};

TEST_F(ExactSumOracle, SumAndMeanOfFloat64TermsMatchFsum) {
  Rng r(7);
  constexpr std::size_t kCases = 900, kN = 24;
  std::vector<double> all;
  std::vector<float> sum_cpp, mean_cpp;
  for (std::size_t c = 0; c < kCases; ++c) {
    auto t = make_case(r, static_cast<int>(c), kN);
    // fsum raises on intermediate overflow and numpy's own sum must not overflow either:
    // keep the huge family below 2^1000 (make_case already does).
    all.insert(all.end(), t.begin(), t.end());
    sum_cpp.push_back(exact_sum_f32(t));
    mean_cpp.push_back(exact_mean_f32(t));
  }
  test::npy_write(path("t.npy"), all, {kCases, kN});
  test::npy_write_scalar<std::int64_t>(path("axis.npy"), -1);
  run_op("ssum", {"t.npy", "axis.npy"}, {"sum.npy"});
  run_op("smean", {"t.npy", "axis.npy"}, {"mean.npy"});
  test::expect_bits_equal(sum_cpp, test::npy_read<float>(path("sum.npy")), "ssum(float64)", false);
  test::expect_bits_equal(mean_cpp, test::npy_read<float>(path("mean.npy")), "smean(float64)", false);
}

}  // namespace
}  // namespace dsv4::kernels
