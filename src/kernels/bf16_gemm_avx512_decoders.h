#pragma once
// The AVX-512 weight decoders of bf16_gemm_avx512.cc: 32 stored codes of one block → 32 bf16
// values in a register, scaled by the block's E8M0 exponent (exact in the range
// bf16_gemm_isa.h names). Only for translation units compiled with the AVX-512 BF16 flags
// (CMakeLists.txt), after the run-time check.
#include <immintrin.h>

#include <bit>
#include <cstddef>
#include <cstdint>

#include "kernels/bf16_gemm_isa.h"

namespace dsv4::kernels::bf16_detail {

// Per-block scale deltas are kept as int32 with the int16 delta (e − 127) << 7 in both halves,
// so that one vpbroadcastd from memory (a load, no shuffle) spreads it over 32 words.

// 32 E2M1 codes (16 bytes, element 2t in the low nibble of byte t) → bf16 values × 2^(e−127).
struct Fp4Decoder {
  static constexpr std::size_t kBytesPerBlock = 16;
  static constexpr unsigned kScaleLo = kFp4ScaleLo, kScaleHi = kFp4ScaleHi;
  __m512i table;   // entry i: E2M1 code i & 15 as bf16 (bit 4 of an index is don't-care)
  __m512i spread;  // vpshufb control: word e of the block ← byte e/2 (high byte zero)
  __m512i shifts;  // per word: 0 for even e (low nibble), 4 for odd e (high nibble)
  Fp4Decoder() {
    alignas(64) std::uint16_t t[32];
    for (int i = 0; i < 32; ++i) t[i] = e2m1_bf16_table()[i & 15];
    table = _mm512_load_si512(t);
    alignas(64) std::uint8_t c[64];
    alignas(64) std::uint16_t sh[32];
    for (int e = 0; e < 32; ++e) {
      c[2 * e] = static_cast<std::uint8_t>(e / 2);  // within the 128-bit lane of the broadcast
      c[2 * e + 1] = 0x80;
      sh[e] = (e % 2) ? 4 : 0;
    }
    spread = _mm512_load_si512(c);
    shifts = _mm512_load_si512(sh);
  }
  __m512i operator()(const std::uint8_t* p, const std::int32_t* delta) const {
    // The 16 bytes in each 128-bit lane; word e gets byte e/2, shifted so bits 0–3 are its nibble.
    // vpermw reads bits 0–4 of an index: bit 4 (the other nibble's low bit for even e) selects
    // between two identical halves of the table.
    const __m512i bytes = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512i idx = _mm512_srlv_epi16(_mm512_shuffle_epi8(bytes, spread), shifts);
    // Scale the 16-entry table instead of the 32 values; the zero codes (0, 8) stay +0.
    const __m512i t = _mm512_maskz_add_epi16(0xFEFEFEFEu, table, _mm512_set1_epi32(*delta));
    return _mm512_permutexvar_epi16(idx, t);
  }
};

// 32 E4M3 codes (32 bytes) → bf16 values × 2^(e−127); without a delta, the unscaled values.
struct Fp8Decoder {
  static constexpr std::size_t kBytesPerBlock = 32;
  static constexpr unsigned kScaleLo = kFp8ScaleLo, kScaleHi = kFp8ScaleHi;
  __m512i t0, t1, t2, t3;  // the 128 magnitudes' bf16 patterns, 32 per register
  Fp8Decoder() {
    const std::uint16_t* t = e4m3_bf16_table();
    t0 = _mm512_loadu_si512(t);
    t1 = _mm512_loadu_si512(t + 32);
    t2 = _mm512_loadu_si512(t + 64);
    t3 = _mm512_loadu_si512(t + 96);
  }
  // Sign-extended codes: bits 0–6 are the magnitude (the table index), bit 15 the sign.
  static __m512i codes(const std::uint8_t* p) {
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  // |value| as bf16 from the 128-entry table (vpermt2w reads index bits 0–5, bit 6 picks the half).
  __m512i magnitude(__m512i c) const {
    const __m512i lo = _mm512_permutex2var_epi16(t0, c, t1);
    const __m512i hi = _mm512_permutex2var_epi16(t2, c, t3);
    return _mm512_mask_blend_epi16(_mm512_test_epi16_mask(c, _mm512_set1_epi16(0x40)), lo, hi);
  }
  static __m512i with_sign(__m512i v, __m512i c) {  // v | (c & 0x8000)
    return _mm512_ternarylogic_epi32(v, c, _mm512_set1_epi16(static_cast<short>(0x8000)), 0xF8);
  }
  __m512i operator()(const std::uint8_t* p, const std::int32_t* delta) const {
    const __m512i c = codes(p);
    const __mmask32 nonzero = _mm512_test_epi16_mask(c, _mm512_set1_epi16(0x7F));
    const __m512i v = _mm512_maskz_add_epi16(nonzero, magnitude(c), _mm512_set1_epi32(*delta));
    return with_sign(v, c);
  }
  // The unscaled value (the block scale has been moved onto the activations).
  __m512i operator()(const std::uint8_t* p) const {
    const __m512i c = codes(p);
    return with_sign(magnitude(c), c);
  }
};

// 32 E4M3 codes → their values × 2^8 as bf16, by bit arithmetic instead of Fp8Decoder's two
// 64-entry lookups and blend: a normal code s eeee mmm is 2^(e−7) · 1.mmm, so times 2^8 its bf16
// is s (e + 128) mmm0000 = ((c << 4) & 0x87F0) | 0x4000 for c sign-extended to 16 bits. Codes
// with eeee = 0 (zero and subnormals, mmm · 2^−9, times 2^8 = mmm / 2) come from an 8-entry table
// and get the sign or'ed back. The NaN code 0x7F gives ±480 · 2^8, as Fp8Decoder gives ±480.
// Used where the block scale is moved onto the activations, which then also take the 2^−8.
struct Fp8x256Decoder {
  static constexpr std::size_t kBytesPerBlock = 32;
  __m512i tiny;  // entry i < 8: bf16 of i / 2 (vpermw reads index bits 0–4; bits 3–4 are 0 here)
  Fp8x256Decoder() {
    alignas(64) std::uint16_t t[32] = {};
    for (int i = 0; i < 8; ++i) t[i] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(0.5f * static_cast<float>(i)) >> 16);
    tiny = _mm512_load_si512(t);
  }
  __m512i operator()(const std::uint8_t* p) const {
    const __m512i c = Fp8Decoder::codes(p);
    const __m512i normal = _mm512_ternarylogic_epi32(_mm512_slli_epi16(c, 4), _mm512_set1_epi16(static_cast<short>(0x87F0)),
                                                     _mm512_set1_epi16(0x4000), 0xEA);  // (a & b) | c
    const __mmask32 sub = _mm512_testn_epi16_mask(c, _mm512_set1_epi16(0x78));
    // A real checkpoint has a zero or subnormal code in ~0.3 % of blocks: skipping the lookup for
    // the others made the FP8 tile ~7 % faster with its weights in L2 on Intel (17.0–17.2 →
    // 18.3–18.4 GB/s, one core), where the lookup shares a port with VDPBF16PS.
    if (__builtin_expect(sub == 0, 1)) return Fp8Decoder::with_sign(normal, c);
    return Fp8Decoder::with_sign(_mm512_mask_permutexvar_epi16(normal, sub, c, tiny), c);
  }
};

}  // namespace dsv4::kernels::bf16_detail
