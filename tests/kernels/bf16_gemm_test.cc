// The fast-numerics bf16 kernels (src/kernels/bf16_gemm.h):
//   - weight dequantization equals the exact value of each code × scale (WeightRef::dequant_row,
//     the strict path's decoder) rounded to bf16;
//   - the scalar definition stays within the fp32 error bound of the exact dot product, and
//     equals a from-scratch emulation of VDPBF16PS written here;
//   - every instruction-set path this CPU has gives the scalar path's bits, for every format,
//     m (decode and prefill shapes), N not a multiple of the tiles, rows with out-of-range scales;
//   - an output does not depend on the other rows of the batch or on the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernel_oracle.h"
#include "kernels/bf16_gemm.h"
#include "kernels/bf16_gemm_isa.h"
#include "numeric/bf16.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

// A weight of any format with its storage.
struct TestWeight {
  std::vector<std::uint8_t> codes, scale;
  std::vector<BF16> bf;
  WeightRef ref;
};

// odd_scales: some rows get scales outside the in-register decoder's range (slow exact rows).
TestWeight make_weight(WeightFormat f, std::size_t n, std::size_t k, Rng& r, bool odd_scales = true) {
  TestWeight t;
  switch (f) {
    case WeightFormat::kBF16:
      t.bf.resize(n * k);
      for (auto& v : t.bf) v = bf16_from_f32(r.bf16_gauss(-4));
      t.ref = WeightRef::bf16(t.bf, n, k);
      return t;
    case WeightFormat::kFP8: {
      t.codes.resize(n * k);
      for (auto& c : t.codes) {
        c = static_cast<std::uint8_t>(r.uni(0, 255));
        if ((c & 0x7F) == 0x7F) c ^= 1;  // NaN codes are tested on their own
      }
      t.scale.resize((n + 31) / 32 * ((k + 31) / 32));
      for (auto& s : t.scale) s = static_cast<std::uint8_t>(r.uni(110, 130));
      if (odd_scales && t.scale.size() > 1) t.scale[1] = 3;                    // below the fast range
      if (odd_scales && t.scale.size() > 3) t.scale[t.scale.size() - 1] = 250;  // above it
      t.ref = WeightRef::fp8(t.codes, t.scale, n, k);
      return t;
    }
    case WeightFormat::kFP4: {
      t.codes.resize(n * k / 2);
      for (auto& c : t.codes) c = static_cast<std::uint8_t>(r.uni(0, 255));
      t.scale.resize(n * ((k + 31) / 32));
      for (auto& s : t.scale) s = static_cast<std::uint8_t>(r.uni(110, 130));
      if (odd_scales && n > 2) t.scale[(k + 31) / 32 * 2] = 1;
      if (odd_scales && n > 5) t.scale[(k + 31) / 32 * 5 + (k + 31) / 32 - 1] = 253;
      t.ref = WeightRef::fp4(t.codes, t.scale, n, k);
      return t;
    }
    case WeightFormat::kF32: break;
  }
  ADD_FAILURE() << "unsupported format";
  return t;
}

std::vector<float> make_acts(Rng& r, std::size_t m, std::size_t k) {
  std::vector<float> x(m * k);
  for (std::size_t i = 0; i < m * k; ++i) x[i] = (i % 29 == 3) ? 0.0f : r.bf16_gauss(static_cast<int>(i / k % 5) - 2);
  return x;
}

float f(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

std::vector<Isa> isas() {
  std::vector<Isa> v;
  for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512Bf16})
    if (isa_supported(i)) v.push_back(i);
  return v;
}

std::vector<float> gemm(Isa isa, const Bf16Acts& a, const WeightRef& w) {
  std::vector<float> out(a.m * w.rows, -1.0f);
  bf16_gemm_rows(isa, a, w, 0, w.rows, out.data(), w.rows);
  return out;
}

TEST(Bf16Gemm, WeightDecodeIsTheExactValueInBf16) {
  Rng r(1);
  for (WeightFormat fmt : {WeightFormat::kFP8, WeightFormat::kFP4, WeightFormat::kBF16}) {
    const std::size_t n = 70, k = 96;
    TestWeight t = make_weight(fmt, n, k, r);
    std::vector<std::uint16_t> row(k + 32);
    std::vector<double> exact(k);
    for (std::size_t j = 0; j < n; ++j) {
      fast_weight_row(t.ref, j, row.data(), k + 32);
      t.ref.dequant_row(j, exact);
      for (std::size_t c = 0; c < k; ++c) {
        const float want = static_cast<float>(exact[c]);
        if (std::isfinite(want)) {
          ASSERT_EQ(static_cast<double>(want), exact[c]) << "not exact in fp32";
        }
        std::uint32_t u = std::bit_cast<std::uint32_t>(want);
        if ((u & 0x7F800000u) == 0) u &= 0x80000000u;  // bf16 subnormals count as zero (DAZ)
        if (fmt == WeightFormat::kFP4 && exact[c] == 0) u = 0;  // both E2M1 zeros are +0
        ASSERT_EQ(u & 0xFFFFu, 0u) << "value needs more than bf16";
        ASSERT_EQ(row[c], u >> 16) << weight_format_name(fmt) << " row " << j << " col " << c;
      }
      for (std::size_t c = k; c < k + 32; ++c) ASSERT_EQ(row[c], 0) << "padding";
    }
  }
}

