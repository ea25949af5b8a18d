// The C++ number formats and activation QDQ (src/numeric, spec §2.1–2.4) against the independent
// Python oracle (tests/oracle/dsv4_oracle, `python3 -m dsv4_oracle op ...`), bit for bit, on
// ~10^5 inputs each: random bit patterns over the whole finite range, tiny and huge magnitudes,
// exact rounding ties of every format, and blocks built so that the quantizers meet their ties.
// The oracle is run as a subprocess on .npy files (tests/common/npy_test_util.h). The test is
// skipped when /usr/bin/python3 with NumPy is not available.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../common/npy_test_util.h"
#include "../common/oracle_op_test.h"
#include "numeric/bf16.h"
#include "numeric/e2m1.h"
#include "numeric/e4m3.h"
#include "numeric/qdq.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;
using test::read_npy;
using test::write_npy;


float f32_of(std::uint32_t u) { return std::bit_cast<float>(u); }
std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

// ---- the oracle subprocess -------------------------------------------------------------------

using OracleGolden = test::OracleOpTest;  // tests/common/oracle_op_test.h

// Compares two code/bit vectors and reports the first mismatches with their inputs.
template <class T, class In>
void expect_same(const std::vector<T>& got_cpp, const std::vector<T>& got_oracle,
                 const std::vector<In>& input, const char* what) {
  ASSERT_EQ(got_cpp.size(), got_oracle.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got_cpp.size(); ++i) {
    if (got_cpp[i] != got_oracle[i]) {
      if (++bad <= 8) {
        ADD_FAILURE() << what << " [" << i << "]: C++ 0x" << std::hex << +got_cpp[i] << ", oracle 0x"
                      << +got_oracle[i] << ", input 0x"
                      << +(i < input.size() ? input[i] : In{}) << std::dec;
      }
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got_cpp.size() << " differ";
}

// ---- inputs ----------------------------------------------------------------------------------

std::uint16_t bf16_bits_of_double(double v) { return bf16_from_f32(static_cast<float>(v)).bits; }

// bf16 blocks of 32 (so also of 16) in eight regimes; no NaN, no infinity.
std::vector<std::uint16_t> bf16_inputs(std::size_t n_blocks, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::normal_distribution<double> gauss;
  static const double e4m3_mid[] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5,
                                    13.5, 14.5, 15.5, 17, 19, 21, 23, 25, 27, 29, 31, 34, 38, 42, 46,
                                    52, 60, 68, 76, 104, 120, 136, 152, 208, 240, 272, 304, 416, 432};
  static const double e2m1_pts[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 0.5, 1, 1.5, 2, 3, 4, 6};
  std::vector<std::uint16_t> v;
  v.reserve(n_blocks * 32);
  for (std::size_t b = 0; b < n_blocks; ++b) {
    const int regime = static_cast<int>(b % 8);
    const int k = uni(-40, 40);
    for (int i = 0; i < 32; ++i) {
      double x = 0;
      const double sign = uni(0, 1) ? -1.0 : 1.0;
      switch (regime) {
        case 0: {  // any finite bf16 pattern
          std::uint16_t h;
          do h = static_cast<std::uint16_t>(uni(0, 0xFFFF)); while ((h & 0x7F80) == 0x7F80);
          v.push_back(h);
          continue;
        }
        case 1: x = gauss(rng) * std::ldexp(1.0, k); break;
        case 2: x = sign * std::ldexp(1.0 + uni(0, 127) / 128.0, uni(-133, -95)); break;  // below the floors
        case 3: x = sign * std::ldexp(1.0 + uni(0, 127) / 128.0, uni(120, 127)); break;  // near bf16 max
        case 4:  // FP8 grid midpoints relative to a power-of-two scale; element 0 sets amax
          x = i == 0 ? 448.0 * std::ldexp(1.0, k) : sign * e4m3_mid[uni(0, 41)] * std::ldexp(1.0, k);
          break;
        case 5:  // FP4 thresholds relative to a power-of-two scale (amax 6·2^k)
          x = i == 0 ? 6.0 * std::ldexp(1.0, k) : sign * e2m1_pts[uni(0, 13)] * std::ldexp(1.0, k);
          break;
        case 6:  // FP4 thresholds against an E4M3 scale: amax = 6·s with s an E4M3 value
          x = (i % 16 == 0 ? 6.0 : sign * e2m1_pts[uni(0, 13)]) * (e4m3_to_f32(static_cast<std::uint8_t>(uni(8, 0x7E))) * std::ldexp(1.0, uni(-8, 8)));
          break;
        default:  // mostly zeros (both signs) with a few small values
          x = uni(0, 3) == 0 ? gauss(rng) * 1e-3 : (sign < 0 ? -0.0 : 0.0);
      }
      v.push_back(bf16_bits_of_double(x));
    }
  }
  for (auto& h : v)
    if ((h & 0x7F80) == 0x7F80) h = static_cast<std::uint16_t>(h & 0xFF7F);  // keep finite (overflowed doubles)
  return v;
}

// fp32 values: random finite patterns, ties of bf16 / E4M3 / E2M1 and their neighbours.
std::vector<float> f32_inputs(std::size_t n_random, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v;
  auto push3 = [&](float f) {
    v.push_back(f);
    v.push_back(std::nextafter(f, 0.0f));
    v.push_back(std::nextafter(f, INFINITY));
    v.push_back(-f);
  };
  for (std::size_t i = 0; i < n_random; ++i) {
    std::uint32_t u;
    do u = static_cast<std::uint32_t>(rng()); while ((u & 0x7F800000u) == 0x7F800000u);
    if (i % 3 == 1) u = (u & 0x807FFFFFu) | (static_cast<std::uint32_t>(110 + rng() % 30) << 23);  // E4M3 range
    if (i % 3 == 2) u = (u & 0xFFFF0000u) | 0x8000u;                                       // bf16 tie
    v.push_back(f32_of(u));
  }
  for (unsigned c = 0; c < 0x7E; ++c) {  // E4M3 codes and midpoints
    const float lo = e4m3_to_f32(static_cast<std::uint8_t>(c)), hi = e4m3_to_f32(static_cast<std::uint8_t>(c + 1));
    push3(lo);
    push3(0.5f * (lo + hi));
  }
  for (float f : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 448.0f, 464.0f, 1e-30f, 0x1p-10f,
                  0x1p-126f, 0x1p-149f, 3.3961e38f})
    push3(f);
  v.push_back(0.0f);
  v.push_back(-0.0f);
  v.push_back(INFINITY);
  v.push_back(-INFINITY);
  return v;
}

