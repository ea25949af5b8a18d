// The AVX-512 BF16 path of bf16_gemm: VDPBF16PS is the definition's accumulation step itself
// (bf16_gemm.h), so one instruction does 16 lanes × 2 products of a 32-element block.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 (CMakeLists.txt); only
// called after a run-time check that the CPU has them.
//
// Two shapes:
//   - few activation rows (decode, m ≤ 4): the weights are dequantized in registers and used at
//     once, four weight rows at a time, so each weight byte is read exactly once from memory;
//   - many rows (prefill, m ≥ kLaneMajorMinRows): panels of 64 weight rows are dequantized once
//     into a per-thread lane-major buffer and multiplied by bf16_gemm_avx512_lanes.cc's
//     broadcast kernel, reading each weight byte from memory once per call.
#include "kernels/bf16_gemm_isa.h"
#include "numeric/qdq.h"
#include "util/cpu_features.h"

#if defined(__AVX512BF16__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsic headers as
// uninitialized (a known false positive of those headers); nothing here reads undefined lanes.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/bf16_gemm_avx512_decoders.h"
#include "kernels/transpose16_avx512.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>

namespace dsv4::kernels::bf16_detail {
namespace {

constexpr std::size_t kPanel = 16;     // weight rows dequantized together (prefill shape), at least
constexpr std::size_t kMaxPanel = 64;  // … and at most (quantized weights, by row length)
constexpr int kMr = 6;              // activation rows per register tile
constexpr int kNr = 4;              // weight rows per register tile
// … and per tile of the decode shape with a single activation row: the accumulation of a row is
// one chain of dependent VDPBF16PS (its definition), so only the tile's rows run in parallel, and
// 4 chains left one core at ~32 GB/s of FP4 weights — bound by the instruction's latency, not by
// the decoding (removing any one decode step changed nothing). 8 chains double that bound.
constexpr int kNrWide = 8;  // (fp4_fma_tile8 is this width)

// The tiles' loops over rows and blocks have constant trip counts and must be unrolled: GCC left
// the 8-row loop of the one-row FP4 tile rolled, with the accumulators in memory, so every
// dependent VDPBF16PS also waited for a store-to-load forward.
#define DSV4_UNROLL _Pragma("GCC unroll 16")

inline __m512 dp(__m512 acc, __m512i a, __m512i w) {
  return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)w);
}

// The definition's tree: l + (l+8), + (l+4), + (l+2), + (l+1).
inline float reduce16(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm512_extractf32x8_ps(v, 1);
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// On Intel the decode tiles prefetch into L2 only: FP8 mat-vecs read 0.62 of the read bandwidth
// on average with L1 prefetches and 0.66 with L2 ones (12 runs of the four shapes each,
// alternated; single runs scatter by ±0.05) — probably because the L1 fill buffers that L1
// prefetches hold are the scarcer resource there. On AMD, where the kernels were tuned with L1
// prefetches, nothing changes.
inline bool prefetch_into_l2() {
  static const bool on = cpu_features().vendor_intel;
  return on;
}
inline void prefetch_line(const char* p, bool l2) {
  if (l2) _mm_prefetch(p, _MM_HINT_T1);
  else _mm_prefetch(p, _MM_HINT_T0);
}

// The same with the NR weight rows dequantized in registers from their stored codes, scaled by
// their per-block deltas (kScaled), or unscaled (FP8 whose block scale was moved onto the
// activations).
// `next` is the address of a later tile (prefetch_distance ahead; an address only, never
// dereferenced — prefetches do not fault): the NR rows of a tile are adjacent in memory, so the
// tiles are one contiguous region, and that tile is prefetched while this one runs, NR lines per
// line-step of the rows — in address order. Prefetching each row's block of the next tile
// instead (NR interleaved streams, which is also what the hardware prefetchers see of the loads)
// read memory at ~0.82 of a plain sweep's rate even with no arithmetic at all; one ascending
// stream reads at ~0.92 (paired measurements, 2 threads). On Intel into L2 (prefetch_into_l2).
template <int MR, int NR, bool kScaled, class Dec>
void fused(const Dec& dec, const std::uint16_t* const* a, const std::uint8_t* const* w,
           const std::int32_t* const* deltas, std::size_t nb, std::uintptr_t next, float (*res)[kNrWide]) {
  const bool l2 = prefetch_into_l2();
  __m512 acc[MR][NR];
  DSV4_UNROLL
  for (int i = 0; i < MR; ++i)
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();
  constexpr std::size_t kBlocksPerLine = 64 / Dec::kBytesPerBlock;
  for (std::size_t b = 0; b < nb; ++b) {
    if (b % kBlocksPerLine == 0)
      DSV4_UNROLL
      for (int r = 0; r < NR; ++r)
        prefetch_line(reinterpret_cast<const char*>(next + ((b / kBlocksPerLine) * NR + r) * 64), l2);
    __m512i wv[NR];
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) {
      const std::uint8_t* p = w[r] + b * Dec::kBytesPerBlock;
      if constexpr (kScaled) wv[r] = dec(p, deltas[r] + b);
      else wv[r] = dec(p);
    }
    DSV4_UNROLL
    for (int i = 0; i < MR; ++i) {
      const __m512i x = _mm512_loadu_si512(a[i] + b * kBlock);
      DSV4_UNROLL
      for (int r = 0; r < NR; ++r) acc[i][r] = dp(acc[i][r], x, wv[r]);
    }
  }
  DSV4_UNROLL
  for (int i = 0; i < MR; ++i)
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) res[i][r] = reduce16(acc[i][r]);
}

