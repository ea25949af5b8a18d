#pragma once
// The fast-numerics matrix product: bf16 operands, fp32 accumulation in one fixed order — the
// order of the AVX512_BF16 dot-product instruction (VDPBF16PS) — reproduced bit for bit by every
// instruction-set path (AVX-512 BF16, AVX2+FMA, scalar).
//
// Why bf16 operands are exact here: every FP8/FP4 linear of the model multiplies act_quant'd
// activations (E4M3 code × power-of-two scale, §2.3) by E4M3 or E2M1 weights times power-of-two
// scales (§2.5). All of those values have at most 4 significant bits and an exponent well inside
// bf16's range, so they are exact bf16 numbers, and the product of two of them is exact in fp32.
// The only rounding left is the accumulation, and that is what this kernel fixes:
//
//   K is split into blocks of 32 (zero padded). Lane l (0…15) of an output keeps an fp32
//   accumulator; for each block in increasing order it adds a[2l+1]·w[2l+1], then a[2l]·w[2l]
//   (both products exact, each add rounded to nearest even — VDPBF16PS's definition). The 16
//   lanes are then summed by a fixed tree: l + (l+8), then + (l+4), + (l+2), + (l+1).
//
// Every output element is computed by that sequence whatever the number of rows m, the tiling
// or the thread that computes it, so prefill ≡ decode ≡ chunked prefill and batch and thread
// invariance hold bit for bit in fast mode. The instruction sets agree bit for bit too (machines
// of a cluster may differ) as long as no product of two operands is a nonzero value below 2^−126
// — how VDPBF16PS treats such a product is the hardware's business; the scalar and AVX2 paths
// keep it exact (fma). Real weights and activations are nowhere near: an in-range FP8/FP4 weight
// is ≥ 2^−126 by construction and typical ones are ~2^−20, act_quant'd activations ≥ 2^−31.
//
// Weights are read straight from their stored bytes (memory-mapped) and dequantized in
// registers: E2M1 / E4M3 codes via a small table, the E8M0 block scale by adding its exponent to
// the bf16 exponent field. That integer trick is exact when the scaled value stays a normal bf16
// number, which holds for E8M0 exponents 2…252 (FP4) and 10…246 (FP8) — every scale a real
// checkpoint has. A row with any scale outside that range is dequantized the slow exact way
// (value rounded to bf16, subnormals flushed as VDPBF16PS flushes them) and its dot products are
// computed by the scalar definition, on every path alike.
//
// Deviations from exact arithmetic (all paths alike): bf16 subnormal operands count as zero and
// an accumulator that would become subnormal is flushed to zero (VDPBF16PS's DAZ/FTZ); E4M3's NaN
// code 0x7F/0xFF decodes as ±480 (the next value of its binade) instead of NaN. Neither occurs in
// a real checkpoint's weights or the model's activations; strict mode keeps the exact semantics.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/linear.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {

// Instruction-set paths of the fast kernels, best first. All give identical bits.
enum class Isa : std::uint8_t { kScalar, kAvx2, kAvx512Bf16 };
const char* isa_name(Isa isa);
// The best path this CPU can run (DSV4_ISA=scalar|avx2|avx512 in the environment lowers it, for
// tests and comparisons; asking for more than the CPU has is ignored).
Isa best_isa();
bool isa_supported(Isa isa);

// Activations as bf16 bit patterns, [m, k32] with k32 = K rounded up to 32, zero padded, bf16
// subnormals flushed to zero.
struct Bf16Acts {
  std::vector<std::uint16_t> bits;
  std::size_t m = 0, k = 0, k32 = 0;
  // The same rows lane-major, for the AVX-512 prefill kernel (bf16_gemm_isa.h), made once per
  // bf16_gemm call rather than once per thread; valid only while lanes_ready (whatever writes
  // `bits` clears it).
  std::vector<std::uint32_t> lanes;
  // … and split into fp32 halves for the kernel's FMA form (empty when it takes VDPBF16PS).
  std::vector<float> lanes_split;
  bool lanes_ready = false;
  const std::uint16_t* row(std::size_t i) const { return bits.data() + i * k32; }
};

// act_quant (§2.3) of each bf16-valued row, kept as the exact dequantized values q·s in bf16.
// Throws dsv4::Error when an element is not a bf16 value or K % 32 != 0.
// Rows are split over `pool` when one is given; the AVX-512 path quantizes 32 elements at a time
// (rows with inf/NaN take the scalar loop). Every path and split gives the same bits.
void quantized_acts(std::span<const float> x, std::size_t m, std::size_t k, Bf16Acts& out,
                    ThreadPool* pool = nullptr, Isa isa = best_isa());
// The rows as they are (each element must be a bf16 value; returns false, leaving `out`
// unspecified, when one is not). Rows are split over `pool` when there are enough of them.
bool bf16_acts(std::span<const float> x, std::size_t m, std::size_t k, Bf16Acts& out, ThreadPool* pool = nullptr);


// out[i·ldo + j] = the fixed-order dot product of activation row i and the dequantized weight
// row j, as fp32, for i < a.m and j in [j0, j1). Formats: kFP8, kFP4, kBF16.
void bf16_gemm_rows(Isa isa, const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                    float* out, std::size_t ldo);
// All rows, split over the pool's threads in fixed panels. May fill a.lanes (the AVX-512
// prefill kernel's layout of the same activations) for this and later calls on the same rows.
void bf16_gemm(Bf16Acts& a, const WeightRef& w, float* out, ThreadPool* pool,
               Isa isa = best_isa());

// Whether the AVX-512 BF16 kernels accumulate with fp32 FMAs instead of VDPBF16PS on this CPU —
// the same bits (bf16_gemm_isa.h, fma_for_bf16_dot); on Intel, whose VDPBF16PS does in two cycles
// what two FMAs do in one. The arithmetic peak that bounds them is then the fp32 FMA one.
bool fma_form();

// One weight row dequantized to bf16 as the fast kernels see it (k32 codes, zero padded).
void fast_weight_row(const WeightRef& w, std::size_t j, std::uint16_t* dst, std::size_t k32);

}  // namespace dsv4::kernels
