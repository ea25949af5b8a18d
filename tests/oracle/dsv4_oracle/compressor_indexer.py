"""The compressor (§6.4) and the indexer with its two-level candidate selection (§6.7, §6.8),
for one layer of one sequence, written from reference-spec.md. Used by attention.py.

Everything here works on ABSOLUTE positions so that one call may be a prefill at 0, a decode
step (S = 1) or a chunk at any start_pos (§16.1: the reference defines only the first two; the
chunk semantics below are the natural extension the engine follows):

- A compressed row j (group j) covers positions j·r .. j·r + r − 1 and is complete once
  position j·r + r − 1 has been processed. A call over positions start_pos .. start_pos+S−1
  completes groups start_pos // r .. (start_pos+S) // r − 1 (possibly none); a group that began
  in an earlier call takes its first tokens from the carried tail (kv_state / score_state, slot
  = position mod r, §6.4 decode form), so a group completes identically whatever the chunking.
- Query at absolute position p sees compressed rows j < c_p = (p + 1) // r (§6.7 step 6, the
  prefill form; the decode form c = T is the same number for S = 1).

Numerics: docs/strict-numerics.md; every split of a spec formula into reference ops is stated
where it happens.
"""

from __future__ import annotations

import numpy as np

from . import formats, ops, strict

F32 = np.float32
NEG_INF = F32(-np.inf)
# float64 exp as strict.py evaluates it (numpy's if it agrees with glibc, else math.exp).
_EXP64 = strict.exp64


# ------------------------------------------------------------------------------------------
# §6.4 Compressor
# ------------------------------------------------------------------------------------------

def _softmax_tokens(sc: np.ndarray) -> np.ndarray:
    """softmax over axis 1 (the r tokens of a group), per group and per dimension (§6.4).

    torch's softmax is ONE reference op, so (strict rule 1/3, "one double evaluation and one
    rounding" of a composite op) it is evaluated in float64 — max, exp(x − max), the sum over
    the r tokens, the division — and rounded once to fp32. [Decision: the spec does not split
    the softmax; we treat it like sigmoid/softplus, as one op.]"""
    x = sc.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    e = _EXP64(x - m)
    return strict.f32(e / e.sum(axis=1, keepdims=True))


def compressor_forward(layer, cache, x: np.ndarray, start_pos: int, cfg):
    """§6.4 Compressor(x, start_pos) of a kv-source layer, generalised to chunks.

    x: bf16 f32[S, dim] (the attention input, i.e. attn_norm's output). Returns
    (latent bf16 f32[G, head_dim] or None, first_group) where the G latents are groups
    first_group .. first_group + G − 1. Updates the ratio-r tail in `cache`.

    ratio 1: latent = compressor.norm(bf16 linear wkv(x)); one latent per token.
    ratio r ≥ 2: kv = x_f32 · wkv_f32ᵀ, sc = x_f32 · wgate_f32ᵀ (fp32 linears, weights promoted
    from bf16 at load, §2.6); per completed group and per dimension: w = softmax over its r
    tokens of sc; pooled = Σ_tokens kv·w, evaluated as the reference's two torch ops
    `(kv * w).sum(dim)`: an fp32 product (rounded) then an exact sum rounded once [decision:
    the op split]; latent = compressor.norm(bf16(pooled)).
    """
    r = layer.ratio
    S = x.shape[0]
    eps = cfg.norm_eps
    if r == 1:
        kv = ops.linear_bf16(x, layer.w("attn.compressor.wkv.weight"))
        return ops.rmsnorm(kv, layer.w("attn.compressor.norm.weight"), eps), start_pos

    kv = ops.linear_f32(x, layer.w("attn.compressor.wkv.weight"))
    sc = ops.linear_f32(x, layer.w("attn.compressor.wgate.weight"))
    n_before = start_pos // r                 # groups complete before this call
    n_after = (start_pos + S) // r            # groups complete after it
    tail = start_pos - n_before * r           # tokens of group n_before from earlier calls
    # Token rows for positions n_before·r .. start_pos+S−1: the carried tail (slots 0..tail−1,
    # slot = position mod r), then this call's tokens.
    all_kv = np.concatenate([cache.kv_state[:tail], kv], axis=0)
    all_sc = np.concatenate([cache.score_state[:tail], sc], axis=0)
    G = n_after - n_before
    # New tail: positions n_after·r .. start_pos+S−1 go to slots 0.. (their position mod r).
    # Slots not rewritten keep their old values (the reference's kv_state persists); they are
    # never read before being rewritten.
    rest = all_kv.shape[0] - G * r
    cache.kv_state[:rest] = all_kv[G * r:]
    cache.score_state[:rest] = all_sc[G * r:]
    if G == 0:
        return None, n_before
    gkv = all_kv[: G * r].reshape(G, r, -1)
    gsc = all_sc[: G * r].reshape(G, r, -1)
    w = _softmax_tokens(gsc)
    prod = (gkv * w).astype(F32)                               # fp32 products (RNE)
    pooled = strict.ssum(prod, axis=1)                          # exact sum, rounded once
    latent = ops.rmsnorm(formats.round_bf16(pooled), layer.w("attn.compressor.norm.weight"), eps)
    return latent, n_before


# ------------------------------------------------------------------------------------------
# §6.7 Indexer
# ------------------------------------------------------------------------------------------

