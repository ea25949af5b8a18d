"""The DeepSeek V4.1 text model for one sequence (reference-spec.md §4–§7, §9, §14, §16):

    m = Model(model_dir, index_keys='own'|'reference', attn_slots='compact'|'reference',
              dump=False)
    seq = m.new_sequence(max_len)            # or Sequence(m, max_len)
    logits = m.forward(seq, ids, start_pos)   # f32[S, vocab], EVERY position (teacher forcing)
    out_ids, logits5, conf = m.forward_spec(seq, input_id, seq.main_hidden, start_pos)  # §9

Call patterns (§4, §16.1): a prefill at start_pos 0 of any S, decode steps (S = 1), and — with
attn_slots='compact' — chunked prefill at any start_pos and any S. Calls on one Sequence must be
contiguous (start_pos = the number of positions already processed).

Chunk semantics (the reference has none, §16.1; defined here and followed by the engine): a
query at absolute position p sees window positions max(0, p−W+1) .. p (the ring for earlier
positions plus this chunk), compressed rows j < (p+1)//r, compressor groups complete across
chunk boundaries through the carried tail, and candidates are selected with c = (p+1)//r. With
the compact slot list every per-query quantity then depends only on the positions ≤ p, so a
prefill, token-by-token decode and any chunking give bit-identical logits.

Numerics: docs/strict-numerics.md (via ops/strict/formats). Images are out of scope (vision comes
later); the image-mask plumbing (gate bias_vl, Engram mask) is kept with a text-only default.

Dumps (Model(dump=True); seq.dump after each forward, seq.spec_dump after forward_spec), per
backbone layer L with the prefix "L{L}.":
  engram_hashes, engram_gate [S, hc], engram_out          (Engram layers, §8.4)
  hc_attn_pre/post [S, hc], hc_attn_comb [S, hc, hc], hc_ffn_pre/post/comb   (§5.1)
  attn_in (attn_norm output), attn_core (sparse_attn output, before inverse RoPE),
  attn_out (after wo_b), attn_slots (slot list into the call's kv rows), attn_slot_pos /
  attn_slot_cmp (the same list as absolute window positions / compressed rows j, −1 otherwise)
  attn_cmp_pos [S, K]  the selected compressed positions j per query, ascending, −1 padding
  compressor_latent (kv sources, un-rotated), index_scores [S, T] (index sources, after the
  visibility and candidate masks), candidates [S, T] (the candidate source)
  ffn_in, moe_idx [S, k] (descending biased score), moe_wts [S, k], moe_out, out [S, hc, dim]
and globally embed, final_x (after the final norm), logits. DSpark stages use "D{s}." plus
dspark.main_x, dspark.z, dspark.markov_e, dspark.logits, dspark.confidence.

Decisions where the spec leaves room (each is also commented where it is implemented):
  * chunk semantics (above); calls must be contiguous, a Sequence never rewinds;
  * the compact slot list is padded to a common width with −1 at the END (a no-op, attention.py);
  * the ratio-r compressor's softmax is one float64 evaluation rounded once; the pooling is the
    reference's `(kv * w).sum(dim)`: fp32 products, then an exact sum (compressor_indexer.py);
  * relu in the indexer gives +0; its weight multiplier is the fp32 of the Python scalar;
  * compact top-k takes k = min(index_topk, c_p) over the visible rows; a visible row masked by
    the candidates stays eligible (as in the reference, §16.5);
  * index_keys='reference': the shared slot lives in the Sequence (the reference's is global to
    the model; indistinguishable, since every first call writes it before any read) and is also
    used, with the same rule, by chunked calls;
  * attn_slots='reference' with S = 1 at start_pos 0 takes the prefill branch (the reference
    tests start_pos == 0);
  * RoPE tables have max_positions + dspark_block_size + 1 rows (DSpark reads start_pos + 5);
  * forward_spec at start_pos > 0 takes exactly one main position (S_m = 1), else ValueError;
  * greedy sampling (temperature 0) is argmax with the lowest index on ties.
"""

from __future__ import annotations

import os

import numpy as np

from . import config as config_mod
from . import engram, formats, ops, safetensors, strict
from .attention import Handoff, attention_forward

