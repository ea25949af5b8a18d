#pragma once
// Top-k with deterministic ties — rule 6 of docs/strict-numerics.md and spec §6.8, the oracle's
// ops.topk_lowest_index / select_candidate_blocks (tests/oracle/dsv4_oracle/ops.py).
//
// topk_lowest_index: the k largest values, ties broken by the LOWEST index, returned in
// descending value order with equal values in ascending index order (what a stable sort of the
// negated values gives). +0 and −0 compare equal; NaN ranks below everything (−inf included),
// NaNs among themselves by index. Callers that need another order (the indexer: ascending
// position) sort the result.
//
// select_candidate_blocks (§6.8), per row of I [.., T] with visible count c:
//   1. pad with −inf to a multiple of bs; block score = max of its bs values (NaN-propagating)
//   2. the block of the newest visible position, (c − 1) / bs, scores +inf (c = 0: none forced)
//   3. the top min(topk_blocks, nb) blocks (ties by lowest block index) are kept if their score
//      is > −inf (filler blocks of −inf, and NaN scores, are dropped)
//   4. each kept block's flag repeated bs times, cut to T.
#include <cstddef>
#include <cstdint>
#include <span>

namespace dsv4 {
class ThreadPool;
}

namespace dsv4::kernels {

// values [rows, n] → out [rows, k] indices into each row, in rank order; k ≤ n. Rows are split
// over `pool` when one is given (each row's result is its own).
void topk_lowest_index(std::span<const float> values, std::size_t rows, std::size_t n,
                       std::size_t k, std::span<std::int64_t> out, ThreadPool* pool = nullptr);

// I [rows, T], visible [rows] (each in [0, T]) → mask [rows, T] (1 = candidate position).
void select_candidate_blocks(std::span<const float> scores, std::size_t rows, std::size_t t,
                             std::span<const std::int64_t> visible, std::size_t topk_blocks,
                             std::size_t bs, std::span<std::uint8_t> mask);

}  // namespace dsv4::kernels
