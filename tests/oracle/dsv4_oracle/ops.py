"""The model's numeric operations in strict numerics (spec §2.5–2.11, §5, §6.8, §7).

One function per spec operation. Every formula is split at the reference's torch-op boundaries
and each piece is one correctly rounded operation (docs/strict-numerics.md rule 1): an fp32
elementwise op is a numpy float32 op (IEEE, one rounding), a sum or dot product goes through
``strict.ssum``/``strict.sdot``/``strict.smatmul`` (exact sum of exact products, rounded once), a
transcendental through the ``strict.s*`` wrappers (float64 glibc, rounded once), and a bf16
result is ``formats.round_bf16`` of the fp32 result. The split chosen for each operation is
written next to it; the engine's strict mode follows these splits.

Arguments: activations are fp32 arrays (bf16 values where the spec says bf16); weights may be
given as read from the checkpoint (BF16 as uint16 bits, F32, FP8/FP4/E8M0 as uint8 codes).
"""

import math

import numpy as np

from . import formats as fm
from . import strict as st
from . import weights

F32 = np.float32
F64 = np.float64
NEG_INF = F32(-np.inf)


def _f32(x):
    """An fp32 activation/weight: uint16 arrays are bf16 bit patterns (checkpoint BF16)."""
    x = np.asarray(x)
    if x.dtype == np.uint16:
        return fm.from_bf16_bits(x)
    return np.asarray(x, dtype=F32)


def _o(x):
    """Result of one fp32 elementwise operation: numpy float32 arithmetic already rounded it."""
    return np.asarray(x, dtype=F32)


# ---------------------------------------------------------------------------------------------
# §2.5 GEMMs
# ---------------------------------------------------------------------------------------------

def dequant_fp8_weight(codes, scale):
    """E4M3 weight [N, K] with E8M0 block scales [ceil(N/32), ceil(K/32)] -> the exact values
    w[n, k] = e4m3(codes[n, k]) · 2^(scale[n/32, k/32] − 127), in float32 (which holds every such
    value except with the extreme scale codes) or else float64 (weights.fp8_operand)."""
    return _fp8_info(codes, scale)[0]


def dequant_fp4_weight(packed, scale):
    """Packed E2M1 weight [N, K/2] with E8M0 scales [N, K/32] -> exact values [N, K] (float32,
    or float64 with extreme scale codes)."""
    return _fp4_info(packed, scale)[0]


def _fp8_info(codes, scale):
    return st.cached("fp8w", (np.asarray(codes), np.asarray(scale)),
                     lambda: weights.fp8_operand(codes, scale))


def _fp4_info(packed, scale):
    # FP4 weights are the routed experts: each token needs a few of them (keep=False)
    return st.cached("fp4w", (np.asarray(packed), np.asarray(scale)),
                     lambda: weights.fp4_operand(packed, scale), keep=False)