// FP4 with AVX512_VBMI: four blocks of a row (64 bytes) are loaded at once together with a copy
// shifted right by 4 bits, whose byte t holds the high nibble of code byte t in its low bits; one
// two-source byte permute (vpermt2b) then places the right nibble of each element in the low
// byte of its word — one shuffle instead of the broadcast and vpshufb of Fp4Decoder, and the
// shift shared by four blocks. The lookup, the scale and the accumulation are Fp4Decoder's, in
// the same block order, so the bits are the same.
struct Fp4SpreadVbmi {
  __m512i idx[4];  // word e of block j ← byte 16j + e/2 of the codes (even e) or of the shifted copy (odd e)
  Fp4SpreadVbmi() {
    DSV4_UNROLL
    for (int j = 0; j < 4; ++j) {
      alignas(64) std::uint8_t c[64];
      DSV4_UNROLL
      for (int e = 0; e < 32; ++e) {
        const auto src = static_cast<std::uint8_t>(16 * j + e / 2 + (e % 2 ? 64 : 0));
        c[2 * e] = src;
        c[2 * e + 1] = src;  // the high byte of a word is ignored by vpermw
      }
      idx[j] = _mm512_load_si512(c);
    }
  }
};

#define DSV4_VBMI __attribute__((target("avx512vbmi")))

// Block b of row r, spread from byte group j of the row's `codes` / `high`.
DSV4_VBMI inline __m512i fp4_vbmi_block(const Fp4Decoder& dec, const Fp4SpreadVbmi& sp, const std::int32_t* delta,
                                        __m512i codes, __m512i high, int j) {
  const __m512i nib = _mm512_permutex2var_epi8(codes, sp.idx[j], high);
  const __m512i t = _mm512_maskz_add_epi16(0xFEFEFEFEu, dec.table, _mm512_set1_epi32(*delta));
  return _mm512_permutexvar_epi16(nib, t);
}

// Four blocks at a time (one 64-byte load per row), block after block (MR × 4 activation blocks
// would not fit in registers). One activation row takes fused_fp4_vbmi_tables instead.
template <int MR, int NR>
DSV4_VBMI void fused_fp4_vbmi(const Fp4Decoder& dec, const Fp4SpreadVbmi& sp, const std::uint16_t* const* a,
                              const std::uint8_t* const* w, const std::int32_t* const* deltas, std::size_t nb,
                              std::uintptr_t next, float (*res)[kNrWide]) {
  __m512 acc[MR][NR];
  DSV4_UNROLL
  for (int i = 0; i < MR; ++i)
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();
  std::size_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    __m512i codes[NR], high[NR];
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(next + (b / 4 * NR + r) * 64), _MM_HINT_T0);  // (fused's order)
      codes[r] = _mm512_loadu_si512(w[r] + b * 16);
      high[r] = _mm512_srli_epi16(codes[r], 4);
    }
    DSV4_UNROLL
    for (int j = 0; j < 4; ++j) {
      __m512i wv[NR];
      DSV4_UNROLL
      for (int r = 0; r < NR; ++r) wv[r] = fp4_vbmi_block(dec, sp, deltas[r] + b + j, codes[r], high[r], j);
      DSV4_UNROLL
      for (int i = 0; i < MR; ++i) {
        const __m512i x = _mm512_loadu_si512(a[i] + (b + j) * kBlock);
        DSV4_UNROLL
        for (int r = 0; r < NR; ++r) acc[i][r] = dp(acc[i][r], x, wv[r]);
      }
    }
  }
  for (; b < nb; ++b) {  // the last nb % 4 blocks, 16 bytes each: nothing is read past the row
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) {
      const __m512i codes = _mm512_maskz_loadu_epi8(0xFFFFull, w[r] + b * 16), high = _mm512_srli_epi16(codes, 4);
      const __m512i wv = fp4_vbmi_block(dec, sp, deltas[r] + b, codes, high, 0);
      DSV4_UNROLL
      for (int i = 0; i < MR; ++i) acc[i][r] = dp(acc[i][r], _mm512_loadu_si512(a[i] + b * kBlock), wv);
    }
  }
  DSV4_UNROLL
  for (int i = 0; i < MR; ++i)
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) res[i][r] = reduce16(acc[i][r]);
}

