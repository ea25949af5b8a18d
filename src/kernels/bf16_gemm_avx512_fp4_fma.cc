// The one-row FP4 tile (decode) on fp32 FMAs instead of VDPBF16PS, for CPUs whose VDPBF16PS is
// slow. On the Intel Xeon (AMX, AVX512_BF16) this was measured on, a VDPBF16PS took ~2 cycles
// (32 products) while two FMAs (the same 32 products) took one, and the two byte permutes of the
// bf16 tile (nibble spread, table lookup) competed with it for the same port: the bf16 tile ran
// at 9.5–11 GB/s on one core with its weights in L2, well below the ~15 GB/s a core's share of
// memory bandwidth asks for; this one at ~14 GB/s (kernels_bench FP4_l2_resident, 1 thread), and
// cold on 2 threads at 0.57–0.70 of the read bandwidth against 0.41–0.54. Its floor there is six
// vector instructions per block on two ports (two shifts, two vpermps, two FMAs). On AMD Zen
// (two VDPBF16PS per cycle) the bf16 tile stays the faster one, so which runs is chosen per CPU
// vendor (fma_for_bf16_dot).
//
// Same bits as the definition (bf16_gemm.h): lane l of a block adds a[2l+1]·w[2l+1], then
// a[2l]·w[2l], each add rounded once — an FMA with an exact product (both operands have ≤ 8
// significant bits) is exactly VDPBF16PS's step. VDPBF16PS also flushes subnormal accumulators
// and operands to zero; the tile's accumulation runs with MXCSR's FTZ and DAZ set, which flush
// the same results (tininess after rounding, checked on the machine: an FMA whose exact result is
// just below 2^−126 but rounds to it is kept, as VDPBF16PS keeps it), and its final tree without
// them, as every path's tree (plain fp32 adds, which keep subnormal sums).
//
// Without shuffles for the nibble spread: a block's 16 code bytes are broadcast to the four
// 128-bit lanes by the load itself, and a per-dword variable shift by 8k (k = the 128-bit lane)
// brings byte 4i + k of the block to the low byte of dword i of lane k. So register position
// p = 4k + i holds the definition's lane σ(p) = 4i + k (a 4 × 4 transpose, its own inverse): the
// activation pairs are put in that order once per call (fp4_fma_acts) and split into their odd
// and even halves as fp32 once per four blocks and eight rows, and the accumulators go back to
// lane order before the definition's tree. vpermps reads index bits 0–3 only, so the low nibble
// (element 2l) needs no mask and the high one (element 2l + 1) one shift; its table is copy s of
// the 16 E2M1 values times 2^(s − 127) as fp32 (the bf16 decoder's values exactly).
//
// Compiled with the AVX-512 options of bf16_gemm_avx512.cc; only called after the run-time check.
#include "kernels/bf16_gemm_isa.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsic headers as
// uninitialized (a known false positive of those headers); nothing here reads undefined lanes.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdlib>
#include <cstring>

#include "util/cpu_features.h"

#define DSV4_UNROLL _Pragma("GCC unroll 16")

