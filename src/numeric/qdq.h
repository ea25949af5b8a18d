#pragma once
// Run-time activation quantization (§2.3, §2.4) — every quantization point of §2.12.
//
// All functions take a flat span whose length is a multiple of the block; blocks are consecutive
// runs of that many elements. Because every quantized row length in the model (§1.2, §2.12) is a
// multiple of the block, blocking a flat [rows × dim] buffer is the same as blocking each row.
// Length violations throw dsv4::Error (they are programming or shape errors a caller can report).
//
// Bit-exactness (§17): every step is one IEEE fp32 operation evaluated exactly as written — no
// excess precision (static_assert on FLT_EVAL_METHOD in qdq.cc), no contraction (no expression
// here has a multiply feeding an add, so -ffp-contract cannot fuse anything), no reassociation.
// Results are therefore reproducible across compilers and ISAs, and equal the reference's QDQ.
//
// Non-finite inputs are outside the reference's contract; the behaviour here is deterministic:
//   - amax ignores NaN elements (a NaN never wins a comparison), so one NaN does not change how
//     the rest of its block is quantized; the NaN element itself stays NaN (E4M3 NaN code in
//     quantize mode, a quiet bf16 NaN in place).
//   - an ±inf element makes amax = inf. In the power-of-two variants the scale is then +inf (E8M0
//     code 0xFF = NaN) and the whole block dequantizes to NaN (0·inf, inf/inf). In the E4M3-scale
//     FP4 variant the scale saturates to 448 and the block is quantized against it (inf → ±2688).
//
// Overflow at the top of the range (spec ambiguity: §2.3 calls float(q)·s "exact", §2.4 notes the
// possible bf16 overflow only for the E4M3 variant): for |x| close to the bf16 maximum the
// power-of-two variants can round up past 2^128 — bf16 max = 255·2^120 has s = 2^120 and
// q = E4M3(255) = 256, so float(q)·s = 2^128 = inf. The fp32 product is what the reference
// computes as well, so in-place QDQ returns ±inf there, and a GEMM that dequantizes the codes
// meets the same product. Real activations never get near 2^127.
#include <cstddef>
#include <cstdint>
#include <span>

#include "numeric/bf16.h"
#include "numeric/e4m3.h"
#include "numeric/pow2_scale.h"

namespace dsv4 {

inline constexpr std::size_t kFp8ActBlock = 32;   // act_quant, 1×32 (§1.2, §2.3)
inline constexpr std::size_t kFp4E8m0Block = 32;  // indexer q / index keys (§2.4)
inline constexpr std::size_t kFp4E4m3Block = 16;  // compressed KV latent (§2.4)

// amax floors (§2.3, §2.4). Each floor keeps t = amax·c (or amax/6) a normal fp32, so the scale
// is a positive normal number and every division by it is well defined.
// The FP8 floor is read as fp32(1e−4) (a Python double constant compared in fp32 in the kernel).
inline constexpr float kFp8AmaxFloor = 1e-4f;            // fp32(1e−4)
inline constexpr float kFp4E8m0AmaxFloor = 0x1.8p-124f;  // 6·2^−126 (exact in fp32)
inline constexpr float kFp4E4m3AmaxFloor = 0x1.8p-7f;    // 6·2^−9 (exact in fp32)

// max |x| over a block of bf16 values, NaN elements ignored; 0 for an empty block.
constexpr float block_amax(std::span<const BF16> block) {
  float amax = 0.0f;
  for (BF16 h : block) {
    const float a = bf16_to_f32(BF16{static_cast<std::uint16_t>(h.bits & 0x7FFFu)});
    if (a > amax) amax = a;
  }
  return amax;
}

// The scale of one FP8 act_quant block from its amax (§2.3 steps 1–2): a power of two.
constexpr float fp8_act_scale(float amax) {
  const float floored = amax > kFp8AmaxFloor ? amax : kFp8AmaxFloor;
  return pow2_ceil_scale(floored * kFp8RecipMax);
}

// The scale of one E8M0 FP4 block (§2.4, first variant): a power of two.
constexpr float fp4_e8m0_scale(float amax) {
  const float floored = amax > kFp4E8m0AmaxFloor ? amax : kFp4E8m0AmaxFloor;
  return pow2_ceil_scale(floored * kFp4RecipMax);
}

// The scale of one E4M3 FP4 block (§2.4, second variant): float(E4M3(amax / 6)), an fp32
// *division* by 6 (not a multiply by fp32(1/6)), then RNE to E4M3 with saturation. Never a power
// of two in general; always ≥ 2^−9 thanks to the floor.
// (§2.4 flags division vs multiply as a reading of the kernel. For bf16 amax the two give the same
// E4M3 scale — checked exhaustively in qdq_test.cc — so that reading cannot change results; the
// division inside the block, x / s, is where it matters.)
constexpr float fp4_e4m3_scale(float amax) {
  const float floored = amax > kFp4E4m3AmaxFloor ? amax : kFp4E4m3AmaxFloor;
  const float t = floored / 6.0f;
  return e4m3_to_f32(e4m3_from_f32(t));
}

// act_quant, quantize mode (§2.3): q_e4m3[i] = E4M3(clamp(x[i] / s, ±448)) and one E8M0 code per
// block of 32. Requires x.size() % 32 == 0, q_e4m3.size() == x.size(),
// s_e8m0.size() == x.size() / 32.
void act_quant(std::span<const BF16> x, std::span<std::uint8_t> q_e4m3,
               std::span<std::uint8_t> s_e8m0);

// act_quant, in-place mode (FP8 QDQ, 1×32, ue8m0): x ← bf16(float(q) · s). x.size() % 32 == 0.
void act_quant_inplace(std::span<BF16> x);

// fp4_act_quant, E8M0 variant, block 32 (indexer queries, index keys). x.size() % 32 == 0.
void fp4_qdq_e8m0_b32_inplace(std::span<BF16> x);

// fp4_act_quant, E4M3 variant, block 16 (compressed KV latent). x.size() % 16 == 0.
void fp4_qdq_e4m3_b16_inplace(std::span<BF16> x);

}  // namespace dsv4
