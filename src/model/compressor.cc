// See compressor.h.
#include "model/compressor.h"

#include <algorithm>
#include <cmath>

#include "kernels/exact_sum.h"
#include "kernels/fp32_ops.h"
#include "kernels/rmsnorm.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4 {

void compress(const ForwardContext& ctx, const LayerWeights& w, LayerCache& cache, std::span<const float> x,
              std::size_t S, std::int64_t start_pos, CompressorOutput& out) {
  const ModelConfig& c = ctx.cfg;
  const auto D = static_cast<std::size_t>(c.head_dim);
  const std::int64_t r = w.role->ratio;
  out.latent.clear();
  out.groups = 0;
  out.first_group = 0;
  if (r == 1) {
    out.latent.resize(S * D);
    kernels::linear(x, S, w.cmp_wkv, out.latent, ctx.lin());
    kernels::rmsnorm(out.latent, w.cmp_norm, c.norm_eps, out.latent, S);
    out.groups = S;
    out.first_group = start_pos;
    return;
  }
  auto lin = ctx.lin();
  lin.f32_output = true;
  ScratchFrame frame;
  const std::span<float> kv = frame.zeros<float>(S * D), sc = frame.zeros<float>(S * D);
  kernels::linear(x, S, w.cmp_wkv, kv, lin);
  kernels::linear(x, S, w.cmp_wgate, sc, lin);
  const std::int64_t n_before = start_pos / r, n_after = (start_pos + static_cast<std::int64_t>(S)) / r;
  const auto tail = static_cast<std::size_t>(start_pos - n_before * r);
  const auto ru = static_cast<std::size_t>(r);
  // Rows for positions n_before·r .. start_pos + S − 1: the carried tail, then this call.
  const std::span<float> all_kv = frame.uninit<float>((tail + S) * D), all_sc = frame.uninit<float>((tail + S) * D);
  std::copy_n(cache.kv_state.begin(), tail * D, all_kv.begin());
  std::copy_n(cache.score_state.begin(), tail * D, all_sc.begin());
  std::copy(kv.begin(), kv.end(), all_kv.begin() + static_cast<std::ptrdiff_t>(tail * D));
  std::copy(sc.begin(), sc.end(), all_sc.begin() + static_cast<std::ptrdiff_t>(tail * D));
  const auto G = static_cast<std::size_t>(n_after - n_before);
  const std::size_t rest = all_kv.size() / D - G * ru;
  // The new tail (slots not rewritten keep old values; they are never read before rewritten).
  std::copy_n(all_kv.begin() + static_cast<std::ptrdiff_t>(G * ru * D), rest * D, cache.kv_state.begin());
  std::copy_n(all_sc.begin() + static_cast<std::ptrdiff_t>(G * ru * D), rest * D, cache.score_state.begin());
  out.first_group = n_before;
  out.groups = G;
  if (G == 0) return;
  out.latent.resize(G * D);
  const std::span<double> e = frame.zeros<double>(ru), terms = frame.zeros<double>(ru);
  for (std::size_t g = 0; g < G; ++g) {
    for (std::size_t d = 0; d < D; ++d) {
      double m = -INFINITY;
      for (std::size_t t = 0; t < ru; ++t) m = std::max(m, static_cast<double>(all_sc[(g * ru + t) * D + d]));
      double sum = 0.0;
      for (std::size_t t = 0; t < ru; ++t) {
        e[t] = std::exp(static_cast<double>(all_sc[(g * ru + t) * D + d]) - m);
        sum += e[t];
      }
      for (std::size_t t = 0; t < ru; ++t) {
        const auto wt = static_cast<float>(e[t] / sum);
        terms[t] = kernels::mul32(all_kv[(g * ru + t) * D + d], wt);
      }
      out.latent[g * D + d] = round_bf16(kernels::exact_sum_f32(terms));
    }
  }
  kernels::rmsnorm(out.latent, w.cmp_norm, c.norm_eps, out.latent, G);
}

}  // namespace dsv4