// The one-row FP4 tile (decode), with the block scale taken from a table instead of added per
// block: copy s of the 16-entry E2M1 table (twice, for vpermw's 32 words) already scaled by
// 2^(s − 127), exactly as Fp4Decoder scales it (the exponent delta added to every nonzero code's
// bf16, the zero codes +0), so a block's lookup takes its row's copy as a memory operand (1 KB
// of copies cover a checkpoint's usual scales: L1-resident) — one load instead of a broadcast
// load and a masked add on the vector pipes, and no per-tile pass writing the rows' deltas.
// Paired with read sweeps (2 threads, cold weights, the two variants alternated 4 times):
// 0.82 → 0.87 of the read bandwidth on the expert shapes. Each row's chain takes its blocks in
// order, row after row within four blocks (only the NR accumulators and the 4 activation blocks
// stay in registers): Fp4Decoder's products in the definition's order, so the same bits.
// Scales outside [kFp4ScaleLo, kFp4ScaleHi] never reach it (their rows take the scalar
// definition), so their copies are left zero.
struct Fp4ScaledTables {
  alignas(64) std::uint16_t t[256][32];
  Fp4ScaledTables() {
    for (unsigned s = 0; s < 256; ++s)
      for (int i = 0; i < 32; ++i) {
        const bool live = s >= kFp4ScaleLo && s <= kFp4ScaleHi && i % 8 != 0;
        const int delta = (static_cast<int>(s) - 127) * 128;
        t[s][i] = live ? static_cast<std::uint16_t>(e2m1_bf16_table()[i & 15] + delta) : 0;
      }
  }
};

const Fp4ScaledTables& fp4_scaled_tables() {
  static const Fp4ScaledTables tables;
  return tables;
}

// The spread indices when the VBMI paths are taken (the CPU has AVX512_VBMI and DSV4_NO_VBMI,
// which the tests set to cover the other paths, is unset); null otherwise.
const Fp4SpreadVbmi* fp4_vbmi_spread() {
  static const Fp4SpreadVbmi spread;
  static const bool on = cpu_features().avx512_vbmi && std::getenv("DSV4_NO_VBMI") == nullptr;
  return on ? &spread : nullptr;
}

template <int NR>
DSV4_VBMI void fused_fp4_vbmi_tables(const Fp4ScaledTables& tab, const Fp4SpreadVbmi& sp, const std::uint16_t* a,
                                     const std::uint8_t* const* w, const std::uint8_t* const* scales, std::size_t nb,
                                     std::uintptr_t next, float* res) {
  __m512 acc[NR];
  DSV4_UNROLL
  for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
  auto lookup = [&](__m512i nib, std::uint8_t s) { return _mm512_permutexvar_epi16(nib, _mm512_load_si512(tab.t[s])); };
  std::size_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    __m512i x[4];
    DSV4_UNROLL
    for (int j = 0; j < 4; ++j) x[j] = _mm512_loadu_si512(a + (b + j) * kBlock);
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(next + (b / 4 * NR + r) * 64), _MM_HINT_T0);  // (fused's order)
      const __m512i codes = _mm512_loadu_si512(w[r] + b * 16), high = _mm512_srli_epi16(codes, 4);
      DSV4_UNROLL
      for (int j = 0; j < 4; ++j)
        acc[r] = dp(acc[r], x[j], lookup(_mm512_permutex2var_epi8(codes, sp.idx[j], high), scales[r][b + j]));
    }
  }
  for (; b < nb; ++b) {  // the last nb % 4 blocks, 16 bytes each: nothing is read past the row
    DSV4_UNROLL
    for (int r = 0; r < NR; ++r) {
      const __m512i codes = _mm512_maskz_loadu_epi8(0xFFFFull, w[r] + b * 16), high = _mm512_srli_epi16(codes, 4);
      acc[r] = dp(acc[r], _mm512_loadu_si512(a + b * kBlock), lookup(_mm512_permutex2var_epi8(codes, sp.idx[0], high), scales[r][b]));
    }
  }
  DSV4_UNROLL
  for (int r = 0; r < NR; ++r) res[r] = reduce16(acc[r]);
}

// Whether all nb block scales of a row are in [lo, hi] (the decoders' exact range).
inline bool scales_in_range(const std::uint8_t* s, std::size_t nb, unsigned lo, unsigned hi) {
  const __m512i vlo = _mm512_set1_epi8(static_cast<char>(lo)), vhi = _mm512_set1_epi8(static_cast<char>(hi));
  __mmask64 bad = 0;
  for (std::size_t b = 0; b < nb; b += 64) {
    const __mmask64 live = nb - b >= 64 ? ~__mmask64{0} : (__mmask64{1} << (nb - b)) - 1;
    const __m512i e = _mm512_maskz_loadu_epi8(live, s + b);
    bad |= _mm512_mask_cmplt_epu8_mask(live, e, vlo) | _mm512_mask_cmpgt_epu8_mask(live, e, vhi);
  }
  return bad == 0;
}

template <class F>
void dispatch_mr(int mr, F&& f) {
  switch (mr) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 5: f(std::integral_constant<int, 5>{}); break;
    default: f(std::integral_constant<int, 6>{}); break;
  }
}

const std::uint8_t* code_row(const WeightRef& w, std::size_t j) {
  const auto* base = static_cast<const std::uint8_t*>(w.data);
  return w.format == WeightFormat::kFP8 ? base + j * w.cols : base + j * (w.cols / 2);
}

// How far ahead the decode shape prefetches its weights: the whole tiles nearest to ~20 KB (at
// least one). Paired with read sweeps, 20 KB read ~0.03–0.05 of the bandwidth better than one
// tile (4.6–32 KB on the model's shapes) or 32 KB.
std::size_t prefetch_distance(std::size_t tile_bytes) {
  constexpr std::size_t kTarget = 20 * 1024;
  return std::max<std::size_t>(1, (kTarget + tile_bytes / 2) / tile_bytes) * tile_bytes;
}

