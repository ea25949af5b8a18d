"""DSpark draft head (reference-spec.md §9): forward_spec and forward_head, exactly as §9.1–9.4.
Only the forward exists (as in the reference); there is no drafting or verification loop.

Driving it (the caller's job, §9.5): after each main-model call, pass the token just sampled and
that call's captured hiddens (seq.main_hidden):
    prefill at 0 of S tokens → forward_spec(seq, next_id, seq.main_hidden, 0)   seeds the rings
    decode at p (S = 1)      → forward_spec(seq, next_id, seq.main_hidden, p)   drafts
Each stage's ring is fed one main_kv per main position (slot = position mod W).
"""

from __future__ import annotations

import numpy as np

from . import formats, ops
from .attention import _ring_write, output_projection

F32 = np.float32


def _main_kv(model, layer, main_x, start_pos):
    """§9.3 step 1: main_kv = kv_norm(wkv(main_x)), rotated at start_pos .. start_pos+S_m−1,
    FP8 QDQ."""
    cfg = model.cfg
    pos = start_pos + np.arange(main_x.shape[0])
    kv = ops.rmsnorm(ops.linear_fp8(main_x, *layer.fp8("attn.wkv")),
                     layer.w("attn.kv_norm.weight"), cfg.norm_eps)
    kv = ops.apply_rope(kv, layer.rope.cos[pos], layer.rope.sin[pos])
    return formats.act_quant_qdq(kv), pos


def dspark_attention(model, layer, ring, x, start_pos, main_x, dump=None, tag=""):
    """§9.3 DSparkAttention for start_pos > 0 (S_m = 1): draft positions P_i = start_pos+1+i;
    kv = concat(ring [W rows], kv_d [B rows]); every draft query lists ring slots
    0 .. min(W, start_pos+1)−1 in SLOT order (§16.4 keeps this as the reference does), then the
    B draft rows: bidirectional inside the block."""
    cfg = model.cfg
    H, D, W = cfg.n_heads, cfg.head_dim, cfg.window_size
    B = x.shape[0]
    rope = layer.rope
    P = start_pos + 1 + np.arange(B)
    cos, sin = rope.cos[P], rope.sin[P]
    qr = ops.rmsnorm(ops.linear_fp8(x, *layer.fp8("attn.wq_a")), layer.w("attn.q_norm.weight"),
                     cfg.norm_eps)
    q = ops.linear_fp8(qr, *layer.fp8("attn.wq_b")).reshape(B, H, D)
    q = ops.apply_rope(q, cos[:, None, :], sin[:, None, :])
    kv_d = ops.rmsnorm(ops.linear_fp8(x, *layer.fp8("attn.wkv")), layer.w("attn.kv_norm.weight"),
                       cfg.norm_eps)
    kv_d = formats.act_quant_qdq(ops.apply_rope(kv_d, cos, sin))
    mkv, mpos = _main_kv(model, layer, main_x, start_pos)
    _ring_write(ring, mkv, mpos, W)
    kv = np.concatenate([ring.win_kv, kv_d], axis=0)
    n_ring = min(W, start_pos + 1)
    idx = np.concatenate([np.arange(n_ring), W + np.arange(B)])
    idx = np.broadcast_to(idx, (B, idx.size)).astype(np.int64)
    o = ops.sparse_attn(q, kv, layer.w("attn.attn_sink"), idx, F32(float(D) ** -0.5))
    o = ops.apply_rope(o, cos[:, None, :], sin[:, None, :], inverse=True)
    if dump is not None:
        dump[tag + "attn_slots"] = idx
    return output_projection(layer, o, cfg)


