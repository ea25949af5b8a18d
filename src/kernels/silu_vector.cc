// strict_silu over arrays (transcendental.h): the same bits as the scalar function, computed in
// vectorised passes. strict_silu is x · (1 / (1 + exp(−x))) in double with glibc's exp, rounded
// once to fp32; glibc's exp has no vector form, so this evaluates exp with its own polynomial
// (a few double ulps from glibc's), carries an error bound 2^−40·|v| far above the two paths'
// difference (~2^−47·|v|), and keeps its fp32 rounding only where the whole interval rounds to
// one float — then glibc's double, which lies inside it, rounds to that float too. The few
// elements near a rounding boundary, non-finite inputs and |x| > 64 take strict_silu itself.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/transcendental.h"

namespace dsv4::kernels {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DSV4_SILU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DSV4_SILU_CLONES
#endif

constexpr std::size_t kChunk = 256;
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // k · kLn2Hi exact for |k| < 2^11 (fdlibm)
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kRound = 0x1.8p52;  // adding it rounds a |y| < 2^51 to an integer in the low bits

// out[i] = fp32 of the approximate silu, open[i] ≠ 0 where the exact path must decide. Written
// without branches so the compiler vectorises it (this file is built with -ffp-contract=off).
DSV4_SILU_CLONES void silu_approx(const float* x, float* out, std::uint32_t* open, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double xd = static_cast<double>(x[i]);
    // exp(−x) for |x| ≤ 64: −x = k·ln2 + r, |r| ≤ ln2/2, e^r by its Taylor series to degree 13
    // (remainder < 2^−57), times 2^k. Other inputs give garbage here and are flagged open below.
    const double y = -xd;
    const double t = y * kLog2e + kRound;
    const double k = t - kRound;
    const double r = (y - k * kLn2Hi) - k * kLn2Lo;
    double p = 1.0 / 6227020800.0;  // 1/13!
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    const std::uint64_t kbits = std::bit_cast<std::uint64_t>(t) - std::bit_cast<std::uint64_t>(kRound);  // k
    const double e = p * std::bit_cast<double>((kbits + 1023) << 52);
    const double v = xd * (1.0 / (1.0 + e));
    const double d = std::fabs(v) * 0x1p-40;
    const float lo = static_cast<float>(v - d), hi = static_cast<float>(v + d);
    const std::uint32_t out_of_range = (std::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu) > 0x42800000u;  // |x| > 64, NaN
    open[i] = (std::bit_cast<std::uint32_t>(lo) ^ std::bit_cast<std::uint32_t>(hi)) | out_of_range;
    out[i] = static_cast<float>(v);
  }
}

}  // namespace

void strict_silu_n(const float* x, float* out, std::size_t n) {
  std::uint32_t open[kChunk];
  for (std::size_t i0 = 0; i0 < n; i0 += kChunk) {
    const std::size_t m = std::min(kChunk, n - i0);
    silu_approx(x + i0, out + i0, open, m);
    for (std::size_t i = 0; i < m; ++i)
      if (open[i] != 0) out[i0 + i] = strict_silu(x[i0 + i]);
  }
}

}  // namespace dsv4::kernels
