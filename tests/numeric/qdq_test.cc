// Activation QDQ (§2.3, §2.4) against a reference written independently in this file: values from
// ldexp on the fields, exact double arithmetic, exhaustive nearest-code search, and a correctly
// rounded fp32 division built from neighbour checks. Nothing here calls the code under test to
// compute an expectation.
#include "numeric/qdq.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "reference_formats.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using Bits = std::vector<std::uint16_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- reference model -------------------------------------------------------------------------

struct Stats {
  std::size_t ties = 0;      // elements whose code differs under ties-away (exact midpoints)
  std::size_t clamped = 0;   // elements hitting the clamp
  std::size_t inexact = 0;   // dequantized products not exactly representable in bf16 (expect 0)
  std::size_t overflow = 0;  // dequantized products beyond the bf16 range (→ ±inf)
};

double block_amax_ref(const std::uint16_t* x, std::size_t n) {
  double amax = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = ref::bf16_value(x[i]);
    if (!std::isnan(v)) amax = std::max(amax, std::fabs(v));
  }
  return amax;
}

// Finishes one element: value d (double, exact), rounded to bf16 bits; counts inexact products.
std::uint16_t to_bf16_bits(double d, Stats& st) {
  if (std::isnan(d)) return 0x7FC0;
  const double r = ref::bf16_nearest(d);
  if (std::isinf(r))
    ++st.overflow;
  else if (r != d)
    ++st.inexact;
  return ref::bf16_bits_of(r);
}

// §2.3 for one block: returns the dequantized bits, writes the E4M3 codes and the E8M0 code.
Bits ref_fp8(const Bits& x, std::vector<unsigned>* codes, std::vector<unsigned>* scodes,
             Stats& st) {
  Bits out(x.size());
  for (std::size_t b = 0; b < x.size(); b += 32) {
    const double amax = std::max(block_amax_ref(&x[b], 32), static_cast<double>(1e-4f));
    const float t = ref::mul_f32(static_cast<float>(amax), static_cast<float>(1.0 / 448.0));
    const double s = ref::pow2_ceil(t);
    if (scodes) scodes->push_back(static_cast<unsigned>(std::ilogb(s) + 127));
    for (std::size_t i = b; i < b + 32; ++i) {
      double v = ref::bf16_value(x[i]) / s;  // exact: s is a power of two
      if (std::fabs(v) > 448) {
        v = std::copysign(448.0, v);
        ++st.clamped;
      }
      const unsigned c = ref::e4m3_nearest(v);
      if (c != ref::e4m3_nearest(v, ref::Tie::AwayFromZero)) ++st.ties;
      if (codes) codes->push_back(c);
      out[i] = to_bf16_bits(ref::e4m3_value(c) * s, st);
    }
  }
  return out;
}

double e2m1_signed_value(unsigned code) {
  return std::copysign(ref::kE2m1Mag[code & 7u], (code & 8u) ? -1.0 : 1.0);
}

// v → clamp(v, ±6) → nearest E2M1 → value · s (the common tail of both FP4 variants).
std::uint16_t fp4_tail(double v, double s, Stats& st) {
  if (std::isnan(v)) return 0x7FC0;
  if (std::fabs(v) > 6) {
    v = std::copysign(6.0, v);
    ++st.clamped;
  }
  const unsigned c = ref::e2m1_nearest(v);
  if (c != ref::e2m1_nearest(v, ref::Tie::AwayFromZero)) ++st.ties;
  return to_bf16_bits(e2m1_signed_value(c) * s, st);
}

Bits ref_fp4_e8m0(const Bits& x, Stats& st) {
  Bits out(x.size());
  for (std::size_t b = 0; b < x.size(); b += 32) {
    const double amax = std::max(block_amax_ref(&x[b], 32), std::ldexp(6.0, -126));
    const double s =
        ref::pow2_ceil(ref::mul_f32(static_cast<float>(amax), static_cast<float>(1.0 / 6.0)));
    for (std::size_t i = b; i < b + 32; ++i) out[i] = fp4_tail(ref::bf16_value(x[i]) / s, s, st);
  }
  return out;
}

