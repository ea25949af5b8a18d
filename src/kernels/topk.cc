// Top-k with lowest-index ties and candidate blocks (§6.8). See topk.h.
#include "kernels/topk.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/fp32_ops.h"
#include "util/error.h"
#include "util/scratch_arena.h"
#include "util/thread_pool.h"

namespace dsv4::kernels {
namespace {

// The rank of a value as an unsigned key: a larger value has a larger key, +0 and −0 share one,
// and NaN has the smallest (0). One entry ranks before another when its key is larger, or equal
// with a lower index.
inline std::uint32_t rank_key(float x) {
  if (x != x) return 0;
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x == 0.0f ? 0.0f : x);
  return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);  // −inf ↦ 0x007FFFFF > 0
}

// The k indices that rank first, in rank order, into out — the same list as a partial sort
// in that order, found in O(n + k log k): the k-th largest key T by a histogram of the keys'
// top 11 bits and a selection inside T's bucket; then every index with a key above T and the
// lowest-indexed ones equal to T (a scan in ascending index), sorted by (key desc, index asc).
void topk_row(const float* v, std::size_t n, std::size_t k, std::int64_t* out) {
  if (k == 0) return;
  ScratchFrame frame;
  const std::span<std::uint32_t> key = frame.uninit<std::uint32_t>(n);
  constexpr int kBits = 11;
  const std::span<std::uint32_t> hist = frame.zeros<std::uint32_t>(std::size_t{1} << kBits);
  for (std::size_t i = 0; i < n; ++i) {
    key[i] = rank_key(v[i]);
    ++hist[key[i] >> (32 - kBits)];
  }
  std::size_t above = 0, bucket = hist.size();  // keys in buckets above `bucket`
  while (above + hist[bucket - 1] < k) above += hist[--bucket];
  --bucket;  // the bucket holding the k-th largest key
  const std::span<std::uint32_t> in_bucket = frame.uninit<std::uint32_t>(hist[bucket]);
  std::size_t m = 0;
  for (std::size_t i = 0; i < n; ++i)
    if ((key[i] >> (32 - kBits)) == bucket) in_bucket[m++] = key[i];
  const std::size_t need = k - above;  // 1 ≤ need ≤ m
  std::nth_element(in_bucket.begin(), in_bucket.begin() + static_cast<std::ptrdiff_t>(need - 1), in_bucket.end(),
                   std::greater<>());
  const std::uint32_t t = in_bucket[need - 1];
  // Keys above t: every key of the higher buckets, and those of t's bucket that nth_element
  // placed before it (the ones after it are ≤ t).
  std::size_t greater = above;
  for (std::size_t i = 0; i + 1 < need; ++i) greater += in_bucket[i] > t;
  // (key, index) packed so that one descending sort is the rank order: index complemented.
  const std::span<std::uint64_t> sel = frame.uninit<std::uint64_t>(k);
  std::size_t equal_left = k - greater, j = 0;
  for (std::size_t i = 0; i < n && j < k; ++i)
    if (key[i] > t || (key[i] == t && equal_left > 0 && equal_left--))
      sel[j++] = (std::uint64_t{key[i]} << 32) | (0xFFFFFFFFu - static_cast<std::uint32_t>(i));
  std::sort(sel.begin(), sel.end(), std::greater<>());
  for (std::size_t i = 0; i < k; ++i) out[i] = 0xFFFFFFFFu - static_cast<std::uint32_t>(sel[i] & 0xFFFFFFFFu);
}

}  // namespace

void topk_lowest_index(std::span<const float> values, std::size_t rows, std::size_t n,
                       std::size_t k, std::span<std::int64_t> out, ThreadPool* pool) {
  if (values.size() != rows * n)
    fail("topk_lowest_index: values has {} elements, expected {}x{}", values.size(), rows, n);
  if (k > n) fail("topk_lowest_index: k = {} exceeds the {} values per row", k, n);
  if (out.size() != rows * k) fail("topk_lowest_index: out has {} elements, expected {}x{}", out.size(), rows, k);
  if (n > 0xFFFFFFFFu) fail("topk_lowest_index: rows of {} values (at most 2^32 − 1)", n);
  auto some = [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) topk_row(values.data() + r * n, n, k, out.data() + r * k);
  };
  parallel_for(pool, rows, some);
}

void select_candidate_blocks(std::span<const float> scores, std::size_t rows, std::size_t t,
                             std::span<const std::int64_t> visible, std::size_t topk_blocks,
                             std::size_t bs, std::span<std::uint8_t> mask) {
  if (bs == 0) fail("select_candidate_blocks: block size 0");
  if (scores.size() != rows * t)
    fail("select_candidate_blocks: I has {} elements, expected {}x{}", scores.size(), rows, t);
  if (visible.size() != rows)
    fail("select_candidate_blocks: {} visible counts for {} rows", visible.size(), rows);
  if (mask.size() != rows * t)
    fail("select_candidate_blocks: mask has {} elements, expected {}x{}", mask.size(), rows, t);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::size_t nb = (t + bs - 1) / bs;
  const std::size_t kb = std::min(topk_blocks, nb);
  ScratchFrame frame;
  const std::span<float> block = frame.zeros<float>(nb);
  const std::span<std::int64_t> chosen = frame.zeros<std::int64_t>(kb);
  const std::span<std::uint8_t> keep = frame.zeros<std::uint8_t>(nb);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int64_t c = visible[r];
    if (c < 0 || static_cast<std::size_t>(c) > t)
      fail("select_candidate_blocks: visible count {} outside [0, {}]", c, t);
    const float* row = scores.data() + r * t;
    for (std::size_t b = 0; b < nb; ++b) {
      float m = -kInf;  // the −inf padding never wins a max
      for (std::size_t i = b * bs; i < std::min(t, (b + 1) * bs); ++i) m = max_nan(m, row[i]);
      block[b] = m;
    }
    if (c > 0) block[static_cast<std::size_t>(c - 1) / bs] = kInf;
    topk_row(block.data(), nb, kb, chosen.data());
    std::fill(keep.begin(), keep.end(), 0);
    for (std::int64_t b : chosen) keep[static_cast<std::size_t>(b)] = block[static_cast<std::size_t>(b)] > -kInf;
    for (std::size_t i = 0; i < t; ++i) mask[r * t + i] = keep[i / bs];
  }
}

}  // namespace dsv4::kernels
