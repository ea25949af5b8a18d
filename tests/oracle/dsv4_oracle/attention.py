"""Attention of one backbone layer (§6) for one sequence: window ring (§6.2), compressed part
(§6.3) with the compressor and indexer of compressor_indexer.py, the explicit hand-off between
source and consumer layers (§6.5, §6.6), sparse attention with the sink (§2.9), inverse RoPE and
the grouped low-rank output (§6.1 step 7).

Two switches of the Model (§16.2, §16.4):

- index_keys 'own': a kv-source indexer scores its own index keys; an index-only layer those of
  its kv source (role.index_keys_from). 'reference': §16.2 literally — one shared `index_k`
  slot (kept in the Sequence, so it persists across calls as the reference's does) written by a
  kv-source indexer only when its compressor produced a latent this call, read by every indexer.
  The same rule applies to chunked calls (a chunk that completes no group of a ratio-2 source
  leaves the slot to the last writer) [decision: the reference has no chunks].
- attn_slots 'compact' (§16.4, the engine's default): per query its visible window positions
  ascending, then its selected compressed rows ascending, no empty slots (the list is padded to
  a common width with −1 at the END only: an all-empty trailing block leaves the running max, l
  and acc unchanged — α = exp(0) = 1, p = 0 — so the padding is exactly "no slot"), 64-slot
  blocks from the start. 'reference': the reference's per-mode lists (§6.2 step 3, §6.7 step 8);
  defined for a prefill at start_pos 0 and for decode (S = 1) only.
"""

from __future__ import annotations

import numpy as np

from . import formats, ops
from .compressor_indexer import (candidate_blocks, compressor_forward, index_keys,
                                 index_scores, mask_invisible, select_topk)

F32 = np.float32


class Handoff:
    """What the source layers publish during ONE forward call, passed down the layers (§6.6
    made explicit; no globals). Keyed by the publishing layer id:

    cmp_rows[L]  bf16 f32[n_cmp, head_dim]: rows [0, n_cmp) of L's compressed cache, after this
                 call's write (§6.3 step 4).
    keys[L]      bf16 f32[T, index_head_dim]: rows [0, T) of L's index-key cache, after this
                 call's write (own mode).
    topk[L]      int64[S, K]: the compressed rows each query attends, ascending, −1 padding at
                 the end (§6.7 step 8 before the slot offset is added; the offset belongs to the
                 consumer's kv buffer, which is the same layout for every layer of a call).
    cand[L]      bool[S, T]: candidate positions (§6.8).
    """

    def __init__(self):
        self.cmp_rows = {}
        self.keys = {}
        self.topk = {}
        self.cand = {}


# ------------------------------------------------------------------------------------------
# §6.2 window part and slot lists
# ------------------------------------------------------------------------------------------

def _ring_write(cache, kv: np.ndarray, pos: np.ndarray, W: int) -> None:
    """§6.2 step 2: the row of position p goes to slot p mod W; with more than W new rows only
    the last W are written (the earlier ones would be overwritten anyway)."""
    if kv.shape[0] > W:
        kv, pos = kv[-W:], pos[-W:]
    slots = pos % W
    cache.win_kv[slots] = kv
    cache.win_pos[slots] = pos


def window_compact(cache, kv: np.ndarray, start_pos: int, W: int):
    """Compact window part for a call at any start_pos (§16.4, and the natural chunk rule: a query
    at p sees positions max(0, p−W+1) .. p, from the ring for earlier positions plus this
    chunk). Returns (rows bf16 f32[n, D], slots int64[S, W] with −1 past the query's visible
    count, rows_pos int64[n] the position of each row). Row i of `rows` is position lo + i,
    lo = max(0, start_pos − W + 1). Writes the ring."""
    S = kv.shape[0]
    lo = max(0, start_pos - W + 1)
    prev_pos = np.arange(lo, start_pos)
    prev_slots = prev_pos % W
    if not np.array_equal(cache.win_pos[prev_slots], prev_pos):
        raise RuntimeError("window ring does not hold the positions the call needs "
                           f"({lo}..{start_pos - 1}); calls must be contiguous")
    rows = np.concatenate([cache.win_kv[prev_slots], kv], axis=0)
    rows_pos = np.arange(lo, start_pos + S)
    p = start_pos + np.arange(S)
    first = np.maximum(0, p - W + 1) - lo
    a = np.arange(W)[None, :]
    slots = np.where(a < np.minimum(p + 1, W)[:, None], first[:, None] + a, -1)
    _ring_write(cache, kv, p, W)
    return rows, rows_pos, slots.astype(np.int64)


