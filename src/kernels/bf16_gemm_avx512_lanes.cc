// The AVX-512 prefill shape of bf16_gemm with lane-major operands: one register holds the same
// lane of the definition (bf16_gemm.h) for 16 different weight rows, instead of the 16 lanes of
// one output.
//
// Why: the definition keeps 16 separate partial sums per output (lane l takes the pair
// (2l, 2l+1) of every 32-element block, in ascending block order) and sums them by a fixed tree
// at the end. Nothing forces those 16 partial sums into the lanes of one register. Here an
// accumulator register holds partial sum l of 16 consecutive weight rows for one activation row:
// per block it takes the activation pair (2l, 2l+1) broadcast to every lane (a 4-byte load) and
// the weights' pair l of 16 rows (one 64-byte load of the lane-major panel). VDPBF16PS does per
// lane exactly what it does in the row-major kernel — acc + a[2l+1]·w[2l+1] + a[2l]·w[2l],
// rounded as the instruction rounds — so every partial sum gets the same bits, and the tree is
// the same additions done vertically across the 16 partial-sum registers. A 6 × 4 register tile
// (6 activation rows × 64 weight rows) then costs 4 weight loads + 6 broadcasts per 24 dot
// products, and its 24 accumulators live over the whole of K — no parking between K chunks.
// On the 2-core Zen 5 this was written on, the inner loop runs at the dot-product peak with its
// operands in L2, where the row-major 6 × 4 tile, whose 10 loads are 64-byte ones, reached ~0.73.
//
// Layouts (dwords, each a pair of bf16; bf16_gemm_isa.h):
//   activations: row i → 16 planes of nb = k32/32 dwords; plane l, dword b = pair l of block b;
//   a weight panel of np ≤ 64 rows in G = ⌈np/16⌉ groups of 16: plane l, dword (b·G + g)·16 + r
//   = pair l of block b of panel row 16g + r (rows past np are zero).
// Rows and planes are one cache line longer than their data: at the natural strides (multiples
// of 4 KB for the released shapes) the 16 stores of a transposed block, or a tile's six
// activation streams, all fell into one L1 set.
//
// The partial sums of a tile are computed lane by lane in the order n = 0…15, l = bitreverse(n)
// (0, 8, 4, 12, 2, …), and merged like a binary counter: the sum of lanes l and l+8 exists as
// soon as both do, then (l)+(l+4), and so on — exactly the definition's tree
// ((s0+s8)+(s4+s12)) + ((s2+s10)+(s6+s14)) + …, with at most four pending levels per tile.
#include "kernels/bf16_gemm_isa.h"

#if defined(__AVX512BF16__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/transpose16_avx512.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