// fl32(x / s) for a bf16 x and an E4M3 scale s. Quotients far below the first E2M1 threshold
// cannot change any decision, so they are kept as the exact double quotient.
double fp32_quotient(double x, double s) {
  const double q = x / s;
  if (std::isnan(q) || std::fabs(q) < 0x1p-100) return q;
  return std::copysign(
      static_cast<double>(ref::div_f32(static_cast<float>(std::fabs(x)), static_cast<float>(s))),
      x);
}

Bits ref_fp4_e4m3(const Bits& x, Stats& st, bool reciprocal_mutant = false) {
  Bits out(x.size());
  for (std::size_t b = 0; b < x.size(); b += 16) {
    const double amax = std::max(block_amax_ref(&x[b], 16), std::ldexp(6.0, -9));
    const float t = ref::div_f32(static_cast<float>(amax), 6.0f);
    const double s = ref::e4m3_value(ref::e4m3_nearest(t));
    for (std::size_t i = b; i < b + 16; ++i) {
      const double xv = ref::bf16_value(x[i]);
      double v = fp32_quotient(xv, s);
      if (reciprocal_mutant)  // x · fl32(1/s): what a "multiply by the inverse" port would do
        v = ref::mul_f32(static_cast<float>(xv), ref::div_f32(1.0f, static_cast<float>(s)));
      out[i] = fp4_tail(v, s, st);
    }
  }
  return out;
}

// ---- inputs -----------------------------------------------------------------------------------

std::uint16_t bf16_bits(double v) { return ref::bf16_bits_of(ref::bf16_nearest(v)); }

// Blocks of many shapes: activation-like gaussians at random scales, arbitrary finite bit
// patterns (huge dynamic range, subnormals, ±0), narrow-exponent blocks, blocks below the amax
// floor, and blocks whose elements sit exactly on the rounding midpoints of their block's grid.
class Inputs {
 public:
  explicit Inputs(unsigned seed) : rng_(seed) {}

  Bits gaussian(std::size_t n) {
    std::normal_distribution<double> g(0, 1);
    const int e = std::uniform_int_distribution<int>(-40, 40)(rng_);
    Bits x(n);
    for (auto& b : x) b = bf16_bits(std::ldexp(g(rng_), e));
    return x;
  }
  Bits any_finite(std::size_t n) {
    Bits x(n);
    for (auto& b : x) {
      do {
        b = static_cast<std::uint16_t>(rng_());
      } while ((b & 0x7F80u) == 0x7F80u);  // finite only
    }
    return x;
  }
  Bits narrow(std::size_t n, int lo_exp, int hi_exp) {
    std::uniform_int_distribution<int> e(lo_exp, hi_exp), m(0, 127), z(0, 15);
    Bits x(n);
    for (auto& b : x) {
      const int k = z(rng_);
      if (k == 0)
        b = 0;
      else if (k == 1)
        b = 0x8000;
      else
        b = bf16_bits((rng_() & 1 ? -1.0 : 1.0) * std::ldexp(128.0 + m(rng_), e(rng_) - 7));
    }
    return x;
  }
  // amax element first (a random bf16 with exponent in [lo, hi]), then elements x = mid·s where mid
  // runs over the midpoints of the target grid and s is the block scale the reference derives.
  Bits on_midpoints(std::size_t block, int lo, int hi, const std::function<double(double)>& scale,
                    const std::vector<double>& mids) {
    const int e = std::uniform_int_distribution<int>(lo, hi)(rng_);
    const double amax = std::ldexp(128.0 + static_cast<double>(rng_() % 128), e - 7);  // ≠ 0
    Bits x = {bf16_bits(rng_() & 1 ? -amax : amax)};
    const double s = scale(amax);
    std::uniform_int_distribution<std::size_t> pick(0, mids.size() - 1);
    for (int tries = 0; x.size() < block && tries < 100000; ++tries) {
      const double v = mids[pick(rng_)] * s;
      if (v > amax || ref::bf16_nearest(v) != v) continue;  // keep amax; only exact bf16 values
      x.push_back(bf16_bits(rng_() & 1 ? -v : v));
    }
    x.resize(block, 0);
    std::shuffle(x.begin(), x.end(), rng_);
    return x;
  }

