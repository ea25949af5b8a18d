#pragma once
// Internals shared by the instruction-set paths of bf16_gemm (see bf16_gemm.h for the contract).
// Each path lives in its own translation unit compiled for its target (bf16_gemm_avx2.cc,
// bf16_gemm_avx512.cc), so the rest of the library stays portable and dispatch happens at run
// time.
#include <cstddef>
#include <cstdint>

#include "kernels/bf16_gemm.h"

namespace dsv4::kernels::bf16_detail {

inline constexpr std::size_t kBlock = 32;

// bf16 bit patterns of the positive E4M3 codes 0…127 (0x7F → 480, see bf16_gemm.h) and of the
// 16 E2M1 codes (both zeros → +0).
const std::uint16_t* e4m3_bf16_table();
const std::uint16_t* e2m1_bf16_table();

// E8M0 exponents for which "add (e − 127) to the bf16 exponent field" is exact (bf16_gemm.h).
inline constexpr unsigned kFp4ScaleLo = 2, kFp4ScaleHi = 252;
inline constexpr unsigned kFp8ScaleLo = 10, kFp8ScaleHi = 246;

// The E8M0 scale codes of weight row j (k32 / 32 of them) and whether all are in the fast range.
const std::uint8_t* row_scales(const WeightRef& w, std::size_t j);
bool row_in_fast_range(const WeightRef& w, std::size_t j);
// (e − 127) << 7 for each block of row j: the int16 added to bf16 bits to scale by 2^(e−127).
void row_deltas(const WeightRef& w, std::size_t j, std::int16_t* out);

// The fixed-order dot product of one activation row and one bf16 weight row (the definition).
float lane16_dot_scalar(const std::uint16_t* a, const std::uint16_t* w, std::size_t k32);

// Per-ISA kernels: out[i·ldo + j] for i < a.m, j in [j0, j1). Each handles every format, falling
// back to fast_weight_row for rows whose scales are out of the fast range.
void gemm_rows_scalar(const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                      float* out, std::size_t ldo);
void gemm_rows_avx2(const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                    float* out, std::size_t ldo);
void gemm_rows_avx512(const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                      float* out, std::size_t ldo);

// act_quant of one bf16-valued row of k (a multiple of 32) fp32 values to the dequantized bf16
// bits quantized_acts keeps; false (the scalar path must run) for a non-bf16 element or a block
// holding inf/NaN.
bool quantize_row_avx512(const float* x, std::size_t k, std::uint16_t* out);

// A per-thread scratch buffer of at least n uint16 (grows, never shrinks: no allocation once the
// largest shape has been seen — the steady-state decode loop allocates nothing here).
std::uint16_t* scratch_u16(std::size_t n);

}  // namespace dsv4::kernels::bf16_detail