def window_reference(cache, kv: np.ndarray, start_pos: int, W: int):
    """The reference's window part (§6.2 steps 2–3). Prefill (start_pos 0): the attention uses
    the chunk's own rows; query t gets min(S, W) slots base..base+W'−1, base = max(0, t−W+1),
    −1 past t. Decode (S = 1): the ring (after the write) in slot order; the query lists ring
    slots oldest first, o = (p mod W) + 1: o..W−1, 0..o−1, −1 for a slot > p."""
    S = kv.shape[0]
    p = start_pos + np.arange(S)
    if start_pos == 0:          # the reference branches on start_pos == 0 (also for S = 1)
        Wp = min(S, W)
        base = np.maximum(0, p - W + 1)
        sl = base[:, None] + np.arange(Wp)[None, :]
        slots = np.where(sl > p[:, None], -1, sl)
        _ring_write(cache, kv, p, W)
        return kv, p.copy(), slots.astype(np.int64)
    if S != 1:
        raise ValueError("attn_slots='reference' defines only a prefill at start_pos 0 and decode "
                         f"(S = 1); got S = {S} at start_pos {start_pos} (chunked prefill is not "
                         "defined by the reference, §16.1/§16.4; use attn_slots='compact')")
    _ring_write(cache, kv, p, W)
    o = (start_pos % W) + 1
    sl = (o + np.arange(W)) % W
    slots = np.where(sl > start_pos, -1, sl)[None, :]
    return cache.win_kv.copy(), cache.win_pos.copy(), slots.astype(np.int64)


def _compact_rows(idx: np.ndarray) -> np.ndarray:
    """Move the −1 entries of each row to its end, keeping the order of the others."""
    order = np.argsort(idx < 0, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1)


# ------------------------------------------------------------------------------------------
# §6.3 compressed part, §6.7 top-k
# ------------------------------------------------------------------------------------------

def _compressed_part(model, layer, cache, seq, hand: Handoff, x, qr, pos, start_pos, dump, tag):
    """§6.3 / §6.5 / §6.7 for one layer: returns (cmp_rows [n_cmp, D], sel int64[S, K]) with sel
    the chosen compressed rows (−1 padding at the end), publishing what a source publishes."""
    cfg = model.cfg
    role = layer.role
    r = role.ratio
    S = x.shape[0]
    rope = layer.rope
    n_cmp = (start_pos + S) // r
    c = (pos + 1) // r                                         # visible rows per query

    latent = None
    first_group = start_pos // r
    if role.kv_source:
        latent, first_group = compressor_forward(layer, cache, x, start_pos, cfg)
        # §6.7 step 1: index keys from the UN-rotated latent (kv sources own the keys; a kv source
        # without an indexer — not in the released layouts — has none).
        if latent is not None and role.index_source:
            k = index_keys(layer, latent, first_group, cfg, rope)
            cache.idx_k[first_group:first_group + k.shape[0]] = k
            if model.index_keys == "reference":
                seq.shared_index_k = role.id      # §6.6: written only when a latent exists
        # §6.3 step 3: rotate at the group's first position, FP4 QDQ (E4M3, block 16), store.
        if latent is not None:
            gpos = (first_group + np.arange(latent.shape[0])) * r
            lat = ops.apply_rope(latent, rope.cos[gpos], rope.sin[gpos])
            lat = formats.fp4_qdq_e4m3_b16(lat)
            cache.cmp_kv[first_group:first_group + lat.shape[0]] = lat
        cache.n_cmp = n_cmp
        hand.cmp_rows[role.id] = cache.cmp_kv[:n_cmp]
        hand.keys[role.id] = cache.idx_k[:n_cmp]
        if dump is not None and latent is not None:
            dump[tag + "compressor_latent"] = latent
    if role.kv_from < 0 or role.kv_from not in hand.cmp_rows:
        raise RuntimeError(f"layer {role.id}: its kv source {role.kv_from} did not run this call")
    cmp_rows = hand.cmp_rows[role.kv_from]

    if not role.index_source:
        if role.topk_from not in hand.topk:
            raise RuntimeError(f"layer {role.id}: its top-k source {role.topk_from} did not run")
        return cmp_rows, hand.topk[role.topk_from]

    if n_cmp == 0:                                              # §6.7: empty list, no indexer
        sel = np.zeros((S, 0), np.int64)
        hand.topk[role.id] = sel
        return cmp_rows, sel

    # Index keys this indexer scores (§6.7 step 3, §16.2).
    if model.index_keys == "reference":
        owner = seq.shared_index_k
        if owner is None:
            raise RuntimeError(f"layer {role.id}: index_keys='reference' and no index keys were "
                               "ever published in this sequence")
        K = seq.caches[owner].idx_k[:n_cmp]
        if K.shape[0] < n_cmp:
            raise RuntimeError(f"layer {role.id}: the shared index_k slot (layer {owner}) has "
                               f"{K.shape[0]} rows, {n_cmp} needed")
    else:
        K = hand.keys[role.index_keys_from]
    I = index_scores(layer, x, qr, K, pos, cfg, rope)
    I = mask_invisible(I, c)
    if role.candidate_source:
        cand = candidate_blocks(I, c, cfg)
        hand.cand[role.id] = cand
        if dump is not None:
            dump[tag + "candidates"] = cand
    if role.uses_candidates:
        src = cfg.candidate_source_layer
        if src not in hand.cand:
            raise RuntimeError(f"layer {role.id}: candidate source {src} did not run this call")
        I = np.where(hand.cand[src], I, F32(-np.inf)).astype(F32)
    sel = select_topk(I, c, cfg, compact=(model.attn_slots == "compact"))
    hand.topk[role.id] = sel
    if dump is not None:
        dump[tag + "index_scores"] = I
    return cmp_rows, sel


