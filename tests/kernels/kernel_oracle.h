#pragma once
// Shared helpers of the kernel tests: the .npy reader/writer (tests/common/npy_test_util.h);
// the oracle subprocess fixture (tests/common/oracle_op_test.h); and bitwise comparison
// of results that reports the first mismatches with their index.
#include <gtest/gtest.h>

#include "../common/npy_test_util.h"
#include "../common/oracle_op_test.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace dsv4::kernels::test {

namespace fs = std::filesystem;

using Shape = std::vector<std::size_t>;

// The shared .npy helpers (tests/common/npy_test_util.h) under the names these tests use.
template <class T>
void npy_write(const std::string& path, const std::vector<T>& data, const Shape& shape) {
  dsv4::test::write_npy<T>(path, data, shape);
}
template <class T>
void npy_write_scalar(const std::string& path, T v) {
  dsv4::test::write_npy_scalar<T>(path, v);
}
template <class T>
std::vector<T> npy_read(const std::string& path, Shape* shape = nullptr) {
  return dsv4::test::read_npy<T>(path, shape);
}

// The oracle subprocess fixture (tests/common/oracle_op_test.h) under the name these tests use.
using OracleTest = dsv4::test::OracleOpTest;

inline std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
inline float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

// Bitwise equality of fp32 results; with nan_as_class, any NaN equals any NaN (NaN payloads and
// signs are not part of the contract: numpy and C produce different default NaNs).
inline void expect_bits_equal(const std::vector<float>& got, const std::vector<float>& want,
                              const std::string& what, bool nan_as_class = true,
                              const std::vector<float>* input = nullptr) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (bits(got[i]) == bits(want[i])) continue;
    if (nan_as_class && std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (++bad <= 10) {
      std::ostringstream m;
      m << what << " [" << i << "]: C++ " << got[i] << " (0x" << std::hex << bits(got[i]) << "), oracle "
        << std::dec << want[i] << " (0x" << std::hex << bits(want[i]) << ")";
      if (input && i < input->size()) m << ", input " << std::dec << (*input)[i] << " (0x" << std::hex << bits((*input)[i]) << ")";
      ADD_FAILURE() << m.str();
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " differ";
}

// Random generators shared by the tests.
struct Rng {
  std::mt19937_64 g;
  explicit Rng(std::uint64_t seed) : g(seed) {}
  int uni(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); }
  double unif(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); }
  double gauss() { return std::normal_distribution<double>()(g); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(g()); }
  // Any finite fp32 bit pattern.
  float finite_f32() {
    std::uint32_t u;
    do u = u32(); while ((u & 0x7F800000u) == 0x7F800000u);
    return from_bits(u);
  }
  // bf16 value of a gaussian times 2^e.
  float bf16_gauss(int e) {
    const float f = static_cast<float>(gauss() * std::ldexp(1.0, e));
    const std::uint32_t u = bits(f);
    const std::uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    return from_bits(r);
  }
};

inline float to_bf16_value(float f) {
  const std::uint32_t u = bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return from_bits((u | 0x00400000u) & 0xFFFF0000u);
  return from_bits((u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u);
}

}  // namespace dsv4::kernels::test