TEST(Bf16Gemm, NanCodeDecodesAs480TimesScale) {
  std::vector<std::uint8_t> codes(32, 0x38), scale(1, 127);  // 0x38 = 1.0
  codes[3] = 0x7F;
  codes[4] = 0xFF;
  const WeightRef w = WeightRef::fp8(codes, scale, 1, 32);
  std::vector<std::uint16_t> row(32);
  fast_weight_row(w, 0, row.data(), 32);
  EXPECT_EQ(f(row[0]), 1.0f);
  EXPECT_EQ(f(row[3]), 480.0f);
  EXPECT_EQ(f(row[4]), -480.0f);
}

// VDPBF16PS written out again: per lane, odd product then even product, each add RNE in fp32.
float emulate(const std::uint16_t* a, const std::uint16_t* w, std::size_t k32) {
  float lanes[16] = {};
  for (std::size_t b = 0; b < k32; b += 32)
    for (int l = 0; l < 16; ++l) {
      lanes[l] += f(a[b + 2 * l + 1]) * f(w[b + 2 * l + 1]);
      lanes[l] += f(a[b + 2 * l]) * f(w[b + 2 * l]);
    }
  float s8[8], s4[4], s2[2];
  for (int l = 0; l < 8; ++l) s8[l] = lanes[l] + lanes[l + 8];
  for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
  for (int l = 0; l < 2; ++l) s2[l] = s4[l] + s4[l + 2];
  return s2[0] + s2[1];
}

TEST(Bf16Gemm, DefinitionMatchesEmulationAndErrorBound) {
  Rng r(2);
  for (std::size_t k32 : {32u, 64u, 512u, 5120u}) {
    std::vector<std::uint16_t> a(k32), w(k32);
    for (int trial = 0; trial < 50; ++trial) {
      for (std::size_t c = 0; c < k32; ++c) {
        a[c] = bf16_from_f32(r.bf16_gauss(r.uni(-8, 8))).bits;
        w[c] = bf16_from_f32(r.bf16_gauss(r.uni(-8, 8))).bits;
      }
      const float got = bf16_detail::lane16_dot_scalar(a.data(), w.data(), k32);
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(emulate(a.data(), w.data(), k32)));
      // Each lane adds k32/16 terms, then 4 tree levels: |error| ≤ (k32/16 + 4)·2^−24·Σ|a·w|.
      double exact = 0, abs_sum = 0;
      for (std::size_t c = 0; c < k32; ++c) {
        const double p = static_cast<double>(f(a[c])) * f(w[c]);
        exact += p;
        abs_sum += std::fabs(p);
      }
      EXPECT_LE(std::fabs(got - exact), (static_cast<double>(k32) / 16 + 4) * 0x1p-24 * abs_sum);
    }
  }
}

// Random activations for weight t (act_quant'd, or as they are for BF16) into `a`; checks that
// every ISA path gives the scalar path's bits and returns those.
std::vector<float> expect_every_isa_gives_the_scalar_bits(WeightFormat fmt, const TestWeight& t, std::size_t m,
                                                          std::size_t k, Rng& r, Bf16Acts& a) {
  const std::vector<float> x = make_acts(r, m, k);
  if (fmt == WeightFormat::kBF16) EXPECT_TRUE(bf16_acts(x, m, k, a));
  else quantized_acts(x, m, k, a);
  const std::vector<float> want = gemm(Isa::kScalar, a, t.ref);
  for (Isa isa : isas()) {
    const std::vector<float> got = gemm(isa, a, t.ref);
    if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) {
      ADD_FAILURE() << isa_name(isa) << " " << weight_format_name(fmt) << " m=" << m << " n=" << t.ref.rows << " k=" << k;
      break;
    }
  }
  return want;
}