 private:
  std::mt19937 rng_;
};

std::vector<double> e4m3_midpoints() {
  std::vector<double> m;
  for (unsigned c = 0; c < 0x7Eu; ++c)
    m.push_back((ref::e4m3_value(c) + ref::e4m3_value(c + 1)) / 2);
  return m;
}
const std::vector<double> kE2m1Thresholds = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 0.5, 3.0};

double fp8_scale_ref(double amax) {
  return ref::pow2_ceil(ref::mul_f32(static_cast<float>(std::max(amax, double(1e-4f))),
                                     static_cast<float>(1.0 / 448.0)));
}
double fp4_e8m0_scale_ref(double amax) {
  return ref::pow2_ceil(ref::mul_f32(static_cast<float>(std::max(amax, std::ldexp(6.0, -126))),
                                     static_cast<float>(1.0 / 6.0)));
}
double fp4_e4m3_scale_ref(double amax) {
  const float t = ref::div_f32(static_cast<float>(std::max(amax, std::ldexp(6.0, -9))), 6.0f);
  return ref::e4m3_value(ref::e4m3_nearest(t));
}

std::vector<BF16> as_bf16(const Bits& b) {
  std::vector<BF16> v(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) v[i] = BF16{b[i]};
  return v;
}

bool is_nan_bits(std::uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x7Fu) != 0; }

void expect_same(const std::vector<BF16>& got, const Bits& want, const Bits& input) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (is_nan_bits(want[i])) {
      ASSERT_TRUE(is_nan_bits(got[i].bits)) << i;
      continue;
    }
    ASSERT_EQ(got[i].bits, want[i]) << "element " << i << " input 0x" << std::hex << input[i];
  }
}

// A mixture of every input kind, n blocks of the given size, scale derived per kind.
std::vector<Bits> corpus(std::size_t block, const std::function<double(double)>& scale,
                         const std::vector<double>& mids, int floor_exp) {
  Inputs in(block * 977 + static_cast<unsigned>(mids.size()));
  std::vector<Bits> blocks;
  for (int i = 0; i < 400; ++i) {
    blocks.push_back(in.gaussian(block));
    blocks.push_back(in.any_finite(block));
    blocks.push_back(in.narrow(block, -20 + i % 40, -8 + i % 40));
    blocks.push_back(in.narrow(block, floor_exp - 12, floor_exp));  // at and below the amax floor
    blocks.push_back(in.on_midpoints(block, -30 + i % 60, -30 + i % 60, scale, mids));
  }
  blocks.push_back(Bits(block, 0x0000));
  blocks.push_back(Bits(block, 0x8000));
  blocks.push_back(Bits(block, 0x7F7F));  // bf16 max everywhere
  return blocks;
}

// ---- tests ------------------------------------------------------------------------------------

TEST(ActQuant, InPlaceMatchesReferenceOnAllInputKinds) {
  Stats st;
  for (const Bits& x : corpus(32, fp8_scale_ref, e4m3_midpoints(), -14)) {
    const Bits want = ref_fp8(x, nullptr, nullptr, st);
    std::vector<BF16> got = as_bf16(x);
    act_quant_inplace(got);
    expect_same(got, want, x);
  }
  EXPECT_GT(st.ties, 1000u) << "midpoint blocks must exercise the tie rule";
  EXPECT_EQ(st.clamped, 0u) << "s ≥ amax/448, so the FP8 clamp never binds (§2.1)";
  EXPECT_EQ(st.inexact, 0u) << "float(q)·s is exact in bf16 (§2.3)";
  EXPECT_GT(st.overflow, 0u) << "the all-bf16-max block overflows (see HugeValuesOverflow...)";
}

