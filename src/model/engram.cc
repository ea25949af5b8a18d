// See engram.h.
#include "model/engram.h"

#include <cmath>

#include "io/config.h"
#include "kernels/exact_sum.h"
#include "kernels/fp32_ops.h"
#include "kernels/strict_dot.h"
#include "kernels/transcendental.h"
#include "model/numpy_pcg64.h"
#include "numeric/bf16.h"
#include "numeric/e4m3.h"
#include "numeric/e8m0.h"
#include "util/error.h"
#include "util/scratch_arena.h"
#include "util/thread_pool.h"

namespace dsv4 {

std::vector<std::int64_t> engram_hash_multipliers(const ModelConfig& c, std::int64_t layer_id) {
  const std::int64_t bound =
      std::max<std::int64_t>(1, std::numeric_limits<std::int64_t>::max() / c.engram_compressed_vocab_size / 2);
  auto v = numpy_integers(10007ull * static_cast<std::uint64_t>(layer_id), bound,
                          static_cast<std::size_t>(c.engram_max_ngram_size));
  for (auto& m : v) m = 2 * m + 1;
  return v;
}

EngramHasher::EngramHasher(const ModelConfig& c, const EngramTokenMap& map)
    : map_(map), layout_(engram_layout(c)) {
  if (map.compressed_vocab_size != c.engram_compressed_vocab_size)
    fail("the tokenizer's Engram token map has {} compressed ids, the config says "
         "engram_compressed_vocab_size = {} (spec §8.2)",
         map.compressed_vocab_size, c.engram_compressed_vocab_size);
  for (std::int64_t L : c.engram_layer_ids) mult_.push_back(engram_hash_multipliers(c, L));
  pad_ = map.pad_compressed(static_cast<std::int32_t>(c.engram_pad_id));
  max_ngram_ = static_cast<std::size_t>(c.engram_max_ngram_size);
  n_heads_ = static_cast<std::size_t>(c.engram_n_heads);
  cols_ = (max_ngram_ - 1) * n_heads_;
}

void EngramHasher::hash(std::vector<std::int64_t>& history, std::span<const std::int64_t> ids,
                        std::int64_t start_pos, std::span<const std::uint8_t> mask,
                        std::span<std::int64_t> out) const {
  const std::size_t S = ids.size();
  if (!mask.empty() && mask.size() != S) fail("Engram hash: mask has {} entries for {} ids", mask.size(), S);
  if (start_pos < 0 || static_cast<std::size_t>(start_pos) > history.size())
    fail("Engram hash: start_pos {} but only {} positions are known", start_pos, history.size());
  if (out.size() != S * layers() * cols_) fail("Engram hash: output has {} entries, expected {}", out.size(), S * layers() * cols_);
  // Step 1: compressed ids (DEAD for image tokens), written into the history first so that
  // every lookup below sees the call's own earlier tokens.
  ScratchFrame frame;
  const std::span<std::int64_t> c = frame.uninit<std::int64_t>(S);
  for (std::size_t i = 0; i < S; ++i) c[i] = (mask.empty() || mask[i]) ? map_.lookup(ids[i]) : -1;
  history.resize(static_cast<std::size_t>(start_pos));
  history.insert(history.end(), c.begin(), c.end());
  const std::span<std::int64_t> tok = frame.zeros<std::int64_t>(max_ngram_);
  for (std::size_t i = 0; i < S; ++i) {
    const std::int64_t p = start_pos + static_cast<std::int64_t>(i);
    // Step 2: shifted tokens with cumulative blocking (a position before 0 or a DEAD token
    // blocks every longer n-gram too).
    bool blocked = false;
    for (std::size_t s = 0; s < max_ngram_; ++s) {
      const std::int64_t at = std::max<std::int64_t>(p - static_cast<std::int64_t>(s), 0);
      const std::int64_t src = history[static_cast<std::size_t>(at)];
      blocked = blocked || p < static_cast<std::int64_t>(s) || src == -1;
      tok[s] = blocked ? pad_ : src;
    }
    // Step 3: multiply, XOR-roll, reduce modulo each head's prime, add the column's base.
    for (std::size_t l = 0; l < layers(); ++l) {
      const auto& lay = layout_.layers[l];
      std::int64_t roll = tok[0] * mult_[l][0];
      for (std::size_t n = 2; n <= max_ngram_; ++n) {
        roll ^= tok[n - 1] * mult_[l][n - 1];
        for (std::size_t h = 0; h < n_heads_; ++h) {
          const std::size_t col = (n - 2) * n_heads_ + h;
          out[(i * layers() + l) * cols_ + col] = roll % lay.primes[col] + lay.offsets[col];
        }
      }
    }
  }
}

namespace {

using kernels::mul32;

// The fp32 rounding of the exact mean of exact float64 terms (strict.smean).
float mean_exact(std::span<const double> t) { return kernels::exact_mean_f32(t); }

}  // namespace

void engram_forward(std::span<const float> x, std::span<const std::int64_t> hashes,
                    std::span<const std::uint8_t> mask, const EngramWeights& w,
                    const ModelConfig& c, const kernels::LinearOptions& lin, std::size_t S,
                    std::span<float> out, std::span<float> gate_out) {
  const auto hc = static_cast<std::size_t>(c.hc_mult), dim = static_cast<std::size_t>(c.dim);
  const auto hd = static_cast<std::size_t>(c.engram_head_dim);
  const std::size_t cols = static_cast<std::size_t>((c.engram_max_ngram_size - 1) * c.engram_n_heads);
  if (x.size() != S * hc * dim || out.size() != x.size() || hashes.size() != S * cols)
    fail("engram_forward: shapes do not match {} tokens", S);
  // Step 1: E = bf16(e4m3 · e8m0) of the 24 rows, flattened in column order.
  ScratchFrame frame;
  const std::span<float> E = frame.uninit<float>(S * cols * hd);
  const std::size_t nsc = hd / 32;
  for (std::size_t i = 0; i < S * cols; ++i)
    if (hashes[i] < 0 || static_cast<std::uint64_t>(hashes[i]) >= w.rows)
      fail("Engram row index {} outside the table's {} rows", hashes[i], w.rows);
  // Tokens are independent from here on: the row gathers and the per-token steps are split over
  // the pool by tokens (each token's arithmetic is the same whatever the split).
  ThreadPool* pool = S * dim >= kParallelElements ? lin.pool : nullptr;
  parallel_for(pool, S * cols, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      const auto row = static_cast<std::size_t>(hashes[i]);
      const std::uint8_t* q = w.table.data() + row * hd;
      const std::uint8_t* s = w.table_scale.data() + row * nsc;
      for (std::size_t k = 0; k < hd; ++k)
        E[i * hd + k] = round_bf16(static_cast<float>(static_cast<double>(e4m3_to_f32(q[k])) *
                                                      static_cast<double>(e8m0_to_f32(s[k / 32]))));
    }
  });
  // Step 2: kv = wkv(E) (FP8 linear) → key [hc, dim] per token (copy-major), value [dim].
  const std::span<float> kv = frame.zeros<float>(S * (hc + 1) * dim);
  kernels::linear(E, S, w.wkv, kv, lin);
  const float eps = 1e-20f;
  const float scale = static_cast<float>(std::pow(static_cast<double>(dim), -0.5));
  parallel_for(pool, S, [&](std::size_t t0, std::size_t t1) {
    ScratchFrame tf;
    const std::span<double> terms = tf.zeros<double>(dim);
    for (std::size_t t = t0; t < t1; ++t) {
      const float* key0 = kv.data() + t * (hc + 1) * dim;
      const float* value = key0 + hc * dim;
      const bool open = mask.empty() || mask[t] != 0;
      for (std::size_t ci = 0; ci < hc; ++ci) {
        const float* h = x.data() + (t * hc + ci) * dim;
        const float* key = key0 + ci * dim;
        const float* wg = w.wgt.data() + ci * dim;
        // Step 4: per-copy norms; the fp32 squares (h·h, key·key) rounded as the reference does.
        for (std::size_t d = 0; d < dim; ++d) terms[d] = mul32(h[d], h[d]);
        const float r_h = kernels::strict_rsqrt(mean_exact(terms) + eps);
        for (std::size_t d = 0; d < dim; ++d) terms[d] = mul32(key[d], key[d]);
        const float r_k = kernels::strict_rsqrt(mean_exact(terms) + eps);
        const float rstd = mul32(r_h, r_k);
        for (std::size_t d = 0; d < dim; ++d) terms[d] = mul32(mul32(h[d], wg[d]), key[d]);
        const float dsum = kernels::exact_sum_f32(terms);
        const float dot = mul32(mul32(dsum, rstd), scale);
        // Step 5: signed square root, sigmoid; image tokens get gate 0.
        const float mag = std::max(std::fabs(dot), 1e-6f);
        const float sg = (dot > 0 ? 1.0f : dot < 0 ? -1.0f : 0.0f) * kernels::strict_sqrt(mag);
        float gate = kernels::strict_sigmoid(sg);
        if (!open) gate = 0.0f;
        if (!gate_out.empty()) gate_out[t * hc + ci] = gate;
        // Step 6: out = bf16(h + gate · value).
        float* o = out.data() + (t * hc + ci) * dim;
        for (std::size_t d = 0; d < dim; ++d) o[d] = round_bf16(h[d] + mul32(gate, value[d]));
      }
    }
  });
}

}  // namespace dsv4