TEST(Bf16Gemm, EveryIsaGivesTheScalarBits) {
  Rng r(3);
  std::printf("instruction sets tested: ");
  for (Isa i : isas()) std::printf("%s ", isa_name(i));
  std::printf("\n");
  for (WeightFormat fmt : {WeightFormat::kFP8, WeightFormat::kFP4, WeightFormat::kBF16})
    for (std::size_t k : {32u, 96u, 320u})
      for (std::size_t n : {1u, 5u, 37u, 70u})
        for (std::size_t m : {1u, 2u, 3u, 4u, 5u, 7u, 13u}) {
          TestWeight t = make_weight(fmt, n, k, r);
          Bf16Acts a;
          expect_every_isa_gives_the_scalar_bits(fmt, t, m, k, r, a);
          if (HasFailure()) return;
        }
}

// The AVX-512 prefill kernel works on lane-major copies of both operands, in 64-row weight
// panels (groups of 16) and 96-row activation groups (tiles of 6), with K transposed 16 blocks
// at a time: shapes that leave a remainder in each of those, and rows with out-of-range scales.
TEST(Bf16Gemm, PrefillShapesGiveTheScalarBits) {
  Rng r(11);
  for (WeightFormat fmt : {WeightFormat::kFP8, WeightFormat::kFP4, WeightFormat::kBF16})
    for (std::size_t k : {544u, 1184u})
      for (std::size_t n : {64u, 131u})
        for (std::size_t m : {97u, 150u}) {
          TestWeight t = make_weight(fmt, n, k, r, /*odd_scales=*/true);
          Bf16Acts a;
          const std::vector<float> want = expect_every_isa_gives_the_scalar_bits(fmt, t, m, k, r, a);
          if (HasFailure()) return;
          std::vector<float> pooled(m * n);
          ThreadPool pool(2);
          bf16_gemm(a, t.ref, pooled.data(), &pool);  // the lane-major activations made once, shared
          ASSERT_EQ(0, std::memcmp(pooled.data(), want.data(), want.size() * sizeof(float)))
              << weight_format_name(fmt) << " m=" << m << " n=" << n << " k=" << k << " (bf16_gemm)";
        }
}

TEST(Bf16Gemm, Bf16WeightWithRaggedK) {
  // K not a multiple of 32: bf16 activations and rows are zero padded.
  Rng r(4);
  for (std::size_t k : {1u, 17u, 45u}) {
    TestWeight t = make_weight(WeightFormat::kBF16, 9, k, r);
    const std::vector<float> x = make_acts(r, 6, k);
    Bf16Acts a;
    ASSERT_TRUE(bf16_acts(x, 6, k, a));
    const std::vector<float> want = gemm(Isa::kScalar, a, t.ref);
    for (Isa isa : isas()) {
      const std::vector<float> got = gemm(isa, a, t.ref);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << isa_name(isa) << " k=" << k;
    }
  }
}

TEST(Bf16Gemm, RowOfABatchEqualsTheRowAloneAndThreadsDoNotMatter) {
  Rng r(5);
  for (WeightFormat fmt : {WeightFormat::kFP8, WeightFormat::kFP4, WeightFormat::kBF16}) {
    const std::size_t n = 83, k = 256, m = 19;
    TestWeight t = make_weight(fmt, n, k, r);
    const std::vector<float> x = make_acts(r, m, k);
    Bf16Acts all;
    if (fmt == WeightFormat::kBF16) ASSERT_TRUE(bf16_acts(x, m, k, all));
    else quantized_acts(x, m, k, all);
    std::vector<float> batch(m * n);
    bf16_gemm(all, t.ref, batch.data(), nullptr);
    for (std::size_t threads : {2u, 3u}) {
      ThreadPool pool(threads);
      std::vector<float> par(m * n);
      bf16_gemm(all, t.ref, par.data(), &pool);
      ASSERT_EQ(0, std::memcmp(par.data(), batch.data(), par.size() * sizeof(float))) << threads << " threads";
    }
    for (std::size_t i = 0; i < m; ++i) {
      Bf16Acts one;
      const std::span<const float> xi(x.data() + i * k, k);
      if (fmt == WeightFormat::kBF16) ASSERT_TRUE(bf16_acts(xi, 1, k, one));
      else quantized_acts(xi, 1, k, one);
      std::vector<float> alone(n);
      bf16_gemm(one, t.ref, alone.data(), nullptr);
      ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + i * n, n * sizeof(float)))
          << weight_format_name(fmt) << " row " << i;
    }
  }
}