# ------------------------------------------------------------------------------------------
# §6.1 Attention.forward
# ------------------------------------------------------------------------------------------

def attention_forward(model, layer, x: np.ndarray, start_pos: int, seq, hand: Handoff,
                      dump=None, tag: str = "") -> np.ndarray:
    """§6.1 for backbone layer `layer` on x bf16 f32[S, dim] (attn_norm's output).
    Returns bf16 f32[S, dim]."""
    cfg = model.cfg
    role = layer.role
    S = x.shape[0]
    H, D = cfg.n_heads, cfg.head_dim
    W = cfg.window_size
    rope = layer.rope
    pos = start_pos + np.arange(S)
    cos, sin = rope.cos[pos], rope.sin[pos]
    cache = seq.caches[role.id]

    # Step 2: queries (no per-head q norm in V4.1).
    qr = ops.rmsnorm(ops.linear_fp8(x, *layer.fp8("attn.wq_a")), layer.w("attn.q_norm.weight"),
                     cfg.norm_eps)
    q = ops.linear_fp8(qr, *layer.fp8("attn.wq_b")).reshape(S, H, D)
    q = ops.apply_rope(q, cos[:, None, :], sin[:, None, :])

    # §6.2 step 1: window KV = kv_norm(wkv(x)), RoPE, FP8 QDQ (act_quant in place).
    kv = ops.rmsnorm(ops.linear_fp8(x, *layer.fp8("attn.wkv")), layer.w("attn.kv_norm.weight"),
                     cfg.norm_eps)
    kv = formats.act_quant_qdq(ops.apply_rope(kv, cos, sin))

    # Step 3: window rows and slots.
    if model.attn_slots == "compact":
        rows, rows_pos, win_slots = window_compact(cache, kv, start_pos, W)
    else:
        rows, rows_pos, win_slots = window_reference(cache, kv, start_pos, W)
    offset = rows.shape[0]

    # Step 4: compressed part.
    if role.ratio > 0:
        cmp_rows, sel = _compressed_part(model, layer, cache, seq, hand, x, qr, pos, start_pos,
                                         dump, tag)
        kv_all = np.concatenate([rows, cmp_rows], axis=0)
        cmp_slots = np.where(sel >= 0, sel + offset, -1)
        idx = np.concatenate([win_slots, cmp_slots], axis=1)
        if dump is not None:
            # the selected compressed positions j per query (rows of the kv source's compressed
            # cache, ascending; group j starts at token j·r), −1 padding
            dump[tag + "attn_cmp_pos"] = sel
    else:
        kv_all, idx = rows, win_slots
    if model.attn_slots == "compact":
        idx = _compact_rows(idx)
    if dump is not None:
        # attn_slots: the slot list, indices into this call's kv rows (window rows, then the
        # compressed rows); attn_slot_pos / attn_slot_cmp: the same list as the absolute token
        # position of a window slot / the compressed row j of a compressed slot (−1 otherwise),
        # comparable across slot modes and with the engine.
        n_c = kv_all.shape[0] - offset
        row_pos = np.concatenate([rows_pos, np.full(n_c, -1, np.int64)])
        row_cmp = np.concatenate([np.full(offset, -1, np.int64), np.arange(n_c)])
        dump[tag + "attn_slots"] = idx
        dump[tag + "attn_slot_pos"] = np.where(idx >= 0, row_pos[np.maximum(idx, 0)], -1)
        dump[tag + "attn_slot_cmp"] = np.where(idx >= 0, row_cmp[np.maximum(idx, 0)], -1)

    # Step 5: sparse attention with the sink; 6: inverse RoPE; 7: grouped wo_a, wo_b.
    scale = F32(float(D) ** -0.5)
    o = ops.sparse_attn(q, kv_all, layer.w("attn.attn_sink"), idx.astype(np.int64), scale)
    if dump is not None:
        dump[tag + "attn_core"] = o                     # sparse_attn output, before inverse RoPE
    o = ops.apply_rope(o, cos[:, None, :], sin[:, None, :], inverse=True)
    return output_projection(layer, o, cfg)


def output_projection(layer, o: np.ndarray, cfg) -> np.ndarray:
    """§6.1 step 7: o [S, H, D] viewed [S, G, (H/G)·D]; u[g] = bf16(o[g] · wo_a[g]ᵀ) with the
    bf16 (dequantized) wo_a rows g·R .. g·R+R−1; out = wo_b(flatten(u)) (FP8 linear)."""
    S = o.shape[0]
    G, R = cfg.o_groups, cfg.o_lora_rank
    og = o.reshape(S, G, -1)
    wo_a = layer.wo_a()                                        # bf16 f32[G·R, (H/G)·D]
    u = np.stack([ops.linear_bf16(og[:, g], wo_a[g * R:(g + 1) * R]) for g in range(G)], axis=1)
    return ops.linear_fp8(u.reshape(S, G * R), *layer.fp8("attn.wo_b"))
