// Dispatch, argument checks and the work split of the fast attention kernels (attention_fast.h).
#include "kernels/attention_fast.h"

#include <cstdlib>
#include <string_view>

#include "kernels/attention_fast_isa.h"
#include "util/cpu_features.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4::kernels {

SimdPath best_simd_path() {
  static const SimdPath path = [] {
    const CpuFeatures& f = cpu_features();
    SimdPath p = SimdPath::kScalar;
#if defined(__x86_64__) || defined(__i386__)
    if (f.avx2 && f.fma) p = SimdPath::kAvx2;
    if (f.avx512f) p = SimdPath::kAvx512;
#else
    (void)f;
#endif
    if (const char* env = std::getenv("DSV4_ISA")) {
      const std::string_view v(env);
      if (v == "scalar") p = SimdPath::kScalar;
      else if (v == "avx2" && p == SimdPath::kAvx512) p = SimdPath::kAvx2;
    }
    return p;
  }();
  return path;
}

const char* simd_path_name(SimdPath p) {
  switch (p) {
    case SimdPath::kScalar: return "scalar";
    case SimdPath::kAvx2: return "avx2";
    case SimdPath::kAvx512: return "avx512";
  }
  return "?";
}


void sparse_attn_fast(std::span<const float> q, const KvRows& kv, std::span<const float> sink,
                      std::span<const std::int32_t> idx, float scale, const FastAttnShape& sh,
                      std::span<float> out, ThreadPool* pool, SimdPath path) {
  const std::size_t S = sh.queries, H = sh.heads, D = sh.dim, K = sh.slots;
  if (q.size() != S * H * D) fail("sparse_attn_fast: q has {} elements, expected {}x{}x{}", q.size(), S, H, D);
  if (sink.size() != H) fail("sparse_attn_fast: sink has {} elements, expected {}", sink.size(), H);
  if (idx.size() != S * K) fail("sparse_attn_fast: idx has {} elements, expected {}x{}", idx.size(), S, K);
  if (out.size() != S * H * D) fail("sparse_attn_fast: out has {} elements, expected {}", out.size(), S * H * D);
  if ((kv.na > 0 && kv.a == nullptr) || (kv.nb > 0 && kv.b == nullptr)) fail("sparse_attn_fast: null kv rows");
  for (std::int32_t i : idx)
    if (i < -1 || (i >= 0 && static_cast<std::size_t>(i) >= kv.rows()))
      fail("sparse_attn_fast: slot index {} out of range [-1, {})", i, kv.rows());
  const std::size_t items = S * ((H + 3) / 4);
  parallel_for(pool, items, [&](std::size_t i0, std::size_t i1) {
    switch (path) {
      case SimdPath::kAvx512:
        return attn_detail::sparse_attn_items_avx512(q.data(), kv, sink.data(), idx.data(), scale, sh, out.data(), i0, i1);
      case SimdPath::kAvx2:
        return attn_detail::sparse_attn_items_avx2(q.data(), kv, sink.data(), idx.data(), scale, sh, out.data(), i0, i1);
      case SimdPath::kScalar:
        return attn_detail::sparse_attn_items_scalar(q.data(), kv, sink.data(), idx.data(), scale, sh, out.data(), i0, i1);
    }
  });
}

void index_scores_fast(std::span<const float> q, std::span<const float> w, std::span<const std::uint16_t> K,
                       std::span<const std::int64_t> visible, std::span<const std::uint8_t> cand,
                       const IndexScoreShape& sh, std::span<float> I, ThreadPool* pool, SimdPath path) {
  const std::size_t S = sh.queries, nh = sh.heads, hd = sh.dim, T = sh.keys;
  if (q.size() != S * nh * hd) fail("index_scores_fast: q has {} elements, expected {}x{}x{}", q.size(), S, nh, hd);
  if (w.size() != S * nh) fail("index_scores_fast: w has {} elements, expected {}x{}", w.size(), S, nh);
  if (K.size() < T * hd) fail("index_scores_fast: K has {} elements, expected at least {}x{}", K.size(), T, hd);
  if (visible.size() != S) fail("index_scores_fast: {} visible counts for {} queries", visible.size(), S);
  if (!cand.empty() && cand.size() != S * T) fail("index_scores_fast: candidate mask has {} entries, expected {}x{}", cand.size(), S, T);
  if (I.size() != S * T) fail("index_scores_fast: I has {} elements, expected {}x{}", I.size(), S, T);
  if (hd % 2 != 0) fail("index_scores_fast: head dim {} is odd (the kernel reads key elements in pairs)", hd);
  const std::uint8_t* cm = cand.empty() ? nullptr : cand.data();
  // Each query transposed to [hd][hp] with its heads padded to a multiple of 16 (zero q and w),
  // so the kernels put heads in the lanes; done once per call, outside the O(S·T) loop.
  const std::size_t hp = (nh + 15) / 16 * 16;
  ScratchFrame frame;
  const std::span<float> qt = frame.zeros<float>(S * hd * hp), wp = frame.zeros<float>(S * hp);
  parallel_for(pool, S, [&](std::size_t s0, std::size_t s1) {
    for (std::size_t s = s0; s < s1; ++s)
      for (std::size_t h = 0; h < nh; ++h) {
        wp[s * hp + h] = w[s * nh + h];
        const float* src = q.data() + (s * nh + h) * hd;
        float* dst = qt.data() + s * hd * hp + h;
        for (std::size_t d = 0; d < hd; ++d) dst[d * hp] = src[d];
      }
  });
  const std::size_t blocks = (T + 63) / 64;
  parallel_for(pool, blocks * S, [&](std::size_t i0, std::size_t i1) {
    switch (path) {
      case SimdPath::kAvx512:
        return attn_detail::index_score_items_avx512(qt.data(), wp.data(), K.data(), visible.data(), cm, sh, I.data(), i0, i1);
      case SimdPath::kAvx2:
        return attn_detail::index_score_items_avx2(qt.data(), wp.data(), K.data(), visible.data(), cm, sh, I.data(), i0, i1);
      case SimdPath::kScalar:
        return attn_detail::index_score_items_scalar(qt.data(), wp.data(), K.data(), visible.data(), cm, sh, I.data(), i0, i1);
    }
  });
}

}  // namespace dsv4::kernels