TEST(ActQuant, QuantizeModeCodesAndScalesMatchReference) {
  Stats st;
  Bits all;
  for (const Bits& x : corpus(32, fp8_scale_ref, e4m3_midpoints(), -14))
    all.insert(all.end(), x.begin(), x.end());
  std::vector<unsigned> codes, scodes;
  const Bits deq = ref_fp8(all, &codes, &scodes, st);
  const std::vector<BF16> x = as_bf16(all);
  std::vector<std::uint8_t> q(x.size()), s(x.size() / 32);
  act_quant(x, q, s);
  for (std::size_t i = 0; i < q.size(); ++i) ASSERT_EQ(q[i], codes[i]) << i;
  for (std::size_t b = 0; b < s.size(); ++b) ASSERT_EQ(s[b], scodes[b]) << b;
  // Dequantizing the codes gives the in-place result.
  std::vector<BF16> inplace = x;
  act_quant_inplace(inplace);
  for (std::size_t i = 0; i < q.size(); ++i) {
    const float d = e4m3_to_f32(q[i]) * std::ldexp(1.0f, static_cast<int>(s[i / 32]) - 127);
    ASSERT_EQ(bf16_from_f32(d).bits, inplace[i].bits) << i;
    ASSERT_EQ(inplace[i].bits, deq[i]) << i;
  }
}

TEST(ActQuant, FloorAndKnownScales) {
  std::vector<BF16> x(32, BF16{0});
  std::vector<std::uint8_t> q(32), s(1);
  act_quant(x, q, s);
  EXPECT_EQ(s[0], 127 - 22) << "pow2_ceil(1e-4 · fp32(1/448)) = 2^-22";
  for (auto c : q) EXPECT_EQ(c, 0u);
  // amax = 448 → t = 448·fp32(1/448) rounds to exactly 1 → s = 1, codes are the values.
  x[0] = bf16_from_f32(448.0f);
  x[1] = bf16_from_f32(-1.0625f);  // midpoint 1 | 1.125 → 1
  act_quant(x, q, s);
  EXPECT_EQ(s[0], 127);
  EXPECT_EQ(q[0], 0x7E);
  EXPECT_EQ(q[1], 0xB8);
}

TEST(ActQuant, LengthContractsThrow) {
  std::vector<BF16> x(64, BF16{0x3F80});
  std::vector<std::uint8_t> q(64), s(2);
  EXPECT_NO_THROW(act_quant(x, q, s));
  EXPECT_THROW(act_quant(std::span(x).first(63), std::span(q).first(63), s), Error);
  EXPECT_THROW(act_quant(x, std::span(q).first(32), s), Error);
  EXPECT_THROW(act_quant(x, q, std::span(s).first(1)), Error);
  EXPECT_THROW(act_quant_inplace(std::span(x).first(33)), Error);
  EXPECT_THROW(fp4_qdq_e8m0_b32_inplace(std::span(x).first(16)), Error);
  EXPECT_THROW(fp4_qdq_e4m3_b16_inplace(std::span(x).first(24)), Error);
  EXPECT_NO_THROW(fp4_qdq_e4m3_b16_inplace(std::span(x).first(48)));
  EXPECT_NO_THROW(act_quant_inplace(std::span<BF16>{}));
}

TEST(Fp4QdqE8m0, MatchesReferenceOnAllInputKinds) {
  Stats st;
  for (const Bits& x : corpus(32, fp4_e8m0_scale_ref, kE2m1Thresholds, -124)) {
    const Bits want = ref_fp4_e8m0(x, st);
    std::vector<BF16> got = as_bf16(x);
    fp4_qdq_e8m0_b32_inplace(got);
    expect_same(got, want, x);
  }
  EXPECT_GT(st.ties, 1000u);
  EXPECT_EQ(st.clamped, 0u) << "s ≥ amax/6 for a power-of-two scale";
  EXPECT_EQ(st.inexact, 0u);
  EXPECT_GT(st.overflow, 0u);
}