std::int32_t* scratch_deltas(std::size_t n) {
  thread_local std::vector<std::int32_t> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// The FP8 decode shape's per-group deltas: a buffer of their own, because the group fallback
// (decode_rows) grows scratch_deltas while the group loop still holds its pointer.
std::int32_t* scratch_group_deltas(std::size_t n) {
  thread_local std::vector<std::int32_t> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// The scale deltas (e − 127) << 7 of nb block scales `s` (as int32 pairs), 16 scales per step:
// on the decode shape this runs once per weight row per call, so the scalar version cost as
// much as a tenth of the mat-vec. Scales outside the decoder's exact range give meaningless
// deltas: callers check scales_in_range first (or with load_deltas).
inline void write_deltas(const std::uint8_t* s, std::size_t nb, std::int32_t* out) {
  const __m512i low_half = _mm512_set1_epi32(0xFFFF);
  for (std::size_t b = 0; b < nb; b += 16) {
    const __mmask16 live = nb - b >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (nb - b)) - 1);
    const __m128i e = _mm_maskz_loadu_epi8(live, s + b);
    const __m512i d = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_cvtepu8_epi32(e), _mm512_set1_epi32(127)), 7);
    // Both 16-bit halves ← the low half of d.
    _mm512_mask_storeu_epi32(out + b, live, _mm512_ternarylogic_epi32(low_half, d, _mm512_slli_epi32(d, 16), 0xCA));
  }
}

// Weight row j's deltas (write_deltas) and whether every one of its scales is in the decoder's
// exact range (row_in_fast_range).
template <class Dec>
bool load_deltas(const WeightRef& w, std::size_t j, std::size_t nb, std::int32_t* out) {
  const std::uint8_t* s = row_scales(w, j);
  write_deltas(s, nb, out);
  return scales_in_range(s, nb, Dec::kScaleLo, Dec::kScaleHi);
}

// Exponent range of the activations' nonzero elements (bf16 exponent fields), for moving an FP8
// weight block's power-of-two scale onto them: x·2^d is exact (a normal bf16 number) for every
// element when emin + d ≥ 1 and emax + d ≤ 254; inf/NaN (exponent 255) never move.
struct ActRange {
  int emin = 255, emax = 0;
};
ActRange act_range(const Bf16Acts& a) {
  __m512i vmin = _mm512_set1_epi16(255), vmax = _mm512_setzero_si512();
  const __m512i mag = _mm512_set1_epi16(0x7FFF);
  for (std::size_t i = 0; i < a.m; ++i)
    for (std::size_t c = 0; c < a.k32; c += kBlock) {
      const __m512i x = _mm512_loadu_si512(a.row(i) + c);
      const __mmask32 nz = _mm512_test_epi16_mask(x, mag);
      const __m512i e = _mm512_srli_epi16(_mm512_and_si512(x, mag), 7);
      vmin = _mm512_mask_min_epu16(vmin, nz, vmin, e);
      vmax = _mm512_mask_max_epu16(vmax, nz, vmax, e);
    }
  alignas(64) std::uint16_t lo[32], hi[32];
  _mm512_store_si512(lo, vmin);
  _mm512_store_si512(hi, vmax);
  ActRange r;
  for (int l = 0; l < 32; ++l) {
    r.emin = std::min<int>(r.emin, lo[l]);
    r.emax = std::max<int>(r.emax, hi[l]);
  }
  return r;
}