def index_keys(layer, latent: np.ndarray, first_group: int, cfg, rope) -> np.ndarray:
    """§6.7 step 1: k = k_norm(wk(latent)) (bf16 linear, RMSNorm), rotated at the group
    positions j·r (§6.3 step 3, §16.3), FP4 QDQ (E8M0 scales, block 32). Input: the UN-rotated
    latents of groups first_group .. first_group + G − 1."""
    k = ops.linear_bf16(latent, layer.w("attn.indexer.wk.weight"))
    k = ops.rmsnorm(k, layer.w("attn.indexer.k_norm.weight"), cfg.norm_eps)
    gpos = (first_group + np.arange(latent.shape[0])) * layer.ratio
    k = ops.apply_rope(k, rope.cos[gpos], rope.sin[gpos])
    return formats.fp4_qdq_e8m0_b32(k)


def index_scores(layer, x: np.ndarray, qr: np.ndarray, K: np.ndarray, pos: np.ndarray, cfg,
                 rope) -> np.ndarray:
    """§6.7 steps 2–5: I[s, t] (bf16 f32[S, T]) for queries at absolute positions `pos`
    against index keys K (bf16 f32[T, index_head_dim]).

    q = indexer.wq_b(qr) (FP8 linear) → [S, nh, hd], rotated at the token positions, FP4 QDQ;
    w = bf16(weights_proj(x)) · (hd^−0.5 · nh^−0.5) → bf16 (the reference multiplies the bf16
    tensor by a Python scalar: fp32 opmath with the scalar as fp32, one bf16 rounding);
    score = bf16(Σ_d q·K) (bf16 matmul: exact sum, fp32, bf16); z = bf16(relu(score) · w) (the
    product of two bf16 is exact in fp32, so one bf16 rounding); I = bf16(Σ_h z) (a bf16 sum:
    exact sum, fp32, bf16). relu gives +0 for non-positive scores [decision: the sign of zero]."""
    nh, hd = cfg.index_n_heads, cfg.index_head_dim
    S = x.shape[0]
    q = ops.linear_fp8(qr, *layer.fp8("attn.indexer.wq_b")).reshape(S, nh, hd)
    q = ops.apply_rope(q, rope.cos[pos][:, None, :], rope.sin[pos][:, None, :])
    q = formats.fp4_qdq_e8m0_b32(q.reshape(S, nh * hd)).reshape(S, nh, hd)
    mult = F32(float(hd) ** -0.5 * float(nh) ** -0.5)
    w = ops.linear_bf16(x, layer.w("attn.indexer.weights_proj.weight"))
    w = formats.round_bf16((w * mult).astype(F32))                        # [S, nh]
    if K.shape[0] == 0:
        return np.zeros((S, 0), F32)
    score = formats.round_bf16(strict.sdot(q, K))                           # [S, nh, T]
    relu = np.where(score > 0, score, F32(0)).astype(F32)
    z = formats.round_bf16((relu * w[:, :, None]).astype(F32))
    return formats.round_bf16(strict.ssum(z, axis=1))                       # [S, T]


def mask_invisible(I: np.ndarray, c: np.ndarray) -> np.ndarray:
    """§6.7 step 6: I[s, j] = −inf for j ≥ c_s."""
    T = I.shape[1]
    vis = np.arange(T)[None, :] < c[:, None]
    return np.where(vis, I, NEG_INF).astype(F32)


def candidate_blocks(I: np.ndarray, c: np.ndarray, cfg) -> np.ndarray:
    """§6.8 select_candidate_blocks per query with its own c_s; bool[S, T]. The selection does
    not depend on T beyond c_s (blocks past c_s score −inf and are dropped), so it is the same
    for a prefill, a chunk or a decode step."""
    return ops.select_candidate_blocks(I, c, cfg.candidate_topk_blocks, cfg.candidate_block_size)


def select_topk(I: np.ndarray, c: np.ndarray, cfg, compact: bool) -> np.ndarray:
    """§6.7 step 8: the chosen compressed rows per query, ascending, as int64[S, K] with −1 for
    empty entries (always at the end of a row).

    compact (§16.4 default): top-k over the query's visible rows only, k_s = min(index_topk,
    c_s); no empty entries except the padding to a common width.
    reference: k = min(index_topk, T) over the whole row (invisible rows are −inf); chosen rows
    sorted ascending, those ≥ c_s become −1 (they sort last, so −1 only at the end).
    Ties break by lowest index (ops.topk_lowest_index); a visible row masked to −inf by the
    candidates therefore still outranks an invisible one (§16.5)."""
    S, T = I.shape
    if T == 0:
        return np.zeros((S, 0), np.int64)
    k = min(int(cfg.index_topk), T)
    order = np.asarray(ops.topk_lowest_index(I, k, axis=-1), dtype=np.int64)  # [S, k]
    if compact:
        # Rank the chosen set by value descending, ties by lowest index (whatever order topk
        # returned it in), and keep the first k_s: the top k_s of the visible rows.
        ks = np.minimum(int(cfg.index_topk), c)                               # [S]
        asc = np.sort(order, axis=1)
        vals = np.take_along_axis(I, asc, axis=1).astype(np.float64)
        by_val = np.argsort(-vals, axis=1, kind="stable")   # stable: ties keep ascending index
        ranked = np.take_along_axis(asc, by_val, axis=1)
        keep = np.arange(k)[None, :] < ks[:, None]
        sel = np.sort(np.where(keep, ranked, np.int64(T)), axis=1)
        return np.where(sel < T, sel, -1).astype(np.int64)
    sel = np.sort(order, axis=1)
    return np.where(sel < c[:, None], sel, -1).astype(np.int64)