TEST(Fp4QdqE4m3, MatchesReferenceOnAllInputKinds) {
  Stats st;
  for (const Bits& x : corpus(16, fp4_e4m3_scale_ref, kE2m1Thresholds, -7)) {
    const Bits want = ref_fp4_e4m3(x, st);
    std::vector<BF16> got = as_bf16(x);
    fp4_qdq_e4m3_b16_inplace(got);
    expect_same(got, want, x);
  }
  EXPECT_GT(st.ties, 1000u);
  EXPECT_GT(st.clamped, 100u) << "E4M3 may round the scale down, so |x/s| can exceed 6";
  EXPECT_EQ(st.inexact, 0u) << "E2M1 · E4M3 is exact in bf16 (§2.4)";
  EXPECT_EQ(st.overflow, 0u) << "|result| ≤ 6 · 448";
}

TEST(Fp4QdqE4m3, DivisionIsNotAReciprocalMultiply) {
  // s = 1.875·2^-3 (from amax = 11.25·2^-3), x = 1.25·s: x/s is exactly the tie 1.25 (→ 1.0), but
  // x·fl32(1/s) lands one ulp above it (→ 1.5). §2.4 says true division; a mutant must be caught.
  const double s = 0x1.ep-3;
  Bits x(16, 0);
  x[0] = bf16_bits(11.25 * 0x1p-3);
  x[1] = bf16_bits(1.25 * s);
  x[2] = bf16_bits(-2.5 * s);
  x[3] = bf16_bits(5.0 * s);
  Stats st;
  const Bits want = ref_fp4_e4m3(x, st);
  const Bits mutant = ref_fp4_e4m3(x, st, /*reciprocal_mutant=*/true);
  ASSERT_NE(want, mutant);
  std::vector<BF16> got = as_bf16(x);
  fp4_qdq_e4m3_b16_inplace(got);
  expect_same(got, want, x);
  EXPECT_EQ(bf16_to_f32(got[1]), static_cast<float>(1.0 * s));
  EXPECT_EQ(bf16_to_f32(got[2]), static_cast<float>(-2.0 * s));
  EXPECT_EQ(bf16_to_f32(got[3]), static_cast<float>(4.0 * s));
}

TEST(Fp4QdqE4m3, ScaleDivisionVersusMultiplyIsUnobservableForBf16Amax) {
  // Not a requirement, a documented observation (see the comment in qdq.h): for every bf16 amax,
  // E4M3(amax / 6) equals E4M3(amax · fp32(1/6)), because fp32(1/6) = (1/6)(1 + 2^-25) moves the
  // quotient by less than half an fp32 ulp and bf16 amax/6 never lies that close to an E4M3
  // midpoint without being on it. The division is still what the code does.
  for (std::uint32_t b = 0; b < 0x7F80u; ++b) {
    const double amax =
        std::max(ref::bf16_value(static_cast<std::uint16_t>(b)), std::ldexp(6.0, -9));
    const float div = ref::div_f32(static_cast<float>(amax), 6.0f);
    const float mul = ref::mul_f32(static_cast<float>(amax), static_cast<float>(1.0 / 6.0));
    ASSERT_EQ(ref::e4m3_nearest(div), ref::e4m3_nearest(mul)) << b;
    ASSERT_EQ(static_cast<double>(fp4_e4m3_scale(static_cast<float>(amax))),
              ref::e4m3_value(ref::e4m3_nearest(div)))
        << b;
  }
}

TEST(Fp4Qdq, FloorsGiveTheDocumentedScales) {
  EXPECT_EQ(kFp8AmaxFloor, static_cast<float>(1e-4));
  EXPECT_EQ(static_cast<double>(kFp4E8m0AmaxFloor), std::ldexp(6.0, -126));
  EXPECT_EQ(static_cast<double>(kFp4E4m3AmaxFloor), std::ldexp(6.0, -9));
  EXPECT_EQ(fp4_e8m0_scale(0.0f), 0x1p-126f);
  EXPECT_EQ(fp4_e4m3_scale(0.0f), 0x1p-9f);
  EXPECT_EQ(fp8_act_scale(0.0f), 0x1p-22f);
  EXPECT_EQ(fp4_e4m3_scale(1e30f), 448.0f) << "the E4M3 scale saturates";
  // A block of bf16 subnormals: the E8M0 FP4 floor keeps s normal and the values survive.
  std::vector<BF16> x(32, BF16{0x0001});  // 2^-133
  x[1] = BF16{0x0060};                    // 0.75·2^-126: v = 0.75, a tie → 1.0 → 2^-126
  fp4_qdq_e8m0_b32_inplace(x);
  EXPECT_EQ(bf16_to_f32(x[1]), 0x1p-126f);
  EXPECT_EQ(x[0].bits, 0x0000) << "2^-133 / 2^-126 = 2^-7 < 0.25 → +0";
}