std::uint32_t* scratch_fma_acts(std::size_t n) {
  thread_local std::vector<std::uint32_t> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

std::uint16_t* scratch_scaled_acts(std::size_t n) {
  thread_local std::vector<std::uint16_t> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Decode shape over weight rows [j0, j1): every weight row read once, straight from the mapped
// codes, NR rows per tile, each dequantized in registers with its own block scales.
template <int NR, class Dec>
void decode_tiles(const Dec& dec, const Bf16Acts& a, const std::uint16_t* const* arows, const WeightRef& w,
                  std::size_t j0, std::size_t j1, float* out, std::size_t ldo) {
  const std::size_t nb = a.k32 / kBlock, m = a.m;
  const std::size_t row_bytes = Dec::kBytesPerBlock * nb, ahead = prefetch_distance(NR * row_bytes);
  // One FP4 activation row takes a scaled-table tile, which needs no deltas: the FMA one where
  // VDPBF16PS is slow (bf16_gemm_avx512_fp4_fma.cc), else the VBMI one on a VBMI CPU. The FMA tile
  // walks its rows by stride, so it never takes a short tile: the last tile of the range moves
  // back to end at j1 (its first rows are computed twice, with the same bits), and a range of
  // fewer than NR rows takes the other tiles.
  constexpr bool kTablesShape = std::is_same_v<Dec, Fp4Decoder> && NR == kNrWide;
  const Fp4SpreadVbmi* spread = std::is_same_v<Dec, Fp4Decoder> ? fp4_vbmi_spread() : nullptr;
  const bool fma = kTablesShape && j1 - j0 >= NR && fma_for_bf16_dot();
  const bool tables = kTablesShape && spread != nullptr && !fma;
  std::int32_t* deltas = tables || fma ? nullptr : scratch_deltas(NR * nb);
  std::uint32_t* ax = nullptr;
  if (fma) {
    ax = scratch_fma_acts(nb * 16);
    fp4_fma_acts(arows[0], nb, ax);
  }
  float res[kMr][kNrWide];
  for (std::size_t jn = j0; jn < j1; jn += NR) {
    const std::size_t j = fma ? std::min(jn, j1 - NR) : jn;
    const std::size_t nr = std::min<std::size_t>(NR, j1 - j);
    // The next tile's scale bytes (a stream of their own beside the codes, which the tile
    // prefetches itself): without this their load stalled each tile's start, ~6 % of a decode step.
    if (j + NR < j1) {
      const auto* s0 = reinterpret_cast<const char*>(row_scales(w, j + NR));
      const std::size_t bytes = std::min<std::size_t>(NR, j1 - j - NR) * nb;
      for (std::size_t o = 0; o < bytes; o += 64) _mm_prefetch(s0 + o, _MM_HINT_T0);
    }
    const std::uint8_t* wr[NR];
    const std::uint8_t* sr[NR];
    bool fast = true;
    for (std::size_t r = 0; r < NR; ++r) {
      const std::size_t jr = j + std::min(r, nr - 1);  // a short tile repeats its last row
      wr[r] = code_row(w, jr);
      sr[r] = row_scales(w, jr);
      fast &= scales_in_range(sr[r], nb, Dec::kScaleLo, Dec::kScaleHi);
    }
    if (!fast) {
      // A row with out-of-range scales: the scalar definition (bf16_gemm.h).
      std::uint16_t* row = scratch_u16(a.k32);
      for (std::size_t r = 0; r < nr; ++r) {
        fast_weight_row(w, j + r, row, a.k32);
        for (std::size_t i = 0; i < m; ++i) res[i][r] = lane16_dot_scalar(arows[i], row, a.k32);
      }
    } else if (fma) {
      fp4_fma_tile8(ax, wr[0], w.cols / 2, sr[0], w.scale_cols(), nb, reinterpret_cast<std::uintptr_t>(wr[0]) + ahead,
                    res[0]);
    } else if (tables) {
      if constexpr (kTablesShape)  // (tables implies it; this keeps the tile out of other shapes)
        fused_fp4_vbmi_tables<NR>(fp4_scaled_tables(), *spread, arows[0], wr, sr, nb,
                                  reinterpret_cast<std::uintptr_t>(wr[0]) + ahead, res[0]);
    } else {
      const std::int32_t* dr[NR];
      for (std::size_t r = 0; r < NR; ++r) {
        dr[r] = deltas + r * nb;
        write_deltas(sr[r], nb, deltas + r * nb);
      }
      auto run = [&](auto MR) {
        if constexpr (std::is_same_v<Dec, Fp4Decoder>)
          if (spread != nullptr) return fused_fp4_vbmi<MR(), NR>(dec, *spread, arows, wr, dr, nb, reinterpret_cast<std::uintptr_t>(wr[0]) + ahead, res);
        fused<MR(), NR, true>(dec, arows, wr, dr, nb, reinterpret_cast<std::uintptr_t>(wr[0]) + ahead, res);
      };
      if constexpr (NR == kNrWide) run(std::integral_constant<int, 1>{});
      else dispatch_mr(static_cast<int>(m), run);
    }
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t r = 0; r < nr; ++r) out[i * ldo + j + r] = res[i][r];
  }
}

// One activation row: wide tiles (kNrWide chains); more: 4-row tiles × the rows.
template <class Dec>
void decode_rows(const Dec& dec, const Bf16Acts& a, const std::uint16_t* const* arows, const WeightRef& w,
                 std::size_t j0, std::size_t j1, float* out, std::size_t ldo) {
  if (a.m == 1) decode_tiles<kNrWide>(dec, a, arows, w, j0, j1, out, ldo);
  else decode_tiles<kNr>(dec, a, arows, w, j0, j1, out, ldo);
}

// FP8 decode shape: the 32 rows of a scale group share each block's scale, so it is moved onto
// the activations once per group — (x·2^d)·w = x·(w·2^d) exactly, both products exact in fp32,
// the same accumulation, the same bits — and the weights are decoded unscaled (× 2^8, moved onto
// the activations as well: Fp8x256Decoder), which cuts the per-block work. Groups whose scales or
// activations are outside the exact range take decode_rows.
void decode_rows_fp8(const Fp8Decoder& dec, const Bf16Acts& a, const std::uint16_t* const* arows,
                     const WeightRef& w, std::size_t j0, std::size_t j1, float* out, std::size_t ldo) {
  static const Fp8x256Decoder dec256;
  constexpr int kX256 = 8;  // the weights come out × 2^8, so the activations take 2^(d − 8)
  const std::size_t nb = a.k32 / kBlock, m = a.m;
  // 4-row tiles even for one activation row (unlike decode_rows): an FP8 block is 32 bytes, so
  // 4 dependent VDPBF16PS chains already outrun memory, and 8 rows of a 5120-wide weight make a
  // 40 KB tile — the prefetch a tile ahead then overflowed L1. Paired with read sweeps, 4 × 4
  // shapes alternated 3 times: 0.885 → 0.905 of the read bandwidth on average (4096 × 5120:
  // 0.89 → 0.91, 32768 × 1280: 0.84 → 0.91).
  const std::size_t ahead = prefetch_distance(kNr * w.cols);
  const ActRange range = act_range(a);
  std::int32_t* gd = scratch_group_deltas(nb);
  std::uint16_t* scaled = scratch_scaled_acts(m * a.k32);
  const std::uint16_t* srows[kMr];
  for (std::size_t i = 0; i < m; ++i) srows[i] = scaled + i * a.k32;
  const __m512i mag = _mm512_set1_epi16(0x7FFF);
  float res[kMr][kNrWide];
  for (std::size_t g0 = j0; g0 < j1;) {
    const std::size_t g1 = std::min(j1, (g0 / kBlock + 1) * kBlock);
    bool movable = load_deltas<Fp8Decoder>(w, g0, nb, gd) && range.emax < 255;
    for (std::size_t b = 0; b < nb && movable; ++b) {
      const int d = static_cast<std::int16_t>(gd[b] & 0xFFFF) / 128 - kX256;
      movable = range.emin > range.emax || (range.emin + d >= 1 && range.emax + d <= 254);
    }
    if (!movable) {
      decode_rows(dec, a, arows, w, g0, g1, out, ldo);
      g0 = g1;
      continue;
    }
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t b = 0; b < nb; ++b) {
        const __m512i x = _mm512_loadu_si512(arows[i] + b * kBlock);
        // Zeros stay zeros (with their sign); every other element gets d added to its exponent.
        const __m512i delta = _mm512_sub_epi16(_mm512_set1_epi32(gd[b]), _mm512_set1_epi16(kX256 << 7));
        const __m512i y = _mm512_mask_add_epi16(x, _mm512_test_epi16_mask(x, mag), x, delta);
        _mm512_storeu_si512(scaled + i * a.k32 + b * kBlock, y);
      }
    for (std::size_t j = g0; j < g1; j += kNr) {
      const std::size_t nr = std::min<std::size_t>(kNr, g1 - j);
      const std::uint8_t* wr[kNr];
      for (std::size_t r = 0; r < kNr; ++r) wr[r] = code_row(w, j + std::min(r, nr - 1));
      dispatch_mr(static_cast<int>(m), [&](auto MR) {
        fused<MR(), kNr, false>(dec256, srows, wr, nullptr, nb, reinterpret_cast<std::uintptr_t>(wr[0]) + ahead, res);
      });
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t r = 0; r < nr; ++r) out[i * ldo + j + r] = res[i][r];
    }
    g0 = g1;
  }
}

