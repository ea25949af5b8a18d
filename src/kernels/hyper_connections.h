#pragma once
// Hyper-connections — spec §2.10 and §5, the oracle's ops.hc_split_sinkhorn / hc_mixes / hc_pre /
// hc_post (tests/oracle/dsv4_oracle/ops.py). hc copies of the residual stream, mixes of
// (2 + hc)·hc values per token.
//
// Op splits (all fp32, every op rounded once, no FMA contraction, sums strict):
//   hc_split_sinkhorn (§2.10), per token:
//     pre_j  = fp32(strict_sigmoid(fp32(fp32(m_j·scale0) + base_j)) + eps)
//     post_j = fp32(2 · strict_sigmoid(fp32(fp32(m_{hc+j}·scale1) + base_{hc+j})))
//     c      = fp32(fp32(m_{2hc+·}·scale2) + base_{2hc+·}) as [hc, hc], row-major
//     row softmax: e = strict_exp(fp32(c − max_k c)); c = fp32(fp32(e / Σ_k e) + eps)
//     column normalise: c = fp32(c / fp32(Σ_r c + eps))
//     iters − 1 times: row normalise c = fp32(c / fp32(Σ_k c + eps)), then column normalise.
//   hc_mixes (§5.1): xf = X as [hc·D] (copy-major); r = strict_rsqrt(fp32(mean(xf²) +
//     fp32(norm_eps))); mixes = fp32(strict_dot(xf, fn_row) · r); then hc_split_sinkhorn.
//   hc_pre (§5.2): out_d = bf16(Σ_c pre[c]·X[c][d]) (exact products, one fp32 rounding).
//   hc_post (§5.3): S_jd = Σ_i comb[i][j]·R[i][d] (dot, one rounding), P = fp32(post[j]·y_d),
//     out[j][d] = bf16(fp32(P + S_jd)).
#include <cstddef>
#include <span>

namespace dsv4 {
class ThreadPool;
}

namespace dsv4::kernels {

struct HcParams {
  std::size_t hc = 4;   // copies of the residual stream
  int iters = 20;       // Sinkhorn iterations (the first is the softmax)
  double eps = 1e-6;    // hc_eps, cast to fp32
};

// mixes [T, (2+hc)·hc], scale [3], base [(2+hc)·hc] → pre [T, hc], post [T, hc],
// comb [T, hc, hc] (comb[r][k]; it ends column-normalised).
void hc_split_sinkhorn(std::span<const float> mixes, std::span<const float> scale,
                       std::span<const float> base, std::size_t tokens, const HcParams& p,
                       std::span<float> pre, std::span<float> post, std::span<float> comb);

// X [T, hc, D] (bf16 values), fn [(2+hc)·hc, hc·D] fp32 → (pre, post, comb) as above.
void hc_mixes(std::span<const float> x, std::span<const float> fn, std::span<const float> scale,
              std::span<const float> base, double norm_eps, std::size_t tokens, std::size_t dim,
              const HcParams& p, std::span<float> pre, std::span<float> post,
              std::span<float> comb);

// X [T, hc, D], pre [T, hc] → out [T, D] (bf16-valued).
void hc_pre(std::span<const float> x, std::span<const float> pre, std::size_t tokens,
            std::size_t hc, std::size_t dim, std::span<float> out);

// y [T, D], R [T, hc, D], post [T, hc], comb [T, hc, hc] → out [T, hc, D] (bf16-valued).
void hc_post(std::span<const float> y, std::span<const float> r, std::span<const float> post,
             std::span<const float> comb, std::size_t tokens, std::size_t hc, std::size_t dim,
             std::span<float> out);

// Fast numerics (§17: judged against the ops above). The same results, computed with fixed-order
// fp32 arithmetic instead of correctly rounded sums, and split over tokens on `pool` (null: this
// thread). Each token's arithmetic is one fixed sequence, so the bits depend neither on the
// thread count nor on which other tokens share the call:
//   hc_mixes_fast: Σ x² and each mix dot as exact double products over 16 double partial sums
//     (lane = index mod 16) joined by a halving tree, rounded once to fp32;
//     r = fp32(1/√(fp32(Σ/n) + eps)) in double; then the strict Sinkhorn (a few hundred
//     operations per token).
//   hc_pre_fast / hc_post_fast: the products are exact in double and summed in copy order in
//     double, then rounded once to fp32 — the strict result except when the exact sum lies within
//     a few double ulps of an fp32 rounding boundary.
void hc_mixes_fast(std::span<const float> x, std::span<const float> fn, std::span<const float> scale,
                   std::span<const float> base, double norm_eps, std::size_t tokens, std::size_t dim,
                   const HcParams& p, std::span<float> pre, std::span<float> post, std::span<float> comb,
                   ThreadPool* pool);
void hc_pre_fast(std::span<const float> x, std::span<const float> pre, std::size_t tokens, std::size_t hc,
                 std::size_t dim, std::span<float> out, ThreadPool* pool);
void hc_post_fast(std::span<const float> y, std::span<const float> r, std::span<const float> post,
                  std::span<const float> comb, std::size_t tokens, std::size_t hc, std::size_t dim,
                  std::span<float> out, ThreadPool* pool);

// X [T, hc, D] → out rows t·ldo + [0, D) = bf16(strict.smean over the hc copies), element by
// element (§4 step 7b: the DSpark target hiddens, written into their [T, targets · D] layout). Exactly strict_mean's bits in either numerics mode: the float64
// sums and the rounding decision of strict_mean run as element-wise passes over a row (the
// compiler vectorises them), and the rare elements the decision leaves open are redone by
// strict_mean itself. Split over tokens on `pool`.
void hc_copy_mean_bf16(std::span<const float> x, std::size_t tokens, std::size_t hc, std::size_t dim,
                       std::span<float> out, std::size_t ldo, ThreadPool* pool);

}  // namespace dsv4::kernels