TEST(Qdq, HugeValuesOverflowToInfinityLikeTheReference) {
  // §2.3 calls float(q)·s exact, but at the top of the bf16 range the E4M3/E2M1 rounding can step
  // past 2^128: bf16 max = 255·2^120 → s = 2^120, q = E4M3(255) = 256 → 256·2^120 = inf. The
  // reference computes the same fp32 product, so the result is +inf there too (documented in
  // qdq.h).
  const BF16 big{0x7F7F};
  std::vector<BF16> x(32, big);
  x[1] = BF16{0xFF7F};
  std::vector<std::uint8_t> q(32), s(1);
  act_quant(x, q, s);
  EXPECT_EQ(s[0], 127 + 120);
  EXPECT_EQ(q[0], 0x78);  // 256
  EXPECT_EQ(q[1], 0xF8);
  act_quant_inplace(x);
  EXPECT_EQ(x[0].bits, 0x7F80);
  EXPECT_EQ(x[1].bits, 0xFF80);
  // E8M0 FP4: t = amax/6 ≈ 2^125.4 → s = 2^126, v = 3.98… → 4 → 2^128 = inf.
  std::vector<BF16> y(32, big);
  fp4_qdq_e8m0_b32_inplace(y);
  EXPECT_EQ(y[0].bits, 0x7F80);
}

TEST(Qdq, NanElementsStayNanAndDoNotDisturbTheirBlock) {
  Inputs in(99);
  const Bits base = in.gaussian(32);
  Bits with_nan = base;
  with_nan[5] = 0x7FC0;
  with_nan[17] = 0xFFC1;
  Bits with_zero = base;
  with_zero[5] = with_zero[17] = 0;  // zero never changes amax
  using Fn = void (*)(std::span<BF16>);
  for (Fn fn : {static_cast<Fn>(act_quant_inplace), static_cast<Fn>(fp4_qdq_e8m0_b32_inplace),
                static_cast<Fn>(fp4_qdq_e4m3_b16_inplace)}) {
    std::vector<BF16> a = as_bf16(with_nan), b = as_bf16(with_zero);
    fn(a);
    fn(b);
    for (std::size_t i = 0; i < 32; ++i) {
      if (i == 5 || i == 17)
        EXPECT_TRUE(is_nan_bits(a[i].bits)) << i;
      else
        EXPECT_EQ(a[i].bits, b[i].bits) << i;
    }
  }
  std::vector<std::uint8_t> q(32), s(1);
  act_quant(as_bf16(with_nan), q, s);
  EXPECT_EQ(q[5], 0x7F);
  EXPECT_EQ(q[17], 0xFF);
}

TEST(Qdq, InfinityBehaviourIsTheDocumentedOne) {
  Bits x(32, 0x3F80);
  x[3] = 0x7F80;  // +inf
  std::vector<BF16> a = as_bf16(x);
  act_quant_inplace(a);
  for (const BF16& h : a) EXPECT_TRUE(is_nan_bits(h.bits));
  std::vector<std::uint8_t> q(32), s(1);
  act_quant(as_bf16(x), q, s);
  EXPECT_EQ(s[0], 0xFF);
  std::vector<BF16> c = as_bf16(x);
  fp4_qdq_e4m3_b16_inplace(c);
  EXPECT_EQ(bf16_to_f32(c[3]), 2688.0f);  // 6 · 448
  EXPECT_EQ(bf16_to_f32(c[0]), 0.0f);     // 1/448 < 0.25
}

}  // namespace
}  // namespace dsv4