F32 = np.float32

INDEX_KEYS = ("own", "reference")
ATTN_SLOTS = ("compact", "reference")


# ------------------------------------------------------------------------------------------
# Weights
# ------------------------------------------------------------------------------------------

class Rope:
    """One RoPE table (§2.8): cos, sin f32[n_pos, rope_head_dim/2]."""

    def __init__(self, cos, sin):
        self.cos = np.asarray(cos, F32)
        self.sin = np.asarray(sin, F32)


class Layer:
    """A backbone layer or DSpark stage: its role (§1.3), RoPE table and weights, decoded once
    (BF16 → exact f32 values; F32 as is; FP8/FP4 kept as raw codes for ops' linears)."""

    def __init__(self, model, role, rope):
        self.role = role
        self.id = role.id
        self.ratio = int(role.ratio)
        self.prefix = _prefix(role)
        self.rope = rope
        self._t = model.tensors
        self._vals = {}
        self._wo_a = None

    def name(self, n):
        return self.prefix + n

    def has(self, n):
        return self.prefix + n in self._t

    def raw(self, n):
        full = self.prefix + n
        if full not in self._t:
            raise KeyError(f"missing tensor {full}")
        return self._t[full]

    def w(self, n):
        """A BF16 (uint16 bits) or F32 tensor as stored, memory-mapped read-only: ops widens BF16
        exactly and caches float64 copies of mapped weights (strict.cached), so weights are
        passed raw."""
        a = self.raw(n)
        if a.dtype not in (np.uint16, np.float32):
            raise TypeError(f"{self.prefix + n}: not a BF16/F32 tensor (dtype {a.dtype})")
        return a

    def values(self, n):
        """The f32 values of a BF16/F32 tensor (decoded once)."""
        v = self._vals.get(n)
        if v is None:
            v = _values(self.raw(n))
            self._vals[n] = v
        return v

    def fp8(self, base):
        """(E4M3 codes, E8M0 scale codes) of an FP8 linear `base`.weight/.scale."""
        return np.asarray(self.raw(base + ".weight")), np.asarray(self.raw(base + ".scale"))

    def fp4(self, base):
        """(packed E2M1 bytes, E8M0 scale codes) of an FP4 linear."""
        return np.asarray(self.raw(base + ".weight")), np.asarray(self.raw(base + ".scale"))

    def wo_a(self):
        """§3.2 step 6: wo_a dequantized to bf16 at conversion, W = bf16(e4m3 · 2^(s−127)) per
        32×32 block (exact)."""
        if self._wo_a is None:
            w64 = ops.dequant_fp8_weight(*self.fp8("attn.wo_a"))      # exact float64 values
            self._wo_a = formats.round_bf16(strict.f32(w64))          # exact: ≤ 4 significant bits
        return self._wo_a


def _prefix(role):
    if getattr(role, "is_mtp", False):
        return f"mtp.{role.mtp_stage}."
    return f"layers.{role.id}."


def _values(a):
    a = np.asarray(a)
    if a.dtype == np.uint16:
        return formats.from_bf16_bits(a)
    if a.dtype == np.float32:
        return a
    raise TypeError(f"not a BF16/F32 tensor: dtype {a.dtype}")


# ------------------------------------------------------------------------------------------
# Per-sequence state (§14)
# ------------------------------------------------------------------------------------------

class LayerCache:
    """§14 for one layer of one sequence: window ring [W, head_dim] bf16 + the position each slot
    holds (−1 empty); for kv sources the compressed rows [max_len // r, head_dim] and the index
    keys [max_len // r, index_head_dim]; for ratio ≥ 2 compressors the carried tail kv_state
    (init 0) and score_state (init −inf), fp32 [r, head_dim]."""

    def __init__(self, cfg, role, max_len):
        W, D = int(cfg.window_size), int(cfg.head_dim)
        self.win_kv = np.zeros((W, D), F32)
        self.win_pos = np.full(W, -1, np.int64)
        self.n_cmp = 0
        if role.kv_source:
            r = int(role.ratio)
            cap = max_len // r + 1
            self.cmp_kv = np.zeros((cap, D), F32)
            self.idx_k = np.zeros((cap, int(cfg.index_head_dim)), F32)
            if r >= 2:
                self.kv_state = np.zeros((r, D), F32)
                self.score_state = np.full((r, D), -np.inf, F32)


