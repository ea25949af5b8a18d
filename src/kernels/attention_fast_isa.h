#pragma once
// Internals shared by the instruction-set builds of the fast attention kernels (see
// attention_fast.h for the contract): the per-target item loops, each in its own translation unit.
#include <cstddef>
#include <cstdint>

#include "kernels/attention_fast.h"

namespace dsv4::kernels::attn_detail {

#define DSV4_ATTN_FAST_DECL(t)                                                                          \
  void sparse_attn_items_##t(const float* q, const KvRows& kv, const float* sink, const std::int32_t* idx, \
                             float scale, const FastAttnShape& sh, float* out, std::size_t i0, std::size_t i1); \
  void index_score_items_##t(const float* qt, const float* wp, const std::uint16_t* K, const std::int64_t* visible,  \
                             const std::uint8_t* cand, const IndexScoreShape& sh, float* I, std::size_t i0, \
                             std::size_t i1);
DSV4_ATTN_FAST_DECL(scalar)
DSV4_ATTN_FAST_DECL(avx2)
DSV4_ATTN_FAST_DECL(avx512)
#undef DSV4_ATTN_FAST_DECL

}  // namespace dsv4::kernels::attn_detail