TEST(Bf16Gemm, NanActivationGivesNanOnEveryIsa) {
  Rng r(6);
  TestWeight t = make_weight(WeightFormat::kFP4, 8, 64, r, false);
  std::vector<float> x = make_acts(r, 2, 64);
  x[70] = INFINITY;  // act_quant: inf amax → NaN scale → the block is NaN
  Bf16Acts a;
  quantized_acts(x, 2, 64, a);
  for (Isa isa : isas()) {
    const std::vector<float> got = gemm(isa, a, t.ref);
    for (std::size_t j = 0; j < 8; ++j) {
      EXPECT_FALSE(std::isnan(got[j])) << isa_name(isa);
      EXPECT_TRUE(std::isnan(got[8 + j])) << isa_name(isa);
    }
  }
}

// The FP8 decode shape moves each 32-row group's block scale onto the activations when every
// scaled activation stays a normal bf16 number; activations near the ends of the exponent range
// (and inf/NaN) must fall back to scaling the weights, with the same bits either way.
TEST(Bf16Gemm, Fp8ScaleMovedOntoActivationsOnlyWhereExact) {
  Rng r(8);
  const std::size_t n = 96, k = 160;
  TestWeight t = make_weight(WeightFormat::kFP8, n, k, r, false);
  // Block scales across the decoder's whole exact range (10…246: d = −117…119). act_quant keeps
  // nonzero activations above about 2^−31 (its amax floor of 1e−4), so the small scales push them
  // below the normal range, and the large ones push large activations past it.
  const std::uint8_t scales[] = {12, 40, 90, 127, 140, 200, 246};
  for (std::size_t i = 0; i < t.scale.size(); ++i) t.scale[i] = scales[(i * 5 + i / 7) % 7];
  for (float mul : {0x1p-30f, 1.0f, 0x1p60f, 0x1p120f}) {
    for (bool nonfinite : {false, true}) {
      for (std::size_t m : {1u, 3u}) {
        std::vector<float> x = make_acts(r, m, k);
        for (float& v : x) v = round_bf16(v * mul);
        if (nonfinite) x[k / 2] = INFINITY;
        Bf16Acts a;
        quantized_acts(x, m, k, a);
        const std::vector<float> want = gemm(Isa::kScalar, a, t.ref);
        for (Isa isa : isas()) {
          const std::vector<float> got = gemm(isa, a, t.ref);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << isa_name(isa) << " scale 2^" << std::log2(mul) << " m=" << m << (nonfinite ? " with inf" : "");
        }
      }
    }
  }
}

// The one-row FP4 tile takes each block's scale from a table of pre-scaled E2M1 tables, one per
// scale byte: every scale of the exact range [2, 252] (and the out-of-range ones, which fall back
// to the definition) against the scalar path, in bands of 16 scales, with activations scaled
// so that the band's products and sums stay normal fp32 numbers.
TEST(Bf16Gemm, Fp4DecodeTileCoversEveryScale) {
  Rng r(12);
  const std::size_t n = 19, k = 224;  // nb = 7: a four-block step and a tail; a short last tile (the FMA tile moves it back)
  const std::size_t nb = k / 32;
  for (int s0 = 0; s0 <= 255; s0 += 16) {
    TestWeight t = make_weight(WeightFormat::kFP4, n, k, r, false);
    for (std::size_t row = 0; row < n; ++row)
      for (std::size_t b = 0; b < nb; ++b) t.scale[row * nb + b] = static_cast<std::uint8_t>(s0 + (row * 3 + b) % 16);
    const int e = std::clamp(120 - s0, -12, 100);
    for (std::size_t m : {1u, 2u}) {
      std::vector<float> x = make_acts(r, m, k);
      for (float& v : x) v = round_bf16(std::ldexp(v, e));
      Bf16Acts a;
      quantized_acts(x, m, k, a);
      const std::vector<float> want = gemm(Isa::kScalar, a, t.ref);
      for (std::size_t row = 0; row < n; ++row) {  // (scale 255 is E8M0's NaN; 253 and 254 overflow)
        bool exact_range = true;
        for (std::size_t b = 0; b < nb; ++b) exact_range &= t.scale[row * nb + b] >= 2 && t.scale[row * nb + b] <= 252;
        for (std::size_t i = 0; i < m && exact_range; ++i)
          ASSERT_TRUE(std::isfinite(want[i * n + row])) << "scales " << s0 << "…" << s0 + 15 << " row " << row;
      }
      for (Isa isa : isas()) {
        const std::vector<float> got = gemm(isa, a, t.ref);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
            << isa_name(isa) << " scales " << s0 << "…" << s0 + 15 << " m=" << m;
      }
    }
  }
}