class Sequence:
    """All the state of one sequence (§14), sized by its own context `max_len`.

    caches[L]        LayerCache of backbone layer L
    dspark[s]        LayerCache (window ring only) of DSpark stage s, fed one main_kv per main
                     step by forward_spec
    engram_hash      engram.NgramHash with its persistent cache of compressed ids (or None)
    shared_index_k   index_keys='reference' only: the layer whose index-key cache the shared
                     `index_k` slot (§6.6, §16.2) currently views (None: never written)
    main_hidden      bf16 f32[S, n_targets·dim]: the DSpark target hiddens of the LAST call
    pos              positions processed so far (the next call's start_pos)
    dump             dict of named intermediates of the last forward (Model(dump=True))
    spec_dump        the same for the last forward_spec
    """

    def __init__(self, model, max_len=None):
        cfg = model.cfg
        self.model = model
        self.max_len = int(max_len if max_len is not None else model.max_positions)
        if self.max_len > model.max_positions:
            raise ValueError(f"max_len {self.max_len} exceeds the model's RoPE tables "
                             f"({model.max_positions} positions)")
        self.caches = {r.id: LayerCache(cfg, r, self.max_len) for r in model.backbone_roles}
        self.dspark = [LayerCache(cfg, r, self.max_len) for r in model.mtp_roles]
        self.engram_hash = (engram.NgramHash(cfg, model.engram_map)
                            if model.engram_map is not None else None)
        self.shared_index_k = None
        self.main_hidden = None
        self.pos = 0
        self.dump = None
        self.spec_dump = None
        self.calls = 0


# ------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------