namespace dsv4::kernels::bf16_detail {
namespace {

struct Fp4FmaTables {
  alignas(64) float t[256][16];
  Fp4FmaTables() {
    for (unsigned s = 0; s < 256; ++s)
      for (int i = 0; i < 16; ++i) {
        // Scales outside the exact range never reach the tile (their rows take the scalar
        // definition): their copies stay zero. The zero codes (0 and 8) are +0, as in the bf16 table.
        const bool live = s >= kFp4ScaleLo && s <= kFp4ScaleHi && i % 8 != 0;
        const auto bits = static_cast<std::uint32_t>(e2m1_bf16_table()[i] + (static_cast<int>(s) - 127) * 128) << 16;
        float v = 0.0f;
        if (live) std::memcpy(&v, &bits, sizeof v);
        t[s][i] = v;
      }
  }
};

const Fp4FmaTables& fma_tables() {
  static const Fp4FmaTables tables;
  return tables;
}

// Position p ↔ lane 4(p % 4) + p / 4 (an involution, so one index serves both directions).
inline __m512i sigma() { return _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0); }

// The definition's tree: l + (l+8), + (l+4), + (l+2), + (l+1) (as bf16_gemm_avx512.cc's reduce16).
inline float reduce16(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

}  // namespace

bool fma_for_bf16_dot() {
  static const bool on = [] {
    if (const char* e = std::getenv("DSV4_BF16_DOT")) {
      if (std::strcmp(e, "fma") == 0) return true;
      if (std::strcmp(e, "vdpbf16ps") == 0) return false;
    }
    return cpu_features().vendor_intel;
  }();
  return on;
}

void fp4_fma_acts(const std::uint16_t* a, std::size_t nb, std::uint32_t* dst) {
  for (std::size_t b = 0; b < nb; ++b)
    _mm512_storeu_si512(dst + b * 16, _mm512_permutexvar_epi32(sigma(), _mm512_loadu_si512(a + b * kBlock)));
}

void fp4_fma_tile8(const std::uint32_t* ax, const std::uint8_t* w, std::size_t w_stride, const std::uint8_t* scales,
                   std::size_t s_stride, std::size_t nb, std::uintptr_t next, float* res) {
  constexpr int NR = 8;
  const Fp4FmaTables& tab = fma_tables();
  const __m512i shift = _mm512_set_epi32(24, 24, 24, 24, 16, 16, 16, 16, 8, 8, 8, 8, 0, 0, 0, 0);
  // VDPBF16PS's flushing for the accumulation: FTZ and DAZ (0x8040) until the lanes are done.
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040u);
  __m512 acc[NR];
  DSV4_UNROLL
  for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
  // A block of row r into acc[r] (codes at `p`, E8M0 byte `e`): the high nibbles (elements
  // 2l + 1) first, as the definition. The rows are walked by adding their strides to one pointer
  // each for codes and scales: eight row pointers per tile left GCC moving them through vector
  // registers on every block (two more instructions on the vector ports per block, ~15 %).
#define DSV4_FP4_FMA_STEP(r, p, e, odd, even)                                                            \
  do {                                                                                                 \
    const __m512i d = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));    \
    const __m512i lo = _mm512_srlv_epi32(d, shift), hi = _mm512_srli_epi32(lo, 4);                     \
    const __m512 t = _mm512_load_ps(tab.t[e]);                                                         \
    acc[r] = _mm512_fmadd_ps(odd, _mm512_permutexvar_ps(hi, t), acc[r]);                               \
    acc[r] = _mm512_fmadd_ps(even, _mm512_permutexvar_ps(lo, t), acc[r]);                              \
  } while (0)
  const __m512i himask = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  std::size_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    __m512 odd[4], even[4];
    DSV4_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i x = _mm512_loadu_si512(ax + (b + j) * 16);
      odd[j] = _mm512_castsi512_ps(_mm512_and_si512(x, himask));
      even[j] = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    }
    const std::uint8_t* p = w + b * 16;
    const std::uint8_t* q = scales + b;
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) {
      // The next tile, in address order, one line per row and four blocks (the bf16 tiles' order),
      // into L2 only: the tile's own rows and activations fill most of L1, and prefetching into
      // L2 read 0.61–0.68 of the bandwidth against 0.57–0.63 into L1 (alternated, 2 threads).
      _mm_prefetch(reinterpret_cast<const char*>(next + (b / 4 * NR + r) * 64), _MM_HINT_T1);
      DSV4_UNROLL
      for (int j = 0; j < 4; ++j) DSV4_FP4_FMA_STEP(r, p + j * 16, q[j], odd[j], even[j]);
      p += w_stride;
      q += s_stride;
    }
  }
  for (; b < nb; ++b) {  // the last nb % 4 blocks: each load reads its own 16 bytes only
    const __m512i x = _mm512_loadu_si512(ax + b * 16);
    const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(x, himask));
    const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r)
      DSV4_FP4_FMA_STEP(r, w + r * w_stride + b * 16, scales[r * s_stride + b], odd, even);
  }
#undef DSV4_FP4_FMA_STEP
  _mm_setcsr(csr);  // the tree is the plain fp32 adds of every path, without VDPBF16PS's flushing
  DSV4_UNROLL
  for (int r = 0; r < NR; ++r) res[r] = reduce16(_mm512_permutexvar_ps(sigma(), acc[r]));
}

}  // namespace dsv4::kernels::bf16_detail

#else  // not compiled for this target: never dispatched to (isa_supported is false)
namespace dsv4::kernels::bf16_detail {
bool fma_for_bf16_dot() { return false; }
void fp4_fma_acts(const std::uint16_t*, std::size_t, std::uint32_t*) {}
void fp4_fma_tile8(const std::uint32_t*, const std::uint8_t*, std::size_t, const std::uint8_t*, std::size_t,
                   std::size_t, std::uintptr_t, float*) {}
}  // namespace dsv4::kernels::bf16_detail
#endif