def _act_dequant64(x):
    """act_quant(x) (§2.3, quantize mode) and the exact float64 values q·s of its codes."""
    q, s = fm.act_quant(_f32(x))
    qv = fm.e4m3_decode(q).astype(F64)
    sv = fm.e8m0_decode(s).astype(F64)
    qv = qv.reshape(qv.shape[:-1] + (qv.shape[-1] // 32, 32)) * sv[..., None]
    return qv.reshape(q.shape)


def linear_fp8(x, w_codes, w_scale):
    """fp8_gemm (§2.5, §2.6): act_quant x (1×32, ue8m0), then C = Σ_k qa·sa·qw·sw.

    Strict split (rule 5): the block partials and fp32 cross-block accumulation of the kernel are
    replaced by one rounding of the exact sum (every dequantized value is exact in float64 and so
    is every product), then bf16 (the GEMM's output dtype).
    """
    a = _act_dequant64(x)
    info = _fp8_info(w_codes, w_scale)
    return fm.round_bf16(st.sdot64(a, info[0], info))


def linear_fp4(x, w_packed, w_scale):
    """fp4_gemm (§2.5): act_quant x, E2M1 weight with per-row E8M0 scales of 32 columns;
    exact sum rounded once to fp32, then bf16 (as linear_fp8)."""
    a = _act_dequant64(x)
    info = _fp4_info(w_packed, w_scale)
    return fm.round_bf16(st.sdot64(a, info[0], info))


def linear_bf16(x, w):
    """bf16 F.linear (§2.5): bf16 inputs, fp32 accumulation (strict: exact sum, one rounding),
    one bf16 rounding of the result."""
    return fm.round_bf16(st.sdot(_f32(x), w))


def linear_f32(x, w):
    """fp32 F.linear (§2.5): fp32 (or bf16-upcast) operands, fp32 output (one rounding)."""
    return st.sdot(_f32(x), w)


# ---------------------------------------------------------------------------------------------
# §2.7 RMSNorm
# ---------------------------------------------------------------------------------------------

def rmsnorm(x, w, eps):
    """RMSNorm (§2.7): y = bf16(w · (x_f32 · rsqrt(mean(x_f32²) + eps))).

    Split at the torch ops:
      ms = mean(x²)          one op (smean): the squares are exact in float64 (for bf16 x they
                             are even exact in fp32), exact sum / n rounded once;
      d  = fp32(ms + eps)    eps is the Python constant cast to fp32 (fp32(1e−20) is normal);
      r  = rsqrt(d)          one op: 1/sqrt in float64, rounded once;
      y  = fp32(x · r);
      out = bf16(fp32(w · y)) with w upcast exactly to fp32.
    """
    xf = _f32(x)
    x64 = xf.astype(F64)
    ms = st.smean(x64 * x64, axis=-1, keepdims=True)
    r = st.srsqrt(_o(ms + F32(eps)))
    y = _o(xf * r)
    return fm.round_bf16(_o(_f32(w) * y))


# ---------------------------------------------------------------------------------------------
# §2.8 RoPE with YaRN
# ---------------------------------------------------------------------------------------------

def yarn_correction_range(beta_fast, beta_slow, dim, base, original_seq_len):
    """(low, high) of §2.8 step 2, in Python double arithmetic as the reference does:
    corr(r) = dim · ln(orig / (r · 2π)) / (2 ln base); low = max(floor(corr(β_fast)), 0);
    high = min(ceil(corr(β_slow)), dim − 1)."""
    def corr(r):
        return dim * math.log(original_seq_len / (r * 2 * math.pi)) / (2 * math.log(base))
    low = max(math.floor(corr(beta_fast)), 0)
    high = min(math.ceil(corr(beta_slow)), dim - 1)
    return low, high


def yarn_ramp(low, high, n):
    """ramp_i = clamp(fp32(fp32(i − low) / fp32(max(high − low, 0.001))), 0, 1), i = 0..n−1."""
    span = (high - low) if high != low else 0.001
    i = np.arange(n, dtype=F32)
    return np.clip(_o(_o(i - F32(low)) / F32(span)), F32(0), F32(1)).astype(F32)


def rope_freqs(cfg, base, yarn):
    """Per-pair frequencies (§2.8 steps 1–2), fp32, each op rounded once.

    freq_i = fp32(1 / pow(fp32(base), fp32(i2 / dim))) (torch: 1.0 / (base ** (arange/dim))).
    With YaRN: smooth = 1 − ramp and freq ← freq/factor·(1 − smooth) + freq·smooth evaluated in
    exactly this order: t1 = fp32(freq / factor), t2 = fp32(1 − smooth), t3 = fp32(t1 · t2),
    t4 = fp32(freq · smooth), freq = fp32(t3 + t4).
    """
    dim = int(cfg.rope_head_dim)
    i2 = np.arange(0, dim, 2, dtype=F32)
    expo = _o(i2 / F32(dim))
    freq = _o(F32(1.0) / st.spow(np.full_like(expo, F32(base)), expo))
    if yarn and cfg.original_seq_len > 0:
        low, high = yarn_correction_range(cfg.beta_fast, cfg.beta_slow, dim, base,
                                          cfg.original_seq_len)
        smooth = _o(F32(1.0) - yarn_ramp(low, high, dim // 2))
        t1 = _o(freq / F32(cfg.rope_factor))
        t2 = _o(F32(1.0) - smooth)
        freq = _o(_o(t1 * t2) + _o(freq * smooth))
    return freq


def rope_table(cfg, base, yarn, n_pos):
    """(cos, sin) fp32 [n_pos, rope_head_dim/2] (§2.8 step 3): angle = fp32(fp32(p) · freq_i);
    cos and sin evaluated in float64 on the fp32 angle and rounded once (torch.polar with
    abs = 1, whose multiply by 1 is exact). cfg needs rope_head_dim, original_seq_len,
    rope_factor, beta_fast, beta_slow."""
    freq = rope_freqs(cfg, base, yarn)
    pos = np.arange(n_pos, dtype=F32)
    angle = _o(pos[:, None] * freq[None, :])
    return st.scos(angle), st.ssin(angle)


def apply_rope(x, cos, sin, inverse=False):
    """Rotate the last 2·P dims of x (P = cos.shape[-1]) as interleaved pairs (§2.8):
    (a, b) = (x[D−2P+2j], x[D−2P+2j+1]); a' = a·cos − b·sin, b' = a·sin + b·cos; inverse uses the
    conjugate (sin → −sin). Result rounded to bf16; the other dims are returned unchanged.

    Decision (strict): each output component is ONE correctly rounded operation of the exact
    expression — a·cos and b·sin are exact in float64, their float64 difference is
    RNE64(exact), then RNE32, then bf16. (torch's complex64 multiply rounds the two products and
    the difference separately, possibly with an FMA; strict mode fixes one rounding instead.)

    Broadcasting: cos/sin [S, P] with x [S, ..., D] get singleton axes after the first, so one
    table row serves every head of a token; otherwise they must broadcast against x[..., :P].
    """
    xf = _f32(x)
    c = _f32(cos).astype(F64)
    s = _f32(sin).astype(F64)
    if c.ndim < xf.ndim:
        extra = (1,) * (xf.ndim - c.ndim)
        c = c.reshape(c.shape[:1] + extra + c.shape[1:])
        s = s.reshape(s.shape[:1] + extra + s.shape[1:])
    p = c.shape[-1]
    d = xf.shape[-1]
    if 2 * p > d:
        raise ValueError(f"apply_rope: {2 * p} rope dims exceed the vector width {d}")
    tail = xf[..., d - 2 * p:].astype(F64)
    a = tail[..., 0::2]
    b = tail[..., 1::2]
    if inverse:
        ra = a * c + b * s
        rb = b * c - a * s
    else:
        ra = a * c - b * s
        rb = a * s + b * c
    out = xf.copy()
    rot = np.empty(tail.shape, dtype=F32)
    rot[..., 0::2] = fm.round_bf16(st.f32(ra))
    rot[..., 1::2] = fm.round_bf16(st.f32(rb))
    out[..., d - 2 * p:] = rot
    return out


# ---------------------------------------------------------------------------------------------
# §2.9 sparse attention
# ---------------------------------------------------------------------------------------------

ATTN_BLOCK = 64
MU_FLOOR = F32(-1e30)


def sparse_attn(q, kv, sink, idx, scale):
    """sparse_attn (§2.9): q [S, H, D] bf16, kv [N, D] bf16 (K = V), sink [H] fp32,
    idx [S, K] int (−1 = empty), scale fp32 -> bf16 [S, H, D].

    Online softmax over the slot list in blocks of 64, in list order (the partition changes the
    bits, §16.4). State per (query, head): μ = −1e30, l = 0, acc = 0 (fp32). Per block, split
    into single operations:
      s_j   = fp32(Σ_d q·k_j) (exact dot, one rounding); s_j = fp32(s_j · scale); empty → −inf
      μ'    = max(μ, max_j s_j)
      α     = exp(fp32(μ − μ')),  p_j = exp(fp32(s_j − μ'))     (strict exp, rounded once)
      l     = fp32(fp32(l · α) + Σ_j p_j)                        (Σ strict over the block)
      acc   = fp32(fp32(acc · α) + Σ_j bf16(p_j) · v_j)          (exact dot over the block)
    Finish: l = fp32(l + exp(fp32(sink − μ))) (sink not scaled); o = bf16(fp32(acc / l)).
    A query whose slots are all −1 gets zeros (the formulas give 0/inf = 0 too).
    """
    qf = _f32(q)
    kvf = _f32(kv)
    idx = np.asarray(idx)
    n_q, n_h, d = qf.shape
    if idx.ndim != 2 or idx.shape[0] != n_q:
        raise ValueError(f"sparse_attn: idx {idx.shape} does not match q {qf.shape}")
    if kvf.ndim != 2 or kvf.shape[1] != d:
        raise ValueError(f"sparse_attn: kv {kvf.shape} does not match q {qf.shape}")
    if idx.size and (idx.max() >= kvf.shape[0] or idx.min() < -1):
        raise ValueError(f"sparse_attn: slot index out of range [−1, {kvf.shape[0]})")
    sc32 = F32(scale)
    sinkf = _f32(sink)
    mu = np.full((n_q, n_h), MU_FLOOR, dtype=F32)
    l = np.zeros((n_q, n_h), dtype=F32)
    acc = np.zeros((n_q, n_h, d), dtype=F32)
    for b0 in range(0, idx.shape[1], ATTN_BLOCK):
        ib = idx[:, b0:b0 + ATTN_BLOCK]
        valid = ib >= 0
        rows = kvf[np.where(valid, ib, 0)] * valid[..., None].astype(F32)   # [S, B, D]
        s = st.smatmul(qf, np.swapaxes(rows, 1, 2))                         # [S, H, B]
        s = _o(s * sc32)
        s = np.where(valid[:, None, :], s, NEG_INF).astype(F32)
        mu_new = np.maximum(mu, s.max(axis=-1))
        alpha = st.sexp(_o(mu - mu_new))
        with np.errstate(invalid="ignore"):
            p = st.sexp(_o(s - mu_new[..., None]))
        l = _o(_o(l * alpha) + st.ssum(p, axis=-1))
        pv = st.smatmul(fm.round_bf16(p), rows)                             # [S, H, D]
        acc = _o(_o(acc * alpha[..., None]) + pv)
        mu = mu_new
    with np.errstate(over="ignore"):
        l = _o(l + st.sexp(_o(sinkf[None, :] - mu)))
    with np.errstate(invalid="ignore", divide="ignore"):
        o = fm.round_bf16(_o(acc / l[..., None]))
    empty = ~(idx >= 0).any(axis=1)
    o[empty] = F32(0.0)
    return o


# ---------------------------------------------------------------------------------------------
# §2.10 Sinkhorn and §5 hyper-connections
# ---------------------------------------------------------------------------------------------

def hc_split_sinkhorn(mixes, scale, base, hc=4, iters=20, eps=1e-6):
    """hc_split_sinkhorn (§2.10), all fp32, every op rounded once (no FMA contraction):
      pre_j  = fp32(sigmoid(fp32(fp32(m_j·scale0) + base_j)) + eps)
      post_j = fp32(2 · sigmoid(fp32(fp32(m_{hc+j}·scale1) + base_{hc+j})))
      c      = fp32(fp32(m_{2hc+..}·scale2) + base) as [hc, hc] row-major
      row softmax: e = exp(fp32(c − max_k c)); c = fp32(fp32(e / Σ_k e) + eps)
      column normalise: c = fp32(c / fp32(Σ_r c + eps))
      iters − 1 times: row normalise c = fp32(c / fp32(Σ_k c + eps)); column normalise.
    Sums are strict (exact, rounded once). Returns pre [..., hc], post [..., hc],
    comb [..., hc, hc] (comb[r][k]; it ends column-normalised: Σ_r comb[r][k] ≈ 1).
    """
    m = _f32(mixes)
    sc = _f32(scale)
    bs = _f32(base)
    e32 = F32(eps)
    if m.shape[-1] != (2 + hc) * hc:
        raise ValueError(f"hc_split_sinkhorn: mixes last dim {m.shape[-1]}, expected {(2 + hc) * hc}")
    pre = _o(st.ssigmoid(_o(_o(m[..., :hc] * sc[0]) + bs[:hc])) + e32)
    post = _o(F32(2.0) * st.ssigmoid(_o(_o(m[..., hc:2 * hc] * sc[1]) + bs[hc:2 * hc])))
    c = _o(_o(m[..., 2 * hc:] * sc[2]) + bs[2 * hc:])
    c = c.reshape(c.shape[:-1] + (hc, hc))
    e = st.sexp(_o(c - c.max(axis=-1, keepdims=True)))
    c = _o(_o(e / st.ssum(e, axis=-1, keepdims=True)) + e32)
    c = _o(c / _o(st.ssum(c, axis=-2, keepdims=True) + e32))
    for _ in range(iters - 1):
        c = _o(c / _o(st.ssum(c, axis=-1, keepdims=True) + e32))
        c = _o(c / _o(st.ssum(c, axis=-2, keepdims=True) + e32))
    return pre, post, c


def hc_mixes(X, fn, scale, base, norm_eps, hc_eps=1e-6, iters=20):
    """hc_mixes (§5.1): X [..., hc, D] bf16, fn [(2+hc)·hc, hc·D] fp32 -> (pre, post, comb).

    Split: xf = X as [..., hc·D] fp32 (copy-major); ms = mean(xf²) (strict, exact squares);
    r = rsqrt(fp32(ms + fp32(norm_eps))) (one op); mixes = fp32(sdot(xf, fn) · r) (projection
    first, rounded once, then the multiply); then hc_split_sinkhorn with hc_eps.
    """
    xf = _f32(X)
    hc = xf.shape[-2]
    xf = xf.reshape(xf.shape[:-2] + (hc * xf.shape[-1],))
    x64 = xf.astype(F64)
    ms = st.smean(x64 * x64, axis=-1, keepdims=True)
    r = st.srsqrt(_o(ms + F32(norm_eps)))
    mixes = _o(st.sdot(xf, fn) * r)
    return hc_split_sinkhorn(mixes, scale, base, hc, iters, hc_eps)


def hc_pre(X, pre):
    """hc_pre (§5.2): bf16(Σ_c pre[c] · X_f32[c]) -> [..., D]. The sum over the hc copies is a
    dot product (rule 2: exact products, exact sum, one fp32 rounding), then bf16."""
    xf = _f32(X).astype(F64)
    terms = _f32(pre).astype(F64)[..., :, None] * xf                    # exact products
    return fm.round_bf16(st.ssum(terms, axis=-2))


def hc_post(y, R, post, comb):
    """hc_post (§5.3): out[j] = bf16(post[j] · y + Σ_i comb[i][j] · R[i]) -> [..., hc, D].

    Split: S_j = Σ_i comb[i][j]·R[i] is a dot product over i (exact, one fp32 rounding), formed
    first; P_j = fp32(post[j] · y); out_j = bf16(fp32(P_j + S_j)).
    """
    yf = _f32(y)
    Rf = _f32(R).astype(F64)
    cb = _f32(comb).astype(F64)
    terms = cb[..., :, :, None] * Rf[..., :, None, :]                   # [..., i, j, D]
    s = st.ssum(terms, axis=-3)                                         # [..., j, D]
    p = _o(_f32(post)[..., :, None] * yf[..., None, :])
    return fm.round_bf16(_o(p + s))


# ---------------------------------------------------------------------------------------------
# top-k (rule 6) and §6.8 candidate blocks
# ---------------------------------------------------------------------------------------------

def topk_lowest_index(values, k, axis=-1):
    """Indices of the k largest values along axis, ties broken by the LOWEST index
    (docs/strict-numerics.md rule 6). Returned in descending value order, equal values in
    ascending index order (a stable sort of the negated values); callers that need another order
    (the indexer: ascending position) sort the result. ±0 compare equal; NaN sorts last."""
    v = np.asarray(values)
    key = -(v.astype(F64) if not np.issubdtype(v.dtype, np.floating) else v)
    order = np.argsort(key, axis=axis, kind="stable")
    return np.take(order, np.arange(int(k)), axis=axis)


def select_candidate_blocks(I, c, topk_blocks, bs):
    """select_candidate_blocks (§6.8): I [..., T] index scores, c visible count (int or array
    broadcasting to I.shape[:-1]) -> bool [..., T].

    1. pad with −inf to a multiple of bs; block score = max of each bs positions (nb blocks);
    2. the block holding the newest visible position, (c − 1) // bs, scores +inf (always kept;
       with c = 0 nothing is visible and no block is forced);
    3. top min(topk_blocks, nb) blocks (ties by lowest block index), kept only if their score is
       > −inf (filler blocks of −inf are dropped);
    4. each kept block's flag repeated bs times, cut to T.
    """
    Ia = _f32(I)
    t = Ia.shape[-1]
    nb = -(-t // bs)
    pad = nb * bs - t
    if pad:
        Ia = np.concatenate([Ia, np.full(Ia.shape[:-1] + (pad,), NEG_INF, F32)], axis=-1)
    score = Ia.reshape(Ia.shape[:-1] + (nb, bs)).max(axis=-1)
    cc = np.broadcast_to(np.asarray(c, dtype=np.int64), score.shape[:-1])
    if np.any(cc > t) or np.any(cc < 0):
        raise ValueError(f"select_candidate_blocks: visible count outside [0, {t}]")
    last = np.where(cc > 0, (cc - 1) // bs, 0)[..., None]
    forced = np.take_along_axis(score, last, axis=-1)
    np.put_along_axis(score, last, np.where(cc[..., None] > 0, F32(np.inf), forced), axis=-1)
    kb = min(int(topk_blocks), nb)
    chosen = topk_lowest_index(score, kb)
    keep = np.take_along_axis(score, chosen, axis=-1) > NEG_INF
    blocks = np.zeros(score.shape, dtype=bool)
    np.put_along_axis(blocks, chosen, keep, axis=-1)
    return np.repeat(blocks, bs, axis=-1)[..., :t]


# ---------------------------------------------------------------------------------------------
# §7 MoE
# ---------------------------------------------------------------------------------------------

def gate(x, w, bias, cfg, topk=None, bias_vl=None, image_mask=None):
    """Gate (§7.1): x bf16 [N, dim], w [E, dim] (bf16 param used as fp32), bias fp32 [E].

      logits = fp32(sdot(x, w) / gate_temp)
      s      = sqrt(softplus(logits))   (two strict ops; score_func sqrtsoftplus)
      idx    = top-k of fp32(s + b) (b = bias, or bias_vl for image tokens), ties lowest index,
               ordered by descending biased score
      wts    = s[idx]; for k > 1: wts = fp32(wts / fp32(Σ wts + 1e−20)); wts = fp32(wts · route_scale)
    k = topk or cfg.n_activated_experts. Returns (idx int64 [N, k], wts fp32 [N, k]).
    """
    if cfg.score_func != "sqrtsoftplus":
        raise ValueError(f"gate: score_func {cfg.score_func!r} is not used by V4.1 (spec §7.1)")
    k = int(topk if topk is not None else cfg.n_activated_experts)
    logits = _o(linear_f32(x, w) / F32(cfg.gate_temp))
    s = st.ssqrt(st.ssoftplus(logits))
    b = np.broadcast_to(_f32(bias), s.shape)
    if image_mask is not None and bias_vl is not None:
        b = np.where(np.asarray(image_mask, dtype=bool)[..., None], _f32(bias_vl), b)
    idx = topk_lowest_index(_o(s + b), k)
    wts = np.take_along_axis(s, idx, axis=-1)
    if k > 1:
        wts = _o(wts / _o(st.ssum(wts, axis=-1, keepdims=True) + F32(1e-20)))
    wts = _o(wts * F32(cfg.route_scale))
    return idx, wts


def _linear(fmt):
    if fmt == "fp4":
        return linear_fp4
    if fmt == "fp8":
        return linear_fp8
    raise ValueError(f"expert format must be 'fp4' or 'fp8', got {fmt!r}")


def expert(x, w1, w3, w2, weight=None, limit=10.0, fmt="fp4"):
    """Expert (§7.2), SwiGLU with clamps. w1/w3/w2 are (codes, scale) pairs; fmt 'fp4' (routed
    experts, packed E2M1) or 'fp8' (shared expert). Split:
      g = fp32(w1(x)), u = fp32(w3(x))     (bf16 GEMM outputs, exact upcast)
      limit > 0: u = clamp(u, −limit, limit); g = min(g, limit)
      h = fp32(silu(g) · u)                (silu one strict op)
      weight given: h = fp32(weight · h)   (before the down projection)
      out = w2(bf16(h)) -> bf16
    """
    lin = _linear(fmt)
    g = lin(x, *w1)
    u = lin(x, *w3)
    if limit and limit > 0:
        lim = F32(limit)
        u = np.minimum(np.maximum(u, -lim), lim).astype(F32)
        g = np.minimum(g, lim).astype(F32)
    h = _o(st.ssilu(g) * u)
    if weight is not None:
        h = _o(_f32(weight).reshape(-1, 1) * h)
    return lin(fm.round_bf16(h), *w2)


def moe(x, gate_w, gate_bias, experts, shared, cfg, topk=None, gate_bias_vl=None,
        image_mask=None, expert_fmt=None):
    """MoE.forward (§7.3): y = 0 (fp32); for each expert e in increasing index, for the tokens
    that selected it: y[token] = fp32(y[token] + Expert_e(x[token], wts)) — one fp32 add per
    token and expert; then y = fp32(y + SharedExpert(x)); return bf16(y).

    experts: a sequence, dict or callable giving (w1, w3, w2) for expert e, each a
    (codes, scale) pair; shared: the same triple in FP8, or None. expert_fmt defaults to 'fp4'
    when cfg.expert_dtype == 'fp4', else 'fp8'.
    """
    xf = _f32(x)
    fmt = expert_fmt or ("fp4" if getattr(cfg, "expert_dtype", "fp4") == "fp4" else "fp8")
    limit = float(cfg.swiglu_limit)
    idx, wts = gate(xf, gate_w, gate_bias, cfg, topk=topk, bias_vl=gate_bias_vl,
                    image_mask=image_mask)
    y = np.zeros(xf.shape, dtype=F32)
    for e in np.unique(idx):
        tok, slot = np.nonzero(idx == e)
        w = experts(int(e)) if callable(experts) else experts[int(e)]
        out = expert(xf[tok], *w, weight=wts[tok, slot], limit=limit, fmt=fmt)
        y[tok] = _o(y[tok] + out)
    if shared is not None:
        y = _o(y + expert(xf, *shared, weight=None, limit=limit, fmt="fp8"))
    return fm.round_bf16(y)