// res[i][r] = dot(a rows i, w rows r) for MR activation rows × kNr bf16 weight rows, one pass
// over K (the decode shape of BF16 weights).
template <int MR>
void micro(const std::uint16_t* const* a, const std::uint16_t* const* w, std::size_t nb, float (*res)[kNr]) {
  __m512 acc[MR][kNr];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < kNr; ++r) acc[i][r] = _mm512_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    __m512i wv[kNr];
    for (int r = 0; r < kNr; ++r) wv[r] = _mm512_loadu_si512(w[r] + b * kBlock);
    for (int i = 0; i < MR; ++i) {
      const __m512i x = _mm512_loadu_si512(a[i] + b * kBlock);
      for (int r = 0; r < kNr; ++r) acc[i][r] = dp(acc[i][r], x, wv[r]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < kNr; ++r) res[i][r] = reduce16(acc[i][r]);
}

// Activations lane-major for the prefill kernel, as pairs and, for its FMA form, split: bf16_gemm's
// copies when it made them, else this thread's own (direct callers of bf16_gemm_rows).
struct LaneActs {
  const std::uint32_t* pairs;
  const float* split;  // null: the VDPBF16PS form
};
LaneActs acts_lanes(const Bf16Acts& a) {
  const std::size_t n = a.m * lane_row_dwords(a.k32);
  const bool fma = fma_for_bf16_dot();
  if (a.lanes_ready && a.lanes.size() == n && (!fma || a.lanes_split.size() == 2 * n))
    return {a.lanes.data(), fma ? a.lanes_split.data() : nullptr};
  thread_local std::vector<std::uint32_t> own;
  thread_local std::vector<float> own_split;
  if (own.size() < n) own.resize(n);
  lane_major_acts_avx512(a, 0, a.m, own.data());
  if (!fma) return {own.data(), nullptr};
  if (own_split.size() < 2 * n) own_split.resize(2 * n);
  lane_split_f32(own.data(), n, 0, n, own_split.data());
  return {own.data(), own_split.data()};
}

// The definition's dot products of every activation row with the panel's rows that are
// flagged slow (scale out of the decoders' range): exactly dequantized, scalar.
void slow_rows(const Bf16Acts& a, const WeightRef& w, std::size_t p, const bool* slow, std::size_t np, float* out,
               std::size_t ldo) {
  thread_local std::vector<std::uint16_t> exact;
  for (std::size_t r = 0; r < np; ++r) {
    if (!slow[r]) continue;
    exact.resize(a.k32);
    fast_weight_row(w, p + r, exact.data(), a.k32);
    for (std::size_t i = 0; i < a.m; ++i) out[i * ldo + p + r] = lane16_dot_scalar(a.row(i), exact.data(), a.k32);
  }
}

