// The fast-numerics fp32 linear (src/kernels/f32_gemm.h):
//   - the scalar build equals an emulation of the definition written here from its text (16
//     lanes of std::fma over d ≡ l mod 16, +0 tail operands, the halving tree), and stays within
//     the fp32 error bound of the exact dot product;
//   - every instruction-set build this CPU has gives the scalar bits, F32 and BF16 weights, K and
//     N not multiples of 16, 1–9 activation rows;
//   - a row of a batch equals the row alone, and the thread count changes nothing;
//   - linear() in fast numerics uses it for fp32 inputs (bf16 rounding of BF16 outputs on top).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernel_oracle.h"
#include "kernels/f32_gemm.h"
#include "kernels/linear.h"
#include "numeric/bf16.h"
#include "util/error.h"

namespace dsv4::kernels {
namespace {

using test::Rng;

struct TestWeight {
  std::vector<float> f;
  std::vector<BF16> b;
  WeightRef ref;
};

TestWeight make_weight(bool bf16, std::size_t n, std::size_t k, Rng& r) {
  TestWeight t;
  if (bf16) {
    t.b.resize(n * k);
    for (auto& v : t.b) v = bf16_from_f32(static_cast<float>(r.gauss() * 0.05));
    t.ref = WeightRef::bf16(t.b, n, k);
  } else {
    t.f.resize(n * k);
    for (auto& v : t.f) v = static_cast<float>(r.gauss() * 0.05);
    t.ref = WeightRef::f32(t.f, n, k);
  }
  return t;
}

float weight_at(const TestWeight& t, std::size_t j, std::size_t c) {
  const std::size_t k = t.ref.cols;
  return t.b.empty() ? t.f[j * k + c] : bf16_to_f32(t.b[j * k + c]);
}

std::vector<float> make_x(Rng& r, std::size_t m, std::size_t k) {
  std::vector<float> x(m * k);
  for (std::size_t i = 0; i < m * k; ++i) x[i] = (i % 23 == 5) ? 0.0f : static_cast<float>(r.gauss() * std::ldexp(1.0, static_cast<int>(i % 7) - 3));
  return x;
}

// The definition, read off f32_gemm.h.
float definition(const float* x, const TestWeight& t, std::size_t j) {
  const std::size_t k = t.ref.cols;
  float lane[16] = {};
  for (std::size_t c0 = 0; c0 < k; c0 += 16)
    for (std::size_t l = 0; l < 16; ++l) {
      const std::size_t c = c0 + l;
      lane[l] = c < k ? std::fma(x[c], weight_at(t, j, c), lane[l]) : std::fma(0.0f, 0.0f, lane[l]);
    }
  for (std::size_t w = 8; w >= 1; w /= 2)
    for (std::size_t l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
  return lane[0];
}

std::vector<SimdPath> paths() {
  std::vector<SimdPath> v{SimdPath::kScalar};
  if (best_simd_path() != SimdPath::kScalar) v.push_back(SimdPath::kAvx2);
  if (best_simd_path() == SimdPath::kAvx512) v.push_back(SimdPath::kAvx512);
  return v;
}

std::vector<float> run(const std::vector<float>& x, std::size_t m, const TestWeight& t, SimdPath p,
                       ThreadPool* pool = nullptr) {
  std::vector<float> out(m * t.ref.rows, -1.0f);
  f32_gemm(x, m, t.ref, out, pool, p);
  return out;
}

TEST(F32Gemm, ScalarIsTheDefinitionAndWithinTheErrorBound) {
  Rng r(1);
  for (bool bf16 : {false, true})
    for (std::size_t k : {1u, 15u, 16u, 17u, 100u, 515u})
      for (std::size_t m : {1u, 2u, 3u}) {  // (the decode shape's 2-row tiles, and 16-row tiles)
        const std::size_t n = 21;
        const TestWeight t = make_weight(bf16, n, k, r);
        const std::vector<float> x = make_x(r, m, k);
        const std::vector<float> got = run(x, m, t, SimdPath::kScalar);
        for (std::size_t i = 0; i < m; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            const float want = definition(x.data() + i * k, t, j);
            ASSERT_EQ(std::bit_cast<std::uint32_t>(want), std::bit_cast<std::uint32_t>(got[i * n + j]))
                << "k=" << k << " m=" << m << " i=" << i << " j=" << j << (bf16 ? " bf16" : " f32");
            double exact = 0, abs_sum = 0;
            for (std::size_t c = 0; c < k; ++c) {
              const double p = static_cast<double>(x[i * k + c]) * weight_at(t, j, c);
              exact += p;
              abs_sum += std::fabs(p);
            }
            // ceil(k/16) fma roundings per lane plus 4 tree levels, each ≤ 2^−24 relative.
            EXPECT_LE(std::fabs(got[i * n + j] - exact), (static_cast<double>(k + 15) / 16 + 4) * 0x1p-24 * abs_sum);
          }
      }
}

TEST(F32Gemm, EverySimdPathGivesTheScalarBits) {
  Rng r(2);
  std::printf("paths tested: ");
  for (SimdPath p : paths()) std::printf("%s ", simd_path_name(p));
  std::printf("\n");
  for (bool bf16 : {false, true})
    for (std::size_t k : {1u, 7u, 16u, 33u, 96u, 300u})
      for (std::size_t n : {1u, 5u, 16u, 37u})
        for (std::size_t m : {1u, 2u, 4u, 9u}) {
          const TestWeight t = make_weight(bf16, n, k, r);
          const std::vector<float> x = make_x(r, m, k);
          const std::vector<float> want = run(x, m, t, SimdPath::kScalar);
          for (SimdPath p : paths()) {
            const std::vector<float> got = run(x, m, t, p);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                << simd_path_name(p) << (bf16 ? " bf16" : " f32") << " m=" << m << " n=" << n << " k=" << k;
          }
        }
}

TEST(F32Gemm, RowOfABatchEqualsTheRowAloneAndThreadsDoNotMatter) {
  Rng r(3);
  for (bool bf16 : {false, true}) {
    const std::size_t n = 83, k = 130, m = 11;
    const TestWeight t = make_weight(bf16, n, k, r);
    const std::vector<float> x = make_x(r, m, k);
    const std::vector<float> batch = run(x, m, t, best_simd_path());
    for (std::size_t threads : {2u, 3u}) {
      ThreadPool pool(threads);
      const std::vector<float> par = run(x, m, t, best_simd_path(), &pool);
      ASSERT_EQ(0, std::memcmp(par.data(), batch.data(), par.size() * sizeof(float))) << threads << " threads";
    }
    for (std::size_t i = 0; i < m; ++i) {
      const std::vector<float> xi(x.begin() + static_cast<std::ptrdiff_t>(i * k),
                                  x.begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
      const std::vector<float> alone = run(xi, 1, t, best_simd_path());
      ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + i * n, n * sizeof(float))) << "row " << i;
    }
  }
}

TEST(F32Gemm, FastLinearUsesItForFp32Inputs) {
  Rng r(4);
  const std::size_t n = 40, k = 70, m = 2;
  for (bool bf16 : {false, true})
    for (bool f32_output : {false, true}) {
      const TestWeight t = make_weight(bf16, n, k, r);
      const std::vector<float> x = make_x(r, m, k);  // not bf16-valued: no bf16_gemm
      std::vector<float> got(m * n);
      LinearOptions opt;
      opt.mode = Numerics::kFast;
      opt.f32_output = f32_output;
      linear(x, m, t.ref, got, opt);
      std::vector<float> want = run(x, m, t, best_simd_path());
      if (bf16 && !f32_output)
        for (float& v : want) v = round_bf16(v);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << (bf16 ? "bf16" : "f32") << " f32_output=" << f32_output;
    }
}

TEST(F32Gemm, NonFiniteInputsPropagate) {
  Rng r(5);
  const TestWeight t = make_weight(true, 20, 48, r);
  std::vector<float> x = make_x(r, 2, 48);
  x[48 + 10] = NAN;
  for (SimdPath p : paths()) {
    const std::vector<float> got = run(x, 2, t, p);
    for (std::size_t j = 0; j < 20; ++j) {
      EXPECT_FALSE(std::isnan(got[j])) << simd_path_name(p);
      EXPECT_TRUE(std::isnan(got[20 + j])) << simd_path_name(p);
    }
  }
}

TEST(F32Gemm, BadInputsAreNamed) {
  Rng r(6);
  const TestWeight t = make_weight(false, 4, 8, r);
  std::vector<float> out(4);
  EXPECT_THROW(f32_gemm(std::vector<float>(7, 1.0f), 1, t.ref, out, nullptr), Error);
  EXPECT_THROW(f32_gemm(std::vector<float>(8, 1.0f), 1, t.ref, std::span<float>(out.data(), 3), nullptr), Error);
  std::vector<std::uint8_t> codes(32), scale(1);
  const WeightRef fp8 = WeightRef::fp8(codes, scale, 1, 32);
  std::vector<float> one(1);
  EXPECT_THROW(f32_gemm(std::vector<float>(32, 1.0f), 1, fp8, one, nullptr), Error);
}

}  // namespace
}  // namespace dsv4::kernels