namespace dsv4::kernels::bf16_detail {
namespace {

constexpr int kMr = 6;              // activation rows per register tile
constexpr int kMaxG = 4;            // 16-row weight groups per register tile
constexpr std::size_t kGroupRows = 96;  // activation rows whose tiles share one pass over the lanes

std::uint32_t* scratch_u32(std::size_t n) {
  thread_local std::vector<std::uint32_t> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

float* scratch_stack(std::size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Step n of the tree for a tile's partial sums `acc` (lane bitreverse(n) of every output): merged
// into the pending levels (`stack`: 4 levels of MR × G registers); the last step stores the outputs
// (columns of group g below `cols[g]`).
template <int MR, int G>
void merge_tile(__m512 (&acc)[MR][G], int n, float* stack, float* const* out, const __mmask16* cols) {
  constexpr std::size_t kLevel = static_cast<std::size_t>(MR) * G * 16;
  int k = 0;
  for (; (n >> k) & 1; ++k) {  // the pending sum of this level is the left operand (lower lanes)
    const float* s = stack + k * kLevel;
    for (int i = 0; i < MR; ++i)
      for (int g = 0; g < G; ++g) acc[i][g] = _mm512_add_ps(_mm512_loadu_ps(s + (i * G + g) * 16), acc[i][g]);
  }
  if (k == 4) {
    for (int i = 0; i < MR; ++i)
      for (int g = 0; g < G; ++g) _mm512_mask_storeu_ps(out[i] + g * 16, cols[g], acc[i][g]);
    return;
  }
  float* s = stack + k * kLevel;
  for (int i = 0; i < MR; ++i)
    for (int g = 0; g < G; ++g) _mm512_storeu_ps(s + (i * G + g) * 16, acc[i][g]);
}

// Partial sum l of an MR × 16G tile: a[i] points at plane l of activation row i, w at plane l of
// the panel; merged as step n of the tree (merge_tile).
template <int MR, int G>
void lane_tile(const std::uint32_t* const* a, const std::uint32_t* w, std::size_t nb, int n, float* stack,
               float* const* out, const __mmask16* cols) {
  __m512 acc[MR][G];
  for (int i = 0; i < MR; ++i)
    for (int g = 0; g < G; ++g) acc[i][g] = _mm512_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    __m512i wv[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) wv[g] = _mm512_loadu_si512(w + (b * G + g) * 16);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m512i x = _mm512_set1_epi32(static_cast<int>(a[i][b]));
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[i][g] = _mm512_dpbf16_ps(acc[i][g], (__m512bh)x, (__m512bh)wv[g]);
    }
  }
  merge_tile<MR, G>(acc, n, stack, out, cols);
}

// The same with fp32 FMAs (the FMA form, fma_for_bf16_dot): per block, acc + a[2l+1]·w[2l+1], then
// + a[2l]·w[2l], each rounded once — an FMA with an exact product is VDPBF16PS's step — under
// MXCSR's FTZ and DAZ, VDPBF16PS's flushing (bf16_gemm_avx512_fp4_fma.cc), which end before the
// tree's plain adds. The activation halves come split beforehand (lane_split_f32) and are read as
// broadcast operands of the FMAs; the weight pairs are split in registers, once per 16 rows and
// block for all MR activation rows. ao[i] / ae[i]: plane l of row i's odd / even halves.
// A tile here is at most 6 × 32 (G ≤ 2), half of the VDPBF16PS tile: 12 accumulators, the 12
// broadcast halves and two groups' split weights fill the 32 registers (6 × 64 spilled), and the
// two splits per group are then 4 instructions per 24 FMAs. `gstride`: the panel's groups (its
// blocks' stride in 16-dword units), of which the tile takes G from w on.
template <int MR, int G>
void lane_tile_fma(const float* const* ao, const float* const* ae, const std::uint32_t* w, int gstride, std::size_t nb,
                   int n, float* stack, float* const* out, const __mmask16* cols) {
  __m512 acc[MR][G];
  for (int i = 0; i < MR; ++i)
    for (int g = 0; g < G; ++g) acc[i][g] = _mm512_setzero_ps();
  const __m512i hi = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040u);
  for (std::size_t b = 0; b < nb; ++b) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const __m512i wv = _mm512_loadu_si512(w + (b * static_cast<std::size_t>(gstride) + g) * 16);
      const __m512 wo = _mm512_castsi512_ps(_mm512_and_si512(wv, hi)), we = _mm512_castsi512_ps(_mm512_slli_epi32(wv, 16));
#pragma GCC unroll 6
      for (int i = 0; i < MR; ++i) {
        acc[i][g] = _mm512_fmadd_ps(_mm512_set1_ps(ao[i][b]), wo, acc[i][g]);
        acc[i][g] = _mm512_fmadd_ps(_mm512_set1_ps(ae[i][b]), we, acc[i][g]);
      }
    }
  }
  _mm_setcsr(csr);
  merge_tile<MR, G>(acc, n, stack, out, cols);
}

template <class F>
void dispatch(int mr, int g, F&& f) {
  auto with_g = [&](auto MR) {
    switch (g) {
      case 1: f(MR, std::integral_constant<int, 1>{}); break;
      case 2: f(MR, std::integral_constant<int, 2>{}); break;
      case 3: f(MR, std::integral_constant<int, 3>{}); break;
      default: f(MR, std::integral_constant<int, 4>{}); break;
    }
  };
  switch (mr) {
    case 1: with_g(std::integral_constant<int, 1>{}); break;
    case 2: with_g(std::integral_constant<int, 2>{}); break;
    case 3: with_g(std::integral_constant<int, 3>{}); break;
    case 4: with_g(std::integral_constant<int, 4>{}); break;
    case 5: with_g(std::integral_constant<int, 5>{}); break;
    default: with_g(std::integral_constant<int, 6>{}); break;
  }
}

constexpr int bitreverse4(int n) { return ((n & 1) << 3) | ((n & 2) << 1) | ((n & 4) >> 1) | ((n & 8) >> 3); }

}  // namespace

void lane_major_acts_avx512(const Bf16Acts& a, std::size_t i0, std::size_t i1, std::uint32_t* out) {
  const std::size_t nb = a.k32 / kBlock;
  for (std::size_t i = i0; i < i1; ++i) {
    const auto* src = reinterpret_cast<const std::uint32_t*>(a.row(i));
    std::uint32_t* dst = out + i * lane_row_dwords(a.k32);
    std::size_t b = 0;
    for (; b + 16 <= nb; b += 16) {
      __m512i v[16];
      for (std::size_t r = 0; r < 16; ++r) v[r] = _mm512_loadu_si512(src + (b + r) * 16);
      transpose16(v);
      for (std::size_t l = 0; l < 16; ++l) _mm512_storeu_si512(dst + l * nb + b, v[l]);
    }
    for (; b < nb; ++b)
      for (std::size_t l = 0; l < 16; ++l) dst[l * nb + b] = src[b * 16 + l];
  }
}

std::uint32_t* lane_panel_buffer(std::size_t nb) { return scratch_u32(16 * lane_plane_dwords(nb, kMaxG)); }

