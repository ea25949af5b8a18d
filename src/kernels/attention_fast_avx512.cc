// The avx512 build of the fast attention kernels (attention_fast_impl.h on simd16.h).
#include "kernels/attention_fast_isa.h"

#if defined(__AVX512F__)
#define DSV4_SIMD16 2
#include "kernels/simd16.h"
#include "kernels/attention_fast_impl.h"

namespace dsv4::kernels::attn_detail {

void sparse_attn_items_avx512(const float* q, const KvRows& kv, const float* sink, const std::int32_t* idx,
                          float scale, const FastAttnShape& sh, float* out, std::size_t i0, std::size_t i1) {
  DSV4_SIMD16_NS::sparse_attn_items(q, kv, sink, idx, scale, sh, out, i0, i1);
}

void index_score_items_avx512(const float* qt, const float* wp, const std::uint16_t* K, const std::int64_t* visible,
                          const std::uint8_t* cand, const IndexScoreShape& sh, float* I, std::size_t i0,
                          std::size_t i1) {
  DSV4_SIMD16_NS::index_score_items(qt, wp, K, visible, cand, sh, I, i0, i1);
}

}  // namespace dsv4::kernels::attn_detail

#else  // not compiled for this target: never dispatched to (best_simd_path never picks it)
#include "util/error.h"

namespace dsv4::kernels::attn_detail {

void sparse_attn_items_avx512(const float*, const KvRows&, const float*, const std::int32_t*, float,
                          const FastAttnShape&, float*, std::size_t, std::size_t) {
  fail("sparse_attn_fast: this build has no avx512 path");
}
void index_score_items_avx512(const float*, const float*, const std::uint16_t*, const std::int64_t*, const std::uint8_t*,
                          const IndexScoreShape&, float*, std::size_t, std::size_t) {
  fail("index_scores_fast: this build has no avx512 path");
}

}  // namespace dsv4::kernels::attn_detail
#endif