def forward_spec(model, seq, input_id, main_hidden, start_pos):
    """§9.1 forward_spec(input_id, main_hidden [S_m, n_targets·dim], start_pos).

    start_pos = 0: seeds every stage's ring from the prefill's hiddens (§9.2) and returns None.
    start_pos > 0: S_m must be 1 (the reference's decode branch; a multi-token main_hidden at
    start_pos > 0 is undefined there, so it is refused); returns forward_head's
    (ids int64[B+1] = anchor + B drafts, logits f32[B, vocab] with the Markov bias, confidence
    f32[B])."""
    cfg = model.cfg
    if not model.mtp:
        raise ValueError("the model has no DSpark stages (n_mtp_layers = 0)")
    if main_hidden is None:
        raise ValueError("main_hidden is None: run the main forward first (seq.main_hidden)")
    main_hidden = np.asarray(main_hidden, F32)
    if main_hidden.ndim == 1:
        main_hidden = main_hidden[None, :]
    start_pos = int(start_pos)
    if start_pos > 0 and main_hidden.shape[0] != 1:
        raise ValueError("forward_spec at start_pos > 0 takes the hidden of ONE main position "
                         f"(S_m = 1), got {main_hidden.shape[0]} (§9.3, §9.5)")
    last_pos = start_pos + max(main_hidden.shape[0] - 1, int(cfg.dspark_block_size))
    if last_pos >= model.mtp[0].rope.cos.shape[0]:
        raise ValueError(f"DSpark position {last_pos} is beyond the RoPE tables")
    dump = {} if model.dump else None
    st0 = model.mtp[0]
    eps = cfg.norm_eps
    # §9.1 step 1: main_x = main_norm(main_proj(main_hidden)); the draft block's embeddings.
    main_x = ops.rmsnorm(ops.linear_fp8(main_hidden, *st0.fp8("main_proj")),
                         st0.w("main_norm.weight"), eps)
    B = int(cfg.dspark_block_size)
    ids = np.array([int(input_id)] + [int(cfg.dspark_noise_token_id)] * (B - 1), np.int64)
    hc = int(cfg.hc_mult)
    X = np.repeat(model.embed(ids)[:, None, :], hc, axis=1).astype(F32)
    pre = np.zeros((B, hc), F32)
    pre[:, 0] = 1
    if dump is not None:
        dump["dspark.main_x"] = main_x
    no_img = np.zeros(B, bool)
    # §9.1 step 2 / §9.2: the stages.
    for s, layer in enumerate(model.mtp):
        ring = seq.dspark[s]
        tag = f"D{s}."
        if start_pos == 0:
            mkv, mpos = _main_kv(model, layer, main_x, 0)
            _ring_write(ring, mkv, mpos, int(cfg.window_size))
            continue

        def attn_fn(a_in, layer=layer, ring=ring, tag=tag):
            return dspark_attention(model, layer, ring, a_in, start_pos, main_x, dump, tag)

        X, pre = model.block(layer, X, start_pos, pre, no_img, seq, None, dump, tag,
                             attn_fn=attn_fn)
    if dump is not None:
        seq.spec_dump = dump
    if start_pos == 0:
        return None
    return forward_head(model, X, pre, input_id, dump)


def forward_head(model, X, pre, input_id, dump=None):
    """§9.4 forward_head(x [B, hc, dim], pre_mix, input_id) → (out int64[B+1], logits f32[B, V],
    confidence f32[B]).

    z = hc_pre(x, pre); logits = head(norm(z)) (stage 2's norm, the backbone head); then
    sequentially out[0] = input_id, e_i = markov_head.embed[out[i]] (bf16), logits[i] +=
    fp32(e_i)·markov_head.headᵀ (one fp32 add), out[i+1] = argmax(logits[i]) (greedy,
    temperature 0, lowest index on ties); confidence = fp32(concat(z, e))·proj ᵀ from the
    PRE-norm z."""
    cfg = model.cfg
    last = model.mtp[-1]
    z = ops.hc_pre(X, pre)
    logits = ops.linear_f32(ops.rmsnorm(z, last.w("norm.weight"), cfg.norm_eps),
                            model.head_weight()).copy()
    emb = last.raw("markov_head.embed.weight")
    mhead = last.w("markov_head.head.weight")
    B = z.shape[0]
    out = [int(input_id)]
    es = []
    for i in range(B):
        e = formats.from_bf16_bits(np.asarray(emb[out[i]]))
        es.append(e)
        bias = ops.linear_f32(e[None, :], mhead)[0]
        logits[i] = (logits[i] + bias).astype(F32)
        out.append(int(np.argmax(logits[i])))
    E = np.stack(es, axis=0)
    conf = ops.linear_f32(np.concatenate([z, E], axis=1), last.w("confidence_head.proj.weight"))
    if dump is not None:
        dump["dspark.z"] = z
        dump["dspark.markov_e"] = E
        dump["dspark.logits"] = logits
        dump["dspark.confidence"] = conf[:, 0]
    return np.array(out, np.int64), logits, conf[:, 0].astype(F32)
