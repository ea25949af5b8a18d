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

// The AVX-512 prefill shape with lane-major operands (bf16_gemm_avx512_lanes.cc), used from
// this many activation rows on (fewer take the decode shape's kernels).
inline constexpr std::size_t kLaneMajorMinRows = 5;
// Rows [i0, i1) of `a` lane-major into `out` (a.m · lane_row_dwords(a.k32) dwords in all): row i
// is 16 planes of nb = k32/32 dwords, dword b of plane l holding elements 32b + 2l and 32b + 2l + 1.
// Rows and panel planes carry one spare cache line, so that equal-offset accesses to several of
// them do not share an L1 set.
inline std::size_t lane_row_dwords(std::size_t k32) { return k32 / 2 + 16; }
inline std::size_t lane_plane_dwords(std::size_t nb, int groups) { return nb * static_cast<std::size_t>(groups) * 16 + 16; }
void lane_major_acts_avx512(const Bf16Acts& a, std::size_t i0, std::size_t i1, std::uint32_t* out);
// A panel of up to 64 weight rows lane-major: `groups` = ⌈rows/16⌉ groups of 16 rows; in plane l
// (at l · lane_plane_dwords), dword (b·groups + g)·16 + r holds pair l of block b of row 16g + r. lane_panel_buffer is
// this thread's buffer for one (nb blocks per row); lane_panel_group_avx512 writes group g from
// n ≤ 16 bf16 rows (k32 values each; rows n…15 of the group become zero).
std::uint32_t* lane_panel_buffer(std::size_t nb);
void lane_panel_group_avx512(const std::uint16_t* const* rows, std::size_t n, std::size_t nb, int groups, int g,
                             std::uint32_t* wl);
// out[i·ldo + col0 + r] = the definition's dot product of activation row i (`lanes`: all of a's
// rows, lane-major) and panel row r, for every i < a.m and r < np ≤ 64.
// `split`: for the FMA form (fma_for_bf16_dot), the same activations as fp32 halves
// (lane_split_f32); null for the VDPBF16PS form.
void lane_panel_gemm_avx512(const Bf16Acts& a, const std::uint32_t* lanes, const float* split,
                            const std::uint32_t* wl, std::size_t np, std::size_t col0, float* out, std::size_t ldo);
// Dwords [q0, q1) of lane-major activations (n dwords in all) split for the FMA form: the odd
// element of pair q as fp32 at out[q], the even one at out[n + q].
void lane_split_f32(const std::uint32_t* lanes, std::size_t n, std::size_t q0, std::size_t q1, float* out);

// Whether the fast kernels take their FMA forms instead of VDPBF16PS (same bits; see
// bf16_gemm_avx512_fp4_fma.cc): on Intel, whose VDPBF16PS does in two cycles what two FMAs do in
// one. DSV4_BF16_DOT=fma|vdpbf16ps overrides the choice by CPU vendor, so that tests cover both
// forms on any AVX-512 BF16 machine. The FMA forms so far: the one-row FP4 tile (decode) and the
// prefill shape's lane tiles (bf16_gemm_avx512_lanes.cc).
//
// The one-row FP4 tile's activation row in its lane order (16 bf16 pairs per block), and the tile
// itself: res[r] = the definition's dot product of that row with the 8 weight rows at
// w + r·w_stride (their E8M0 bytes at scales + r·s_stride, all in the exact range), `next` the
// address prefetched ahead as the bf16 tiles do.
bool fma_for_bf16_dot();
void fp4_fma_acts(const std::uint16_t* a, std::size_t nb, std::uint32_t* dst);
void fp4_fma_tile8(const std::uint32_t* ax, const std::uint8_t* w, std::size_t w_stride, const std::uint8_t* scales,
                   std::size_t s_stride, std::size_t nb, std::uintptr_t next, float* res);

// A per-thread scratch buffer of at least n uint16 (grows, never shrinks: no allocation once the
// largest shape has been seen — the steady-state decode loop allocates nothing here).
std::uint16_t* scratch_u16(std::size_t n);

}  // namespace dsv4::kernels::bf16_detail