TEST(Bf16Gemm, BadInputsAreNamed) {
  Rng r(7);
  TestWeight t = make_weight(WeightFormat::kFP8, 4, 64, r);
  std::vector<float> x(64, 1.0f);
  x[5] = 1.0001f;  // not a bf16 value
  Bf16Acts a;
  EXPECT_THROW(quantized_acts(x, 1, 64, a), Error);
  EXPECT_FALSE(bf16_acts(x, 1, 64, a));
  EXPECT_THROW(quantized_acts(std::vector<float>(40, 1.0f), 1, 40, a), Error);
  x[5] = 1.0f;
  quantized_acts(x, 1, 64, a);
  TestWeight other = make_weight(WeightFormat::kFP8, 4, 96, r);
  std::vector<float> out(4);
  EXPECT_THROW(bf16_gemm_rows(Isa::kScalar, a, other.ref, 0, 4, out.data(), 4), Error);
  EXPECT_THROW(bf16_gemm_rows(Isa::kScalar, a, t.ref, 2, 5, out.data(), 4), Error);
}

}  // namespace
}  // namespace dsv4::kernels

namespace dsv4::kernels {
namespace {

// quantize_row_avx512 against quantized_acts' scalar loop (act_quant of numeric/qdq, checked
// against the oracle elsewhere): every bit of every element, on rows built to reach each branch
// of the vector rounding — any bf16 bit pattern (subnormal inputs, huge magnitudes, ties of the
// E4M3 rounding, values that round up into the next binade or to 448), blocks under the amax
// floor, zeros of both signs, tiny negatives that round to −0 — plus rows holding inf or NaN,
// which the vector path hands back to the scalar loop.
TEST(Bf16Gemm, QuantizedActsAvx512GivesTheScalarBits) {
  if (!isa_supported(Isa::kAvx512Bf16)) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
  test::Rng r(91);
  constexpr std::size_t m = 96, k = 256;
  std::vector<float> x(m * k);
  for (std::size_t i = 0; i < m; ++i) {
    const int kind = static_cast<int>(i % 8);
    for (std::size_t c = 0; c < k; ++c) {
      float& v = x[i * k + c];
      switch (kind) {
        case 0: v = r.bf16_gauss(r.uni(-30, 30)); break;
        case 1: {  // any finite bf16 pattern (subnormals and huge values included)
          std::uint32_t u;
          do u = r.u32() & 0xFFFF0000u; while ((u & 0x7F800000u) == 0x7F800000u);
          v = test::from_bits(u);
          break;
        }
        case 2: v = r.bf16_gauss(-20); break;  // the whole block below the amax floor (1e−4)
        case 3: v = (c % 3 == 0) ? 0.0f : (c % 3 == 1 ? -0.0f : r.bf16_gauss(-2)); break;
        case 4: v = (c % 32 == 0) ? 448.0f * 4 : -r.bf16_gauss(-8); break;  // small negatives → −0
        case 5: v = r.bf16_gauss(r.uni(-140, 120)); break;  // wide exponent spread within a block
        case 6: v = test::to_bf16_value(static_cast<float>(r.uni(-64, 64)) * 0.5f + 0.25f); break;  // ties
        default: v = r.bf16_gauss(0); break;
      }
    }
  }
  x[7 * k + 40] = INFINITY;  // rows 7 and 15: inf and NaN (scalar path through the vector caller)
  x[15 * k + 3] = NAN;
  Bf16Acts scalar, vec;
  quantized_acts(x, m, k, scalar, nullptr, Isa::kScalar);
  quantized_acts(x, m, k, vec, nullptr, Isa::kAvx512Bf16);
  ASSERT_EQ(scalar.bits.size(), vec.bits.size());
  std::size_t diffs = 0;
  for (std::size_t e = 0; e < scalar.bits.size(); ++e)
    if (scalar.bits[e] != vec.bits[e] && ++diffs <= 5)
      ADD_FAILURE() << "row " << e / k << " element " << e % k << " (x = " << x[e] << "): scalar 0x" << std::hex
                    << scalar.bits[e] << ", avx512 0x" << vec.bits[e] << std::dec;
  EXPECT_EQ(diffs, 0u);
  // A block with inf or NaN becomes the canonical quiet NaN (never a NaN whose sign depends on
  // the compiled copy that ran it).
  EXPECT_EQ(vec.bits[7 * k + 40], 0x7FC0u);
  EXPECT_EQ(vec.bits[15 * k + 3], 0x7FC0u);
  // The rows split over a pool give the same bits.
  ThreadPool pool(2);
  Bf16Acts split;
  quantized_acts(x, m, k, split, &pool, Isa::kAvx512Bf16);
  EXPECT_EQ(split.bits, vec.bits);
}

}  // namespace
}  // namespace dsv4::kernels