void lane_panel_group_avx512(const std::uint16_t* const* rows, std::size_t n, std::size_t nb, int groups, int g,
                             std::uint32_t* wl) {
  const std::size_t plane = lane_plane_dwords(nb, groups);
  for (std::size_t b = 0; b < nb; ++b) {
    __m512i v[16];
    for (std::size_t r = 0; r < 16; ++r)
      v[r] = r < n ? _mm512_loadu_si512(rows[r] + b * kBlock) : _mm512_setzero_si512();
    store_lane_block(v, wl, plane, b, groups, g);
  }
}

void lane_split_f32(const std::uint32_t* lanes, std::size_t n, std::size_t q0, std::size_t q1, float* out) {
  const __m512i hi = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  std::size_t q = q0;
  for (; q + 16 <= q1; q += 16) {
    const __m512i v = _mm512_loadu_si512(lanes + q);
    _mm512_storeu_si512(out + q, _mm512_and_si512(v, hi));
    _mm512_storeu_si512(out + n + q, _mm512_slli_epi32(v, 16));
  }
  for (; q < q1; ++q) {
    const std::uint32_t odd = lanes[q] & 0xFFFF0000u, even = lanes[q] << 16;
    std::memcpy(out + q, &odd, 4);
    std::memcpy(out + n + q, &even, 4);
  }
}

void lane_panel_gemm_avx512(const Bf16Acts& a, const std::uint32_t* lanes, const float* split,
                            const std::uint32_t* wl, std::size_t np, std::size_t col0, float* out, std::size_t ldo) {
  const std::size_t nb = a.k32 / kBlock, m = a.m;
  const int groups = static_cast<int>((np + 15) / 16);
  __mmask16 cols[kMaxG];
  for (int g = 0; g < groups; ++g) {
    const std::size_t left = np - static_cast<std::size_t>(g) * 16;
    cols[g] = left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
  }
  const std::size_t plane = lane_plane_dwords(nb, groups), row = lane_row_dwords(a.k32);
  constexpr std::size_t kTileStack = 4 * kMr * kMaxG * 16;
  float* stack = scratch_stack((kGroupRows / kMr) * kTileStack);
  for (std::size_t g0 = 0; g0 < m; g0 += kGroupRows) {
    const std::size_t g1 = std::min(m, g0 + kGroupRows);
    for (int n = 0; n < 16; ++n) {
      const std::size_t l = static_cast<std::size_t>(bitreverse4(n));
      const std::uint32_t* wp = wl + l * plane;
      for (std::size_t i0 = g0, t = 0; i0 < g1; i0 += kMr, ++t) {
        const int mr = static_cast<int>(std::min<std::size_t>(kMr, g1 - i0));
        const std::uint32_t* ap[kMr];
        const float* ao[kMr];
        const float* ae[kMr];
        float* op[kMr];
        for (int i = 0; i < mr; ++i) {
          const std::size_t q = (i0 + i) * row + l * nb;
          ap[i] = lanes + q;
          if (split != nullptr) ao[i] = split + q, ae[i] = split + m * row + q;
          op[i] = out + (i0 + i) * ldo + col0;
        }
        if (split == nullptr) {
          dispatch(mr, groups, [&](auto MR, auto G) { lane_tile<MR(), G()>(ap, wp, nb, n, stack + t * kTileStack, op, cols); });
          continue;
        }
        for (int h = 0; 2 * h < groups; ++h) {  // the FMA form: 6 × 32 tiles (lane_tile_fma)
          float* oh[kMr];
          for (int i = 0; i < mr; ++i) oh[i] = op[i] + 32 * h;
          float* sh = stack + t * kTileStack + static_cast<std::size_t>(h) * (kTileStack / 2);
          dispatch(mr, std::min(2, groups - 2 * h), [&](auto MR, auto G) {
            if constexpr (G() <= 2) lane_tile_fma<MR(), G()>(ao, ae, wp + 32 * h, groups, nb, n, sh, oh, cols + 2 * h);
          });
        }
      }
    }
  }
}

}  // namespace dsv4::kernels::bf16_detail

#else  // not compiled for this target: never dispatched to
#include "util/error.h"
namespace dsv4::kernels::bf16_detail {
void lane_major_acts_avx512(const Bf16Acts&, std::size_t, std::size_t, std::uint32_t*) {
  fail("bf16_gemm: this build has no AVX-512 lane-major path");
}
std::uint32_t* lane_panel_buffer(std::size_t) { fail("bf16_gemm: this build has no AVX-512 lane-major path"); }
void lane_panel_group_avx512(const std::uint16_t* const*, std::size_t, std::size_t, int, int, std::uint32_t*) {
  fail("bf16_gemm: this build has no AVX-512 lane-major path");
}
void lane_panel_gemm_avx512(const Bf16Acts&, const std::uint32_t*, const float*, const std::uint32_t*, std::size_t,
                            std::size_t, float*, std::size_t) {
  fail("bf16_gemm: this build has no AVX-512 lane-major path");
}
void lane_split_f32(const std::uint32_t*, std::size_t, std::size_t, std::size_t, float*) {
  fail("bf16_gemm: this build has no AVX-512 lane-major path");
}
}  // namespace dsv4::kernels::bf16_detail
#endif