template <class Dec>
void run_quantized(const Dec& dec, const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                   float* out, std::size_t ldo) {
  const std::size_t nb = a.k32 / kBlock, m = a.m;
  const std::uint16_t* arows[kMr];
  if (m < kLaneMajorMinRows) {
    for (std::size_t i = 0; i < m; ++i) arows[i] = a.row(i);
    if constexpr (std::is_same_v<Dec, Fp8Decoder>) decode_rows_fp8(dec, a, arows, w, j0, j1, out, ldo);
    else decode_rows(dec, a, arows, w, j0, j1, out, ldo);
    return;
  }
  // Prefill shape: panels of 64 weight rows, dequantized 16 rows at a time straight into the
  // lane-major layout of the broadcast kernel (bf16_gemm_avx512_lanes.cc).
  const LaneActs lanes = acts_lanes(a);
  std::int32_t* deltas = scratch_deltas(16 * nb);
  std::uint32_t* wl = lane_panel_buffer(nb);
  constexpr std::size_t kPrefetchEvery = 64 / Dec::kBytesPerBlock, kPrefetchAhead = 8 * kPrefetchEvery;
  for (std::size_t p = j0; p < j1; p += kMaxPanel) {
    const std::size_t np = std::min(kMaxPanel, j1 - p);
    const int groups = static_cast<int>((np + 15) / 16);
    const std::size_t plane = lane_plane_dwords(nb, groups);
    bool slow[kMaxPanel] = {};
    for (int g = 0; g < groups; ++g) {
      const std::size_t q = static_cast<std::size_t>(g) * 16, n = std::min<std::size_t>(16, np - q);
      const std::uint8_t* src[16];
      for (std::size_t r = 0; r < n; ++r) {
        src[r] = code_row(w, p + q + r);
        slow[q + r] = !load_deltas<Dec>(w, p + q + r, nb, deltas + r * nb);  // computed apart below
      }
      for (std::size_t b = 0; b < nb; ++b) {
        // Sixteen short streams at once are more than the hardware prefetchers follow well.
        if (b % kPrefetchEvery == 0)
          for (std::size_t r = 0; r < n; ++r) _mm_prefetch(src[r] + (b + kPrefetchAhead) * Dec::kBytesPerBlock, _MM_HINT_T0);
        __m512i v[16];
        for (std::size_t r = 0; r < 16; ++r)
          v[r] = r < n && !slow[q + r] ? dec(src[r] + b * Dec::kBytesPerBlock, deltas + r * nb + b)
                                       : _mm512_setzero_si512();
        store_lane_block(v, wl, plane, b, groups, g);
      }
    }
    lane_panel_gemm_avx512(a, lanes.pairs, lanes.split, wl, np, p, out, ldo);
    slow_rows(a, w, p, slow, np, out, ldo);
  }
}

// BF16 weights: used in place when their rows are whole blocks, else copied padded.
void run_bf16(const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1, float* out, std::size_t ldo) {
  const std::size_t nb = a.k32 / kBlock, m = a.m;
  const bool in_place = w.cols == a.k32;
  const auto* base = static_cast<const std::uint16_t*>(w.data);
  if (m >= kLaneMajorMinRows) {  // prefill shape: 64-row lane-major panels, as run_quantized
    const LaneActs lanes = acts_lanes(a);
    std::uint16_t* tmp = in_place ? nullptr : scratch_u16(16 * a.k32);
    std::uint32_t* wl = lane_panel_buffer(nb);
    for (std::size_t p = j0; p < j1; p += kMaxPanel) {
      const std::size_t np = std::min(kMaxPanel, j1 - p);
      const int groups = static_cast<int>((np + 15) / 16);
      for (int g = 0; g < groups; ++g) {
        const std::size_t q = static_cast<std::size_t>(g) * 16, n = std::min<std::size_t>(16, np - q);
        const std::uint16_t* rows16[16];
        for (std::size_t r = 0; r < n; ++r) {
          if (in_place) {
            rows16[r] = base + (p + q + r) * w.cols;
          } else {
            fast_weight_row(w, p + q + r, tmp + r * a.k32, a.k32);
            rows16[r] = tmp + r * a.k32;
          }
        }
        lane_panel_group_avx512(rows16, n, nb, groups, g, wl);
      }
      lane_panel_gemm_avx512(a, lanes.pairs, lanes.split, wl, np, p, out, ldo);
    }
    return;
  }
  // Decode shape: each weight row streamed once from memory, one pass over K.
  std::uint16_t* panel = in_place ? nullptr : scratch_u16(kPanel * a.k32);
  const std::uint16_t* arows[kMr];
  float res[kMr][kNr];
  for (std::size_t i = 0; i < m; ++i) arows[i] = a.row(i);
  for (std::size_t p = j0; p < j1; p += kPanel) {
    const std::size_t np = std::min(kPanel, j1 - p);
    const std::uint16_t* rows[kPanel];
    for (std::size_t r = 0; r < np; ++r) {
      if (in_place) {
        rows[r] = base + (p + r) * w.cols;
      } else {
        fast_weight_row(w, p + r, panel + r * a.k32, a.k32);
        rows[r] = panel + r * a.k32;
      }
    }
    for (std::size_t q = 0; q < np; q += kNr) {
      const std::size_t nr = std::min<std::size_t>(kNr, np - q);
      const std::uint16_t* wd[kNr];
      for (std::size_t r = 0; r < kNr; ++r) wd[r] = rows[q + std::min(r, nr - 1)];
      dispatch_mr(static_cast<int>(m), [&](auto MR) { micro<MR()>(arows, wd, nb, res); });
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t r = 0; r < nr; ++r) out[i * ldo + p + q + r] = res[i][r];
    }
  }
}

}  // namespace

