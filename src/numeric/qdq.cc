// Activation QDQ (§2.3, §2.4); the contract and the non-finite behaviour are in qdq.h.
#include "numeric/qdq.h"

#include <cfloat>
#include <cmath>

#include "numeric/e2m1.h"
#include "numeric/e8m0.h"
#include "util/error.h"

// Each fp32 operation below must round to fp32 immediately (no wider intermediate). That holds on
// every SSE/AVX/NEON target; x87 (FLT_EVAL_METHOD 2) would silently change results.
static_assert(FLT_EVAL_METHOD == 0, "QDQ requires fp32 arithmetic without excess precision");

namespace dsv4 {
namespace {

void check_blocked(const char* fn, std::size_t n, std::size_t block) {
  if (n % block != 0) fail("{}: length {} is not a multiple of the block size {}", fn, n, block);
}

// clamp(v, −m, m) that lets NaN through (both comparisons are false), so a NaN element reaches
// the encoder and stays NaN instead of being pinned to a bound.
constexpr float clamp_keep_nan(float v, float m) { return v < -m ? -m : (v > m ? m : v); }

// §2.3 step 3: q = E4M3(clamp(x / s, ±448)). The division is exact (s is a power of two and the
// quotient cannot underflow to a point where E4M3 would distinguish it from zero), so it equals
// the real quotient; it is still written as the spec's division.
constexpr std::uint8_t fp8_code(BF16 x, float s) {
  const float v = bf16_to_f32(x) / s;
  return e4m3_from_f32(clamp_keep_nan(v, kE4m3Max));
}

// §2.4: x ← bf16(E2M1(clamp(x / s, ±6)) · s). With s a power of two the division is exact; with an
// E4M3 scale it is a genuine fp32 division (rounded), which is what decides ties at the E2M1
// thresholds, so it must not be replaced by a multiply with 1/s. The product is exact in fp32 and
// in bf16 (≤ 2 significant bits times ≤ 4 bits, far from the range limits), so the final bf16()
// only re-encodes. NaN (from a NaN element, or an inf/inf) is propagated explicitly because
// E2M1 has no NaN code.
inline BF16 fp4_qdq_one(BF16 x, float s) {
  const float v = clamp_keep_nan(bf16_to_f32(x) / s, kE2m1Max);
  if (std::isnan(v)) return bf16_from_f32(v);
  const float deq = e2m1_to_f32(e2m1_from_f32(v)) * s;
  return bf16_from_f32(deq);
}

}  // namespace

void act_quant(std::span<const BF16> x, std::span<std::uint8_t> q_e4m3,
               std::span<std::uint8_t> s_e8m0) {
  check_blocked("act_quant", x.size(), kFp8ActBlock);
  if (q_e4m3.size() != x.size())
    fail("act_quant: q_e4m3 has {} elements, expected {} (one per input)", q_e4m3.size(), x.size());
  if (s_e8m0.size() != x.size() / kFp8ActBlock)
    fail("act_quant: s_e8m0 has {} elements, expected {} (one per block of {})", s_e8m0.size(),
         x.size() / kFp8ActBlock, kFp8ActBlock);
  for (std::size_t b = 0; b < s_e8m0.size(); ++b) {
    const std::size_t base = b * kFp8ActBlock;
    const float s = fp8_act_scale(block_amax(x.subspan(base, kFp8ActBlock)));
    for (std::size_t i = base; i < base + kFp8ActBlock; ++i) q_e4m3[i] = fp8_code(x[i], s);
    // s is a positive normal power of two (or +inf for a block holding inf → code 0xFF = NaN).
    s_e8m0[b] = e8m0_from_pow2_unchecked(s);
  }
}

void act_quant_inplace(std::span<BF16> x) {
  check_blocked("act_quant_inplace", x.size(), kFp8ActBlock);
  for (std::size_t base = 0; base < x.size(); base += kFp8ActBlock) {
    const float s = fp8_act_scale(block_amax(x.subspan(base, kFp8ActBlock)));
    for (std::size_t i = base; i < base + kFp8ActBlock; ++i) {
      // float(q)·s is exact (≤ 4 significant bits times a power of two), so is its bf16.
      const float deq = e4m3_to_f32(fp8_code(x[i], s)) * s;
      x[i] = bf16_from_f32(deq);
    }
  }
}

void fp4_qdq_e8m0_b32_inplace(std::span<BF16> x) {
  check_blocked("fp4_qdq_e8m0_b32_inplace", x.size(), kFp4E8m0Block);
  for (std::size_t base = 0; base < x.size(); base += kFp4E8m0Block) {
    const float s = fp4_e8m0_scale(block_amax(x.subspan(base, kFp4E8m0Block)));
    for (std::size_t i = base; i < base + kFp4E8m0Block; ++i) x[i] = fp4_qdq_one(x[i], s);
  }
}

void fp4_qdq_e4m3_b16_inplace(std::span<BF16> x) {
  check_blocked("fp4_qdq_e4m3_b16_inplace", x.size(), kFp4E4m3Block);
  for (std::size_t base = 0; base < x.size(); base += kFp4E4m3Block) {
    const float s = fp4_e4m3_scale(block_amax(x.subspan(base, kFp4E4m3Block)));
    for (std::size_t i = base; i < base + kFp4E4m3Block; ++i) x[i] = fp4_qdq_one(x[i], s);
  }
}

}  // namespace dsv4