std::vector<BF16> as_bf16(const std::vector<std::uint16_t>& h) {
  std::vector<BF16> out(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) out[i] = BF16{h[i]};
  return out;
}

std::vector<std::uint16_t> bits_of_bf16(const std::vector<BF16>& x) {
  std::vector<std::uint16_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = x[i].bits;
  return out;
}

// Oracle bf16 results come back as fp32 values; they must be bf16-representable.
std::vector<std::uint16_t> bf16_bits_of_f32(const std::vector<float>& x) {
  std::vector<std::uint16_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint32_t u = bits_of(x[i]);
    EXPECT_EQ(u & 0xFFFFu, 0u) << "oracle value " << x[i] << " at " << i << " is not bf16";
    out[i] = static_cast<std::uint16_t>(u >> 16);
  }
  return out;
}

constexpr std::size_t kBlocks = 3200;  // 102,400 bf16 values

// ---- the tests -------------------------------------------------------------------------------

TEST_F(OracleGolden, ActQuantCodesAndScales) {
  const auto h = bf16_inputs(kBlocks, 1);
  write_npy(path("x.npy"), h, {kBlocks, 32});
  run_op("act_quant", {"x.npy"}, {"q.npy", "s.npy"});
  const auto x = as_bf16(h);
  std::vector<std::uint8_t> q(h.size()), s(h.size() / 32);
  act_quant(x, q, s);
  std::vector<std::size_t> shape;
  expect_same(q, read_npy<std::uint8_t>(path("q.npy"), &shape), h, "act_quant codes");
  EXPECT_EQ(shape, (std::vector<std::size_t>{kBlocks, 32}));
  expect_same(s, read_npy<std::uint8_t>(path("s.npy")), std::vector<std::uint16_t>{}, "act_quant scales");
}