class Model:
    """Loads config.json, the raw weights (own safetensors reader), the Engram token map from
    model_dir/tokenizer.json (required when Engram layers exist) and one RoPE table per
    (base, YaRN) pair of the roles (§2.8).

    overrides: config fields to replace before the roles are derived (tests use it to change
    window_size or index_topk, which the weights do not depend on).
    max_positions: the RoPE table length (default config max_seq_len); DSpark needs positions up
    to start_pos + dspark_block_size, so the tables get that many extra rows."""

    def __init__(self, model_dir, index_keys="own", attn_slots="compact", dump=False,
                 overrides=None, max_positions=None):
        if index_keys not in INDEX_KEYS:
            raise ValueError(f"index_keys must be one of {INDEX_KEYS}, not {index_keys!r}")
        if attn_slots not in ATTN_SLOTS:
            raise ValueError(f"attn_slots must be one of {ATTN_SLOTS}, not {attn_slots!r}")
        self.model_dir = model_dir
        self.index_keys = index_keys
        self.attn_slots = attn_slots
        self.dump = bool(dump)
        cfg = config_mod.load_config(model_dir)
        for k, v in (overrides or {}).items():
            if not hasattr(cfg, k):
                raise AttributeError(f"config has no field {k!r}")
            setattr(cfg, k, v)
        self.cfg = cfg
        self.roles = list(config_mod.layer_roles(cfg))
        n_layers = int(cfg.n_layers)
        self.backbone_roles = [r for r in self.roles if not getattr(r, "is_mtp", r.id >= n_layers)]
        self.mtp_roles = [r for r in self.roles if getattr(r, "is_mtp", r.id >= n_layers)]
        self.tensors = safetensors.load_model(model_dir)
        self.weight_cache = strict.WeightCache()     # derived copies of self.tensors

        self.max_positions = int(max_positions if max_positions is not None else cfg.max_seq_len)
        n_pos = self.max_positions + int(cfg.dspark_block_size) + 1
        self._ropes = {}
        self.layers = [Layer(self, r, self._rope(r, n_pos)) for r in self.backbone_roles]
        self.mtp = [Layer(self, r, self._rope(r, n_pos)) for r in self.mtp_roles]

        self.engram_map = None
        if list(cfg.engram_layer_ids):
            tok = os.path.join(model_dir, "tokenizer.json")
            if not os.path.exists(tok):
                raise FileNotFoundError(f"{tok}: the model has Engram layers "
                                        f"{list(cfg.engram_layer_ids)}, which need the tokenizer "
                                        "for the compressed token map (§8.2)")
            self.engram_map = engram.engram_token_map(tok)
            self.engram_weights = {L: engram.engram_weights(self.tensors, L)
                                   for L in cfg.engram_layer_ids}

        self._embed_bits = self.tensors["embed.weight"]                  # BF16 bits [V, dim]
        self.norm_w = self.tensors["norm.weight"]

    # -- helpers --------------------------------------------------------------------------

    def _rope(self, role, n_pos):
        key = (float(role.rope_base), bool(role.yarn))
        if key not in self._ropes:
            cos, sin = ops.rope_table(self.cfg, key[0], key[1], n_pos)
            self._ropes[key] = Rope(cos, sin)
        return self._ropes[key]

    def head_weight(self):
        """head.weight (BF16 bits; the fp32 head of §2.6 / §3.2 step 8 is its exact up-cast, which
        ops does — and caches — inside linear_f32)."""
        return self.tensors["head.weight"]

    def embed(self, ids):
        """§4 step 3: bf16 rows of embed.weight (no scaling)."""
        ids = np.asarray(ids, dtype=np.int64)
        V = int(self.cfg.vocab_size)
        if ids.size and (ids.min() < 0 or ids.max() >= V):
            raise ValueError(f"token id out of range 0..{V - 1}")
        return formats.from_bf16_bits(np.asarray(self._embed_bits[ids]))

    def new_sequence(self, max_len=None):
        return Sequence(self, max_len)

    # -- §4 forward -----------------------------------------------------------------------

    def forward(self, seq, ids, start_pos, image_mask=None):
        """§4 Transformer.forward for one sequence, returning f32 logits [S, vocab] for EVERY
        position (§4 step 9 without the "last position only" cut). image_mask: bool[S], True for
        image-span tokens (gate bias_vl, Engram DEAD/gate 0); None = text only. The image
        embeddings themselves (§11.5) are not merged: vision is out of scope."""
        with strict.cache_scope(self.weight_cache):
            return self._forward(seq, ids, start_pos, image_mask)

    def _forward(self, seq, ids, start_pos, image_mask):
        cfg = self.cfg
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        S = ids.size
        start_pos = int(start_pos)
        if S == 0:
            raise ValueError("forward needs at least one token")
        if seq.model is not self:
            raise ValueError("the sequence belongs to another Model")
        if start_pos != seq.pos:
            raise ValueError(f"start_pos {start_pos}: this sequence has processed {seq.pos} "
                             "positions; calls must be contiguous (use a new Sequence to restart)")
        if start_pos + S > seq.max_len:
            raise ValueError(f"positions up to {start_pos + S - 1} exceed the sequence's max_len "
                             f"{seq.max_len}")
        if self.attn_slots == "reference" and not (start_pos == 0 or S == 1):
            raise ValueError("attn_slots='reference' reproduces the reference's slot lists, which "
                             "exist only for a prefill at start_pos 0 and decode (S = 1); chunked "
                             f"prefill (S = {S} at start_pos {start_pos}) needs attn_slots='compact'")
        img = (np.zeros(S, bool) if image_mask is None
               else np.asarray(image_mask, bool).reshape(S))
        dump = {} if self.dump else None

        # §4 steps 1–2: Engram hashes (the mask is "not an image token").
        hashes = None
        if seq.engram_hash is not None:
            hashes = seq.engram_hash(ids, start_pos, ~img)
        # Steps 3, 5, 6: embedding, hc copies, identity pre-mix.
        h = self.embed(ids)
        hc = int(cfg.hc_mult)
        X = np.repeat(h[:, None, :], hc, axis=1).astype(F32)
        pre = np.zeros((S, hc), F32)
        pre[:, 0] = 1
        if dump is not None:
            dump["embed"] = h
        hand = Handoff()
        targets = []
        for layer in self.layers:
            role = layer.role
            tag = f"L{role.id}."
            if role.engram_index >= 0:                                   # step 7a
                X = self._engram(X, hashes[:, role.engram_index], ~img, role, dump, tag)
            if role.dspark_target:                                       # step 7b
                targets.append(_copies_mean(X))
            X, pre = self.block(layer, X, start_pos, pre, img, seq, hand, dump, tag)
        logits = self.final(X, pre, dump)                                # steps 8–9
        seq.main_hidden = (np.concatenate(targets, axis=-1) if targets else None)  # step 11
        seq.pos = start_pos + S
        seq.calls += 1
        seq.dump = dump
        return logits

    def _engram(self, X, hashes, mask, role, dump, tag):
        """§8.4 before the block of an Engram layer."""
        w = self.engram_weights[role.id]
        if dump is None:
            return engram.engram_forward(X, hashes, mask, w, self.cfg)
        out, inter = engram.engram_forward(X, hashes, mask, w, self.cfg, return_intermediates=True)
        dump[tag + "engram_hashes"] = hashes
        dump[tag + "engram_gate"] = inter["gate"]
        dump[tag + "engram_out"] = out
        return out

    def final(self, X, pre, dump=None):
        """§4 steps 8–9: collapse with the last FFN pre-mix, final norm, fp32 head on all
        positions."""
        x = ops.hc_pre(X, pre)
        x = ops.rmsnorm(x, self.norm_w, self.cfg.norm_eps)
        logits = ops.linear_f32(x, self.head_weight())
        if dump is not None:
            dump["final_x"] = x
            dump["logits"] = logits
        return logits

    # -- §5.4 Block -------------------------------------------------------------------------

    def block(self, layer, X, start_pos, pre_in, img, seq, hand, dump=None, tag="",
              attn_fn=None):
        """§5.4 Block.forward with the delayed pre-mix: the attention input uses pre_in (the
        previous block's FFN pre, identity for the first), the FFN input the attention pre of
        this block; returns (X, pre_f). attn_fn(x_normed) overrides the attention (DSpark)."""
        cfg = self.cfg
        eps = cfg.norm_eps
        R = X
        pre_a, post_a, comb_a = self._mixes(layer, X, "attn")
        a_in = ops.rmsnorm(ops.hc_pre(X, pre_in), layer.w("attn_norm.weight"), eps)
        if attn_fn is None:
            a = attention_forward(self, layer, a_in, start_pos, seq, hand, dump, tag)
        else:
            a = attn_fn(a_in)
        X = ops.hc_post(a, R, post_a, comb_a)
        R = X
        pre_f, post_f, comb_f = self._mixes(layer, X, "ffn")
        f_in = ops.rmsnorm(ops.hc_pre(X, pre_a), layer.w("ffn_norm.weight"), eps)
        f = self.moe(layer, f_in, img, dump, tag)
        X = ops.hc_post(f, R, post_f, comb_f)
        if dump is not None:
            for nm, v in (("hc_attn_pre", pre_a), ("hc_attn_post", post_a),
                          ("hc_attn_comb", comb_a), ("hc_ffn_pre", pre_f),
                          ("hc_ffn_post", post_f), ("hc_ffn_comb", comb_f),
                          ("attn_in", a_in), ("attn_out", a), ("ffn_in", f_in),
                          ("moe_out", f), ("out", X)):
                dump[tag + nm] = v
        return X, pre_f

    def _mixes(self, layer, X, which):
        """§5.1 hc_mixes(X, hc_<which>_fn, scale, base) → (pre, post, comb)."""
        cfg = self.cfg
        return ops.hc_mixes(X, layer.w(f"hc_{which}_fn"), layer.w(f"hc_{which}_scale"),
                            layer.w(f"hc_{which}_base"), cfg.norm_eps, cfg.hc_eps,
                            int(cfg.hc_sinkhorn_iters))

    # -- §7 MoE -----------------------------------------------------------------------------

    def moe(self, layer, x, img, dump=None, tag=""):
        """§7 MoE of a layer on x bf16 f32[N, dim]; image tokens route with gate.bias_vl."""
        cfg = self.cfg
        mtp = layer.role.is_mtp
        topk = int(cfg.dspark_n_activated_experts if mtp else cfg.n_activated_experts)
        gate_w = layer.w("ffn.gate.weight")
        bias = layer.w("ffn.gate.bias")
        bias_vl = layer.w("ffn.gate.bias_vl") if img.any() else None
        mask = img if img.any() else None

        def experts(e):
            b = f"ffn.experts.{e}."
            return (layer.fp4(b + "w1"), layer.fp4(b + "w3"), layer.fp4(b + "w2"))

        shared = None
        if int(cfg.n_shared_experts) > 0:
            b = "ffn.shared_experts."
            shared = (layer.fp8(b + "w1"), layer.fp8(b + "w3"), layer.fp8(b + "w2"))
        y = ops.moe(x, gate_w, bias, experts, shared, cfg, topk=topk, gate_bias_vl=bias_vl,
                    image_mask=mask)
        if dump is not None:
            # the routing ops.moe used (the same deterministic gate call)
            idx, wts = ops.gate(x, gate_w, bias, cfg, topk=topk, bias_vl=bias_vl, image_mask=mask)
            dump[tag + "moe_idx"] = idx
            dump[tag + "moe_wts"] = wts
        return y


