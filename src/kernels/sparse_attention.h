#pragma once
// Sparse attention over an index slot list — spec §2.9, the oracle's ops.sparse_attn
// (tests/oracle/dsv4_oracle/ops.py).
//
// q [S, H, D] bf16, kv [N, D] bf16 (K = V, one shared head), sink [H] fp32, idx [S, K] int32
// (−1 = empty slot), scale fp32 → out [S, H, D] bf16. Online softmax over the slot list in
// blocks of 64 in list order (the partition changes the bits, §16.4). State per (query, head):
// μ = −1e30, l = 0, acc[D] = 0 (fp32). Per block, each op rounded once:
//   s_j   = fp32(Σ_d q·k_j) (exact dot); s_j = fp32(s_j · scale); empty slot → −inf
//   μ'    = max(μ, max_j s_j)                                  (NaN-propagating, as numpy)
//   α     = strict_exp(fp32(μ − μ')),  p_j = strict_exp(fp32(s_j − μ'))
//   l     = fp32(fp32(l · α) + Σ_j p_j)                        (Σ strict over the block)
//   acc_d = fp32(fp32(acc_d · α) + Σ_j bf16(p_j) · v_j[d])     (exact dot over the block)
// Finish: l = fp32(l + strict_exp(fp32(sink − μ))) (sink not scaled); o = bf16(fp32(acc / l)).
// A query whose slots are all empty gets +0 everywhere.
//
// An empty slot contributes the oracle's gathered row, kv[0] · 0 (a zero row for finite kv[0]),
// to the value sum with weight bf16(0); so a non-finite kv[0] makes rows with empty slots NaN
// exactly as in the oracle.
#include <cstddef>
#include <cstdint>
#include <span>

namespace dsv4::kernels {

inline constexpr std::size_t kAttnBlock = 64;

struct SparseAttnShape {
  std::size_t queries = 0;  // S
  std::size_t heads = 0;    // H
  std::size_t dim = 0;      // D
  std::size_t rows = 0;     // N (kv rows)
  std::size_t slots = 0;    // K (index slots per query)
};

// Throws dsv4::Error on size mismatches and on slot indices outside [−1, N).
void sparse_attn(std::span<const float> q, std::span<const float> kv, std::span<const float> sink,
                 std::span<const std::int32_t> idx, float scale, const SparseAttnShape& shape,
                 std::span<float> out);

}  // namespace dsv4::kernels