TEST_F(OracleGolden, ActQuantInplace) {
  const auto h = bf16_inputs(kBlocks, 2);
  write_npy(path("x.npy"), h, {kBlocks / 4, 128});
  run_op("act_quant_qdq", {"x.npy"}, {"y.npy"});
  auto x = as_bf16(h);
  act_quant_inplace(x);
  expect_same(bits_of_bf16(x), bf16_bits_of_f32(read_npy<float>(path("y.npy"))), h, "act_quant_inplace");
}

TEST_F(OracleGolden, Fp4QdqE8m0Block32) {
  const auto h = bf16_inputs(kBlocks, 3);
  write_npy(path("x.npy"), h, {kBlocks, 32});
  run_op("fp4_qdq_e8m0_b32", {"x.npy"}, {"y.npy"});
  auto x = as_bf16(h);
  fp4_qdq_e8m0_b32_inplace(x);
  expect_same(bits_of_bf16(x), bf16_bits_of_f32(read_npy<float>(path("y.npy"))), h, "fp4_qdq_e8m0_b32");
}

TEST_F(OracleGolden, Fp4QdqE4m3Block16) {
  const auto h = bf16_inputs(kBlocks, 4);
  write_npy(path("x.npy"), h, {kBlocks * 2, 16});
  run_op("fp4_qdq_e4m3_b16", {"x.npy"}, {"y.npy"});
  auto x = as_bf16(h);
  fp4_qdq_e4m3_b16_inplace(x);
  expect_same(bits_of_bf16(x), bf16_bits_of_f32(read_npy<float>(path("y.npy"))), h, "fp4_qdq_e4m3_b16");
}

TEST_F(OracleGolden, E4m3FromF32) {
  const auto f = f32_inputs(100000, 5);
  write_npy(path("x.npy"), f, {f.size()});
  run_op("e4m3_encode", {"x.npy"}, {"c.npy"});
  std::vector<std::uint8_t> c(f.size());
  std::vector<std::uint32_t> in(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    c[i] = e4m3_from_f32(f[i]);
    in[i] = bits_of(f[i]);
  }
  expect_same(c, read_npy<std::uint8_t>(path("c.npy")), in, "e4m3_from_f32");
}

TEST_F(OracleGolden, E2m1FromF32) {
  auto f = f32_inputs(60000, 6);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-7.0f, 7.0f);
  for (int i = 0; i < 40000; ++i) f.push_back(u(rng));  // the encoder's domain, densely
  write_npy(path("x.npy"), f, {f.size()});
  run_op("e2m1_encode", {"x.npy"}, {"c.npy"});
  std::vector<std::uint8_t> c(f.size());
  std::vector<std::uint32_t> in(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    c[i] = e2m1_from_f32(f[i]);
    in[i] = bits_of(f[i]);
  }
  expect_same(c, read_npy<std::uint8_t>(path("c.npy")), in, "e2m1_from_f32");
}

TEST_F(OracleGolden, Bf16FromF32) {
  const auto f = f32_inputs(100000, 8);
  write_npy(path("x.npy"), f, {f.size()});
  run_op("bf16_bits", {"x.npy"}, {"b.npy"});
  std::vector<std::uint16_t> b(f.size());
  std::vector<std::uint32_t> in(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    b[i] = bf16_from_f32(f[i]).bits;
    in[i] = bits_of(f[i]);
  }
  expect_same(b, read_npy<std::uint16_t>(path("b.npy")), in, "bf16_from_f32");
  // and the value form used everywhere else in the oracle
  run_op("round_bf16", {"x.npy"}, {"r.npy"});
  expect_same(b, bf16_bits_of_f32(read_npy<float>(path("r.npy"))), in, "round_bf16");
}

}  // namespace
}  // namespace dsv4