def _copies_mean(X):
    """§4 step 7b: the bf16 mean over the hc copies (fp32 accumulate, one bf16 rounding; strict:
    exact sum / n rounded to fp32, then bf16)."""
    return formats.round_bf16(strict.smean(X, axis=1))


# ------------------------------------------------------------------------------------------
# Drivers: the call patterns and greedy generation
# ------------------------------------------------------------------------------------------

def parse_mode(mode):
    """'prefill' | 'decode' | 'chunk:N' → chunk size (None = the whole prompt at once)."""
    if mode in (None, "prefill"):
        return None
    if mode == "decode":
        return 1
    if isinstance(mode, str) and mode.startswith("chunk:"):
        n = int(mode.split(":", 1)[1])
        if n < 1:
            raise ValueError("chunk size must be ≥ 1")
        return n
    raise ValueError(f"mode must be prefill, decode or chunk:N, not {mode!r}")


def run_logits(model, ids, mode="prefill", seq=None, on_call=None):
    """Teacher-forced logits f32[T, vocab] of every position of `ids`, fed in the calls of
    `mode` ('prefill': one call at 0; 'decode': one token per call; 'chunk:N': calls of N)."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    n = parse_mode(mode)
    seq = seq if seq is not None else model.new_sequence(max(len(ids), 1))
    step = len(ids) if n is None else n
    outs = []
    for s in range(0, len(ids), step):
        outs.append(model.forward(seq, ids[s:s + step], s))
        if on_call is not None:
            on_call(seq, s)
    return np.concatenate(outs, axis=0)


def generate(model, ids, n_new, mode="prefill", max_len=None):
    """Greedy continuation (§10.1 at temperature 0: argmax, lowest index on ties): the prompt is
    fed as `mode` says, then one token per call. Returns (generated ids, logits of every
    position processed)."""
    ids = [int(i) for i in np.asarray(ids).reshape(-1)]
    if not ids:
        raise ValueError("generate needs a non-empty prompt")
    seq = model.new_sequence(max_len or (len(ids) + n_new))
    logits = run_logits(model, ids, mode, seq=seq)
    all_logits = [logits]
    out = []
    nxt = int(np.argmax(logits[-1]))
    for k in range(n_new):
        out.append(nxt)
        if k == n_new - 1:
            break
        lg = model.forward(seq, [nxt], seq.pos)
        all_logits.append(lg)
        nxt = int(np.argmax(lg[-1]))
    return out, np.concatenate(all_logits, axis=0)


# DSpark (§9) lives in dspark.py; bound here as methods.
from .dspark import forward_spec as _forward_spec, forward_head as _forward_head  # noqa: E402

def _in_model_cache(fn):
    def method(self, *args, **kwargs):
        with strict.cache_scope(self.weight_cache):
            return fn(self, *args, **kwargs)
    method.__doc__ = fn.__doc__
    method.__name__ = fn.__name__
    return method


Model.forward_spec = _in_model_cache(_forward_spec)
Model.forward_head = _in_model_cache(_forward_head)