// act_quant of one row straight to the dequantized bf16 bits (quantized_acts' scalar loop, 32
// elements at a time). Per block: amax and the power-of-two scale s as act_quant computes them
// (fp8_act_scale), v = clamp(x · (1/s), ±448) — x/s exactly, 1/s being a normal power of two —
// then v rounded to the E4M3 grid by adding and subtracting C = 1.5 · 2^23 · Q, where Q is v's
// E4M3 quantum (2^(exponent − 3), at least 2^−9 for the subnormal range): the sum lies in
// [2^23 Q, 2^24 Q), whose ulp is Q, so the addition is the round-to-nearest-even of E4M3 and
// the subtraction is exact (the clamp never binds by more than E4M3's rounding absorbs, since
// s ≥ amax/448 up to an fp32 rounding; it is act_quant's step all the same). The result takes
// v's sign (a negative value rounding to zero is the −0 code), and r · s is exact with at most 4
// significant bits, so its top 16 bits are its bf16.
// Returns false when an element is not a bf16 value or a block holds inf/NaN; the blocks before
// it may already be written. The caller then redoes the whole row on the scalar path, which
// names the bad element or writes the canonical NaN.
bool quantize_row_avx512(const float* x, std::size_t k, std::uint16_t* out) {
  const __m512i low16 = _mm512_set1_epi32(0xFFFF), exp_mask = _mm512_set1_epi32(0x7F800000),
                sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512 hi = _mm512_set1_ps(448.0f), lo = _mm512_set1_ps(-448.0f);
  for (std::size_t c = 0; c < k; c += kBlock) {
    __m512i u[2];
    for (int j = 0; j < 2; ++j) {
      u[j] = _mm512_loadu_si512(x + c + 16 * j);
      if (_mm512_test_epi32_mask(u[j], low16) != 0) return false;
      if (_mm512_cmpeq_epi32_mask(_mm512_and_si512(u[j], exp_mask), exp_mask) != 0) return false;
    }
    const __m512 mag = _mm512_max_ps(_mm512_abs_ps(_mm512_castsi512_ps(u[0])), _mm512_abs_ps(_mm512_castsi512_ps(u[1])));
    const float s = fp8_act_scale(_mm512_reduce_max_ps(mag));
    const __m512 inv = _mm512_set1_ps(1.0f / s), sv = _mm512_set1_ps(s);
    for (int j = 0; j < 2; ++j) {
      const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_castsi512_ps(u[j]), inv), lo), hi);
      const __m512i vb = _mm512_castps_si512(v);
      const __m512i e = _mm512_max_epu32(_mm512_srli_epi32(_mm512_and_si512(vb, exp_mask), 23), _mm512_set1_epi32(121));
      const __m512 C = _mm512_castsi512_ps(_mm512_or_si512(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(20)), 23),
                                                           _mm512_set1_epi32(0x400000)));
      const __m512 r = _mm512_castsi512_ps(
          _mm512_or_si512(_mm512_castps_si512(_mm512_sub_ps(_mm512_add_ps(v, C), C)), _mm512_and_si512(vb, sign)));
      const __m512i b = _mm512_srli_epi32(_mm512_castps_si512(_mm512_mul_ps(r, sv)), 16);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c + 16 * j), _mm512_cvtepi32_epi16(b));
    }
  }
  return true;
}

void gemm_rows_avx512(const Bf16Acts& a, const WeightRef& w, std::size_t j0, std::size_t j1,
                      float* out, std::size_t ldo) {
  if (a.m == 0 || j0 == j1) return;  // (the tiles below assume at least one row each way)
  if (w.format == WeightFormat::kBF16) return run_bf16(a, w, j0, j1, out, ldo);
  // The in-register decoders read whole 32-element blocks of each row.
  if (w.cols % kBlock != 0) return gemm_rows_scalar(a, w, j0, j1, out, ldo);
  if (w.format == WeightFormat::kFP4) {
    static const Fp4Decoder dec;
    return run_quantized(dec, a, w, j0, j1, out, ldo);
  }
  static const Fp8Decoder dec;
  run_quantized(dec, a, w, j0, j1, out, ldo);
}

}  // namespace dsv4::kernels::bf16_detail

#else  // not compiled for this target: never dispatched to (isa_supported is false)
#include "util/error.h"
namespace dsv4::kernels::bf16_detail {
void gemm_rows_avx512(const Bf16Acts&, const WeightRef&, std::size_t, std::size_t, float*, std::size_t) {
  fail("bf16_gemm: this build has no gemm_rows_avx512 path");
}
bool quantize_row_avx512(const float*, std::size_t, std::uint16_t*) { return false; }
}  // namespace dsv4::kernels::bf16_detail
#endif
