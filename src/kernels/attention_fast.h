#pragma once
// Fast-numerics attention kernels: sparse attention over a slot list (the fast counterpart of
// sparse_attention.h) and the indexer's scores over compressed keys (spec §6.7 step 5).
//
// Both are defined by lane-wise fp32 arithmetic on 16 lanes (kernels/simd16.h), so the AVX-512,
// AVX2 and scalar builds give the same bits, and by a per-output order that does not depend on
// how many queries, keys or threads a call has:
//
//   dot(q, k)  canonical 16-lane dot: lane l accumulates q[d]·k[d] for d ≡ l (mod 16), ascending
//              d, with FMAs from +0 (D is padded with zeros to a multiple of 16); the 16 lanes are
//              then summed by the halving tree (i, i+8) → (i, i+4) → (i, i+2) → (i, i+1).
//
// Sparse attention, per (query, head), over the query's non-empty slots j in list order:
//   s_j = fp32(dot(q, kv_j) · scale);  μ = max_j s_j;  p_j = exp_fast(s_j − μ)
//   l = Σ_j p_j (fp32, ascending j) + exp_fast(sink − μ)
//   o[d] = bf16( (Σ_j bf16(p_j) · kv_j[d], fp32 FMAs in ascending j) / l )
// A query with no non-empty slot gets +0. Unlike the strict kernel there is no 64-slot block
// partition (nothing here depends on where a list would be cut) and an empty slot contributes
// nothing at all. Because the compact slot list of a position is the same in a prefill, a decode
// step and a chunk (§16.4), so are its outputs.
//
// Indexer scores, per (query s, key t):
//   I[s, t] = bf16( Σ_h z_h ) (fp32, ascending h from +0),  z_h = bf16( max(bf16(e_h), 0) · w_sh )
//   e_h = the sequential dot: fp32 FMAs acc = q_sh[d]·K_t[d] + acc over ascending d from +0
// and −inf where t ≥ visible[s] or (a candidate mask is given and) cand[s·T + t] = 0. The scores
// use the sequential dot rather than the canonical one because the kernel puts 16 heads in the
// lanes (every FMA useful, no horizontal sums), which is twice as fast as 16 keys with a lane
// reduction per (head, key); the indexer's score is the hot loop of long prefills.
#include <cstddef>
#include <cstdint>
#include <span>

#include "util/thread_pool.h"

namespace dsv4::kernels {

// kv rows addressed by slot: slot i < na is a[i], slot i ≥ na is b[i − na] (the window rows and
// the compressed cache, without copying the latter). Rows have D bf16 values, stored as their
// bit patterns as the caches hold them (they are bf16 values, so nothing is rounded).
struct KvRows {
  const std::uint16_t* a = nullptr;
  std::size_t na = 0;
  const std::uint16_t* b = nullptr;
  std::size_t nb = 0;
  const std::uint16_t* row(std::size_t i, std::size_t D) const { return i < na ? a + i * D : b + (i - na) * D; }
  std::size_t rows() const { return na + nb; }
};

enum class SimdPath : std::uint8_t { kScalar, kAvx2, kAvx512 };
// The widest path this CPU runs (DSV4_ISA=scalar|avx2 lowers it, as for bf16_gemm).
SimdPath best_simd_path();
const char* simd_path_name(SimdPath p);

struct FastAttnShape {
  std::size_t queries = 0;  // S
  std::size_t heads = 0;    // H
  std::size_t dim = 0;      // D
  std::size_t slots = 0;    // K per query
};

// q [S, H, D], sink [H], idx [S, K] (−1 = empty) → out [S, H, D] (bf16 values). Work is split
// over (query, group of 4 heads) items on `pool` (may be null). Throws on size mismatches and
// slot indices outside [−1, kv.rows()).
void sparse_attn_fast(std::span<const float> q, const KvRows& kv, std::span<const float> sink,
                      std::span<const std::int32_t> idx, float scale, const FastAttnShape& shape,
                      std::span<float> out, ThreadPool* pool, SimdPath path = best_simd_path());

struct IndexScoreShape {
  std::size_t queries = 0;  // S
  std::size_t heads = 0;    // nh
  std::size_t dim = 0;      // hd
  std::size_t keys = 0;     // T
};

// q [S, nh, hd], w [S, nh], K [T, hd] (bf16 bit patterns: the index-key cache), visible [S],
// cand (empty or [S, T]) → I [S, T]. Work is
// split over (block of 64 keys, query) items, key-block major so a block stays in cache while
// every query of the call scores it.
void index_scores_fast(std::span<const float> q, std::span<const float> w, std::span<const std::uint16_t> K,
                       std::span<const std::int64_t> visible, std::span<const std::uint8_t> cand,
                       const IndexScoreShape& shape, std::span<float> I, ThreadPool* pool,
                       SimdPath path = best_simd_path());

}  // namespace dsv4::kernels
