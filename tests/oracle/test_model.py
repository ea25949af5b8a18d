"""Self-checks of the oracle's model (dsv4_oracle/model.py, attention.py, compressor_indexer.py,
dspark.py) on the tiny fixture: call-pattern invariance, the §16.2 / §16.4 switches exactly as the
spec predicts them under strict numerics, DSpark, dumps and the CLI.

Run: cd tests/oracle && /usr/bin/python3 -m unittest -v test_model
Needs the dsv4 binary (DSV4_BINARY, default ../../build/dsv4) for `make-fixture` and the DeepSeek
V3 tokenizer (DSV4_TEST_DATA/tokenizer.json, from tests/data/fetch_test_data.sh).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

from dsv4_oracle import model as M  # noqa: E402

# A fixed English text; ids come from the tokenizer's vocabulary (byte-level "Ġword" tokens),
# so the sequence has real-text-like repetitions for the Engram n-grams.
TEXT = ("the quick brown fox jumps over the lazy dog and the dog sleeps in the sun while the fox "
        "runs into the forest where the trees are tall and the river is cold so the fox drinks "
        "water and then the fox returns to the lazy dog who is still sleeping in the warm sun "
        "because the day is long and the night is short in the summer when the birds sing and "
        "the children play in the park near the river with their friends and their parents "
        "watch them from the bench under the old tree that was planted by the grandfather of "
        "the mayor of the town many years ago")
N_TOKENS = 100


def _binary():
    b = os.environ.get("DSV4_BINARY") or os.path.join(REPO, "build", "dsv4")
    return b


def _tokenizer():
    d = os.environ.get("DSV4_TEST_DATA") or os.path.join(REPO, "tests", "data", "downloaded")
    return os.path.join(d, "tokenizer.json")


def text_ids(tokenizer_json, n):
    with open(tokenizer_json, "r", encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    ids = [0]                                   # BOS
    for k, w in enumerate(TEXT.split()):
        t = vocab.get(("Ġ" if k else "") + w, vocab.get(w))
        if t is not None:
            ids.append(int(t))
    while len(ids) < n:
        ids = ids + ids[1:]
    ids = ids[:n]
    assert all(0 <= i < 128815 for i in ids)
    return ids


def partition(mode, W, topk, r, p, S=None):
    """§16.4 in strict numerics: the non-empty 64-slot blocks of query p's slot list, as frozensets
    of items ('w', i) (i-th visible window position) and ('c', i) (i-th selected compressed row,
    ascending). Within a block the order is irrelevant (exact per-block sums, rule 2), and empty
    blocks are no-ops, so two modes give the same attention output for identical inputs iff they
    give the same partition. mode: 'compact', 'prefill' (reference prefill at 0 of S tokens),
    'decode' (reference decode)."""
    n_w = min(p + 1, W)
    c = (p + 1) // r if r else 0
    k_valid = min(topk, c) if r else 0
    if mode == "compact":
        slots = [("w", i) for i in range(n_w)] + [("c", i) for i in range(k_valid)]
    elif mode == "prefill":
        Wp = min(S, W)
        base = max(0, p - W + 1)
        win = [("w", s - base) if s <= p else None for s in range(base, base + Wp)]
        T = S // r if r else 0
        k = min(topk, T) if r else 0
        slots = win + [("c", i) if i < k_valid else None for i in range(k)]
    elif mode == "decode":
        o = (p % W) + 1
        ring = [(o + a) % W for a in range(W)]
        # slot s holds position s (ring not wrapped before W); the i-th visible = age order
        vis = [s for s in ring if s <= p]
        rank = {s: i for i, s in enumerate(vis)}
        win = [("w", rank[s]) if s <= p else None for s in ring]
        slots = win + [("c", i) for i in range(k_valid)]
    else:
        raise ValueError(mode)
    blocks = []
    for b in range(0, len(slots), 64):
        items = frozenset(x for x in slots[b:b + 64] if x is not None)
        if items:
            blocks.append(items)
    return tuple(blocks)


def first_divergence(cfg, mode_a, mode_b, n, S):
    """The first position at which some layer's partition differs between two modes (the
    earliest position whose logits may differ), or None."""
    W, topk = int(cfg.window_size), int(cfg.index_topk)
    ratios = sorted(set(int(r) for r in cfg.compress_ratios[: int(cfg.n_layers)]))
    for p in range(n):
        for r in ratios:
            if partition(mode_a, W, topk, r, p, S) != partition(mode_b, W, topk, r, p, S):
                return p
    return None


# ------------------------------------------------------------------------------------------------
# An independent, plain float64 re-computation of the attention of every layer (no ops/strict, own
# RoPE tables), compared with the oracle's dumps: it checks the formulas and the wiring (which
# weights, RoPE bases/positions, groups, keys, candidates, top-k), not the bits of every rounding.
# ------------------------------------------------------------------------------------------------

class Naive:
    def __init__(self, model_dir, cfg):
        from dsv4_oracle import formats, safetensors
        self.fm = formats
        self.t = safetensors.load_model(model_dir)
        self.cfg = cfg

    def bf(self, x):
        return self.fm.round_bf16(np.asarray(x, np.float32)).astype(np.float64)

    def val(self, n):
        a = self.t[n]
        return (self.fm.from_bf16_bits(a) if a.dtype == np.uint16 else a).astype(np.float64)

    def deq8(self, n):
        c = self.t[n + ".weight"]
        s = self.fm.e8m0_decode(self.t[n + ".scale"]).astype(np.float64)
        s = np.repeat(np.repeat(s, 32, 0), 32, 1)[: c.shape[0], : c.shape[1]]
        return self.fm.e4m3_decode(c).astype(np.float64) * s

    def lin8(self, x, n):
        xq = self.fm.act_quant_qdq(np.asarray(x, np.float32)).astype(np.float64)
        return self.bf(xq @ self.deq8(n).T)

    def rms(self, x, w):
        x = np.asarray(x, np.float64)
        return self.bf(w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-20)))

    def rope(self, x, pos, base, yarn, inv=False):
        import math
        cfg = self.cfg
        P = cfg.rope_head_dim // 2
        f = 1.0 / (base ** (np.arange(0, 2 * P, 2) / (2 * P)))
        if yarn:
            def corr(r):
                return 2 * P * math.log(cfg.original_seq_len / (r * 2 * math.pi)) / (2 * math.log(base))
            lo, hi = max(math.floor(corr(cfg.beta_fast)), 0), min(math.ceil(corr(cfg.beta_slow)), 2 * P - 1)
            ramp = np.clip((np.arange(P) - lo) / max(hi - lo, 0.001), 0, 1)
            f = f / cfg.rope_factor * ramp + f * (1 - ramp)
        ang = np.asarray(pos, np.float64)[:, None] * f[None, :]
        c, s = np.cos(ang), (-1 if inv else 1) * np.sin(ang)
        x = np.array(x, np.float64)
        tl = x[..., x.shape[-1] - 2 * P:]
        a, b = tl[..., 0::2].copy(), tl[..., 1::2].copy()
        sh = (c.shape[0],) + (1,) * (x.ndim - 2) + (P,)
        c, s = c.reshape(sh), s.reshape(sh)
        tl[..., 0::2] = a * c - b * s
        tl[..., 1::2] = a * s + b * c
        return self.bf(x)


class ModelTest(unittest.TestCase):
    tmp = None
    model_dir = None
    runs = {}
    models = {}
    timings = {}

    @classmethod
    def setUpClass(cls):
        binary, tok = _binary(), _tokenizer()
        if not os.path.exists(binary):
            if os.environ.get("DSV4_BINARY"):
                raise RuntimeError(f"DSV4_BINARY={binary} does not exist")
            raise unittest.SkipTest(f"no dsv4 binary at {binary} (build the dsv4 target)")
        if not os.path.exists(tok):
            raise unittest.SkipTest(f"no tokenizer at {tok} (run tests/data/fetch_test_data.sh)")
        cls.tmp = tempfile.mkdtemp(prefix="dsv4_oracle_model_")
        cls.model_dir = os.path.join(cls.tmp, "tiny")
        subprocess.run([binary, "make-fixture", "--preset", "tiny", "--seed", "1", "--out",
                        cls.model_dir, "--tokenizer", tok, "-q"], check=True)
        cls.ids = text_ids(tok, N_TOKENS)
        cls.runs = {}
        cls.models = {}
        cls.timings = {}

    @classmethod
    def tearDownClass(cls):
        if cls.tmp:
            shutil.rmtree(cls.tmp, ignore_errors=True)
        if cls.timings:
            print("\n  timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in cls.timings.items()),
                  file=sys.stderr)

    @classmethod
    def model(cls, index_keys="own", attn_slots="compact", window=None, dump=False):
        key = (index_keys, attn_slots, window, dump)
        if key not in cls.models:
            ov = {"window_size": window} if window else None
            cls.models[key] = M.Model(cls.model_dir, index_keys=index_keys, attn_slots=attn_slots,
                                      overrides=ov, dump=dump)
        return cls.models[key]

    @classmethod
    def logits(cls, mode, index_keys="own", attn_slots="compact", window=None, n=N_TOKENS):
        key = (mode, index_keys, attn_slots, window, n)
        if key not in cls.runs and mode == "decode":
            # a decode run's first n positions do not depend on what follows: reuse a longer one
            for (m2, k2, a2, w2, n2), v in cls.runs.items():
                if (m2, k2, a2, w2) == (mode, index_keys, attn_slots, window) and n2 >= n:
                    return v[:n]
        if key not in cls.runs:
            m = cls.model(index_keys, attn_slots, window)
            t0 = time.time()
            cls.runs[key] = M.run_logits(m, cls.ids[:n], mode)
            cls.timings[f"{mode}/{index_keys}/{attn_slots}/W{window or 32}/{n}"] = time.time() - t0
        return cls.runs[key]

    # -- call patterns ------------------------------------------------------------------------

    def test_prefill_decode_chunks_identical(self):
        """own + compact: one prefill ≡ token-by-token decode ≡ chunked prefill (1, 3, 7, 32, 33),
        bit for bit on every position's float32 logits."""
        ref = self.logits("prefill")
        self.assertEqual(ref.shape, (N_TOKENS, 129280))
        self.assertEqual(ref.dtype, np.float32)
        for mode in ("decode", "chunk:1", "chunk:3", "chunk:7", "chunk:32", "chunk:33"):
            # chunk:1 is the same sequence of calls as decode (S = 1 at every position)
            got = self.logits("decode" if mode == "chunk:1" else mode)
            bad = np.nonzero(~np.all(got == ref, axis=1))[0]
            self.assertTrue(np.array_equal(got, ref),
                            f"{mode}: logits differ from prefill at positions {bad[:10]}")

    def test_logits_not_degenerate(self):
        lg = self.logits("prefill")
        self.assertTrue(np.all(np.isfinite(lg)))
        self.assertGreater(float(lg.std(axis=1).min()), 0.1)
        self.assertGreater(len(set(np.argmax(lg, axis=1).tolist())), 1)

    # -- §16.2 index keys ---------------------------------------------------------------------

    def test_reference_index_keys(self):
        """§16.2: prefill at 0 writes every kv source's keys, so 'reference' = 'own' there. In
        decode, a ratio-2 kv source at an even position has no latent and scores the rows of the
        last writer (the ratio-1 layer of the previous call); the selection can only change once a
        query sees more than index_topk rows, so logits are identical before the first even p with
        (p+1)//2 > index_topk and differ after it."""
        m = self.model("reference")
        cfg = m.cfg
        self.assertTrue(np.array_equal(self.logits("prefill", "reference"), self.logits("prefill")))
        own = self.logits("decode")
        refk = self.logits("decode", "reference")
        topk = int(cfg.index_topk)
        r2 = [r for r in m.backbone_roles if r.kv_source and r.ratio == 2]
        self.assertTrue(r2, "the preset has ratio-2 kv sources")
        p0 = next(p for p in range(N_TOKENS) if p % 2 == 0 and (p + 1) // 2 > topk)
        self.assertTrue(np.array_equal(own[:p0], refk[:p0]))
        self.assertFalse(np.array_equal(own[p0:], refk[p0:]),
                         f"reference keys should change the logits from position {p0} on")
        # the shared slot's last writer is the ratio-1 kv source (it writes on every call)
        seq = m.new_sequence(8)
        for p in range(4):
            m.forward(seq, [self.ids[p]], p)
        self.assertEqual(seq.shared_index_k, cfg.candidate_source_layer)

    # -- §16.4 slot lists -----------------------------------------------------------------------

    @classmethod
    def dumped_run(cls, mode, attn_slots, n=N_TOKENS):
        """A run with dumps: (logits, [per call: (start_pos, dump)]); its logits are cached as the
        plain run's (dumping changes nothing)."""
        m = cls.model(attn_slots=attn_slots, dump=True)
        calls = []
        t0 = time.time()
        lg = M.run_logits(m, cls.ids[:n], mode, on_call=lambda seq, s: calls.append((s, seq.dump)))
        cls.timings[f"{mode}/own/{attn_slots}/W32/{n} (dump)"] = time.time() - t0
        cls.runs.setdefault((mode, "own", attn_slots, None, n), lg)
        return lg, calls

    def test_reference_slots_tiny_preset(self):
        """§16.4 on the tiny preset (W = 32, index_topk = 40). The reference's lists differ from
        the compact ones only by −1 entries (trailing window entries in prefill, leading ones in
        decode, both before the ring is full): every query lists the same valid slots in the same
        order, and from position W−1 on the reference lists have −1 only at the end. A valid slot
        changes its 64-block only if some query p < W−1 has min(topk, (p+1)//r) > 64 − W,
        impossible for W ≤ 32; so reference prefill ≡ reference decode ≡ compact, bit for bit."""
        cfg = self.model().cfg
        W = int(cfg.window_size)
        for a, b in (("prefill", "compact"), ("decode", "compact"), ("prefill", "decode")):
            self.assertIsNone(first_divergence(cfg, a, b, N_TOKENS, N_TOKENS))
        n = N_TOKENS
        lc, dc = self.dumped_run("prefill", "compact", n)
        lp, dp = self.dumped_run("prefill", "reference", n)
        ld, dd = self.dumped_run("decode", "reference", n)
        self.assertTrue(np.array_equal(lp, lc))
        self.assertTrue(np.array_equal(ld, lc))
        leading = 0
        for role in self.model().backbone_roles:
            t = f"L{role.id}."

            def pairs(row_pos, row_cmp):
                return [(int(a), int(b)) for a, b in zip(row_pos, row_cmp) if a >= 0 or b >= 0]

            for p in range(n):
                c_pos, c_cmp = dc[0][1][t + "attn_slot_pos"][p], dc[0][1][t + "attn_slot_cmp"][p]
                want = pairs(c_pos, c_cmp)
                # compact rows: no empty slot before a valid one (padding only at the end)
                valid_c = (c_pos >= 0) | (c_cmp >= 0)
                self.assertFalse(np.any(valid_c[1:] & ~valid_c[:-1]), f"{t} compact p={p}")
                for lists in ((dp[0][1][t + "attn_slot_pos"][p], dp[0][1][t + "attn_slot_cmp"][p]),
                              (dd[p][1][t + "attn_slot_pos"][0], dd[p][1][t + "attn_slot_cmp"][0])):
                    self.assertEqual(pairs(*lists), want, f"{t} p={p}")
                    valid = (lists[0] >= 0) | (lists[1] >= 0)
                    interior = np.any(valid[1:] & ~valid[:-1])
                    if p >= W - 1:
                        self.assertFalse(interior, f"{t} p={p}: −1 inside the list")
                if p < W - 1 and not valid[0]:
                    leading += 1
        self.assertGreater(leading, 0)   # the decode lists do start with −1 entries
        self.assertEqual(dd[1][1]["L0.attn_slot_pos"][0].tolist(), [-1] * (W - 2) + [0, 1])

    def test_reference_slots_chunked_refused(self):
        m = self.model(attn_slots="reference")
        seq = m.new_sequence(16)
        m.forward(seq, self.ids[:4], 0)
        with self.assertRaisesRegex(ValueError, "chunked"):
            m.forward(seq, self.ids[4:8], 4)

    def test_input_errors(self):
        """§16.6: with Engram on, ids the tokenizer does not define are rejected; a model with
        Engram layers needs its tokenizer.json; calls must be contiguous."""
        m = self.model()
        seq = m.new_sequence(8)
        with self.assertRaisesRegex(ValueError, "Engram|tokenizer"):
            m.forward(seq, [5, 129000], 0)
        seq = m.new_sequence(8)
        m.forward(seq, self.ids[:2], 0)
        with self.assertRaisesRegex(ValueError, "contiguous"):
            m.forward(seq, self.ids[3:4], 3)
        bare = os.path.join(self.tmp, "no_tokenizer")
        os.makedirs(bare, exist_ok=True)
        for f in os.listdir(self.model_dir):
            if f != "tokenizer.json" and not os.path.exists(os.path.join(bare, f)):
                os.symlink(os.path.join(self.model_dir, f), os.path.join(bare, f))
        with self.assertRaisesRegex(FileNotFoundError, "tokenizer"):
            M.Model(bare)

    def _check_divergence(self, window, a_mode, a_slots, b_mode, b_slots, n):
        m = self.model(attn_slots="compact", window=window)
        cfg = m.cfg
        pa = "compact" if a_slots == "compact" else a_mode
        pb = "compact" if b_slots == "compact" else b_mode
        p0 = first_divergence(cfg, pa, pb, n, n)
        la = self.logits(a_mode, attn_slots=a_slots, window=window, n=n)
        lb = self.logits(b_mode, attn_slots=b_slots, window=window, n=n)
        if p0 is None:
            self.assertTrue(np.array_equal(la, lb), f"W={window}: {pa} vs {pb} predicted equal")
            return None
        self.assertTrue(np.array_equal(la[:p0], lb[:p0]),
                        f"W={window}: {pa} vs {pb} must agree before position {p0}")
        self.assertFalse(np.array_equal(la[p0], lb[p0]),
                         f"W={window}: {pa} vs {pb} predicted to differ at position {p0}")
        return p0

    def test_reference_slots_window_48(self):
        """W = 48 (a config override; the weights do not depend on the window). With a prefill of
        S ≥ W tokens the compressed slots start at slot W in both reference modes, so reference
        prefill ≡ reference decode; the compact list packs up to 64 valid slots into block 0, so
        the reference modes leave it at the predicted position (p = 16: 17 window + 17 ratio-1
        rows > 64 − 48). A shorter prefill (S = 40 < W) has only S window slots and leaves the
        decode lists at the same position."""
        n = 56
        self.assertIsNone(self._check_divergence(48, "prefill", "reference", "decode", "reference", n))
        self.assertEqual(self._check_divergence(48, "prefill", "compact", "prefill", "reference", n),
                         16)
        self.assertEqual(self._check_divergence(48, "prefill", "reference", "decode", "reference", 40),
                         16)

    def test_reference_slots_window_80(self):
        """W = 80 > 64 (like the spec's measurement): the window slots themselves straddle blocks
        differently in prefill (valid first) and decode (valid last), so the reference's own prefill
        and decode differ, from the position the partition predicts."""
        n = 24
        p0 = self._check_divergence(80, "prefill", "reference", "decode", "reference", n)
        self.assertIsNotNone(p0)

    def test_independent_recompute(self):
        """Every layer's attention of a 60-token prefill, recomputed in plain float64 from the
        checkpoint (window KV, compressor groups and softmax pooling, latents and keys rotated at
        j·r, indexer scores, candidate blocks, top-k, the slot set of every query, sparse
        attention with the sink): index scores bit-equal (same bf16 rounding points), candidate
        masks and selections equal, attention core within bf16 rounding (|Δ| < 1%)."""
        S = 60
        m = self.model(dump=True)
        cfg = m.cfg
        seq = m.new_sequence(S)
        m.forward(seq, self.ids[:S], 0)
        d = seq.dump
        nv = Naive(self.model_dir, cfg)
        H, D, W = cfg.n_heads, cfg.head_dim, cfg.window_size
        nh, hd = cfg.index_n_heads, cfg.index_head_dim
        pos = np.arange(S)
        src = {}       # kv source -> (compressed rows, index keys)
        sel_of = {}    # index source -> selected rows per query
        cand = None
        for role in m.backbone_roles:
            L, r = role.id, role.ratio
            p = f"layers.{L}."
            base = cfg.compress_rope_theta if r else cfg.rope_theta
            x = d[f"L{L}.attn_in"].astype(np.float64)
            qr = nv.rms(nv.lin8(x, p + "attn.wq_a"), nv.val(p + "attn.q_norm.weight"))
            q = nv.rope(nv.lin8(qr, p + "attn.wq_b").reshape(S, H, D), pos, base, r > 0)
            kv = nv.rope(nv.rms(nv.lin8(x, p + "attn.wkv"), nv.val(p + "attn.kv_norm.weight")),
                         pos, base, r > 0)
            kv = nv.fm.act_quant_qdq(kv.astype(np.float32)).astype(np.float64)
            if role.kv_source:
                wkv = nv.val(p + "attn.compressor.wkv.weight")
                if r == 1:
                    pooled = nv.bf(x @ wkv.T)
                else:
                    G = S // r
                    kc = (x @ wkv.T)[: G * r].reshape(G, r, -1)
                    sc = (x @ nv.val(p + "attn.compressor.wgate.weight").T)[: G * r].reshape(G, r, -1)
                    w = np.exp(sc - sc.max(1, keepdims=True))
                    pooled = nv.bf((kc * (w / w.sum(1, keepdims=True))).sum(1))
                lat = nv.rms(pooled, nv.val(p + "attn.compressor.norm.weight"))
                gpos = np.arange(lat.shape[0]) * r
                k = nv.rope(nv.rms(nv.bf(lat @ nv.val(p + "attn.indexer.wk.weight").T),
                                   nv.val(p + "attn.indexer.k_norm.weight")), gpos, base, True)
                k = nv.fm.fp4_qdq_e8m0_b32(k.astype(np.float32)).astype(np.float64)
                cmp = nv.fm.fp4_qdq_e4m3_b16(nv.rope(lat, gpos, base, True).astype(np.float32))
                src[L] = (cmp.astype(np.float64), k)
            c = (pos + 1) // r if r else np.zeros(S, np.int64)
            if role.index_source:
                K = src[role.index_keys_from][1]
                qi = nv.lin8(qr, p + "attn.indexer.wq_b").reshape(S, nh, hd)
                qi = nv.rope(qi, pos, base, True).reshape(S, -1).astype(np.float32)
                qi = nv.fm.fp4_qdq_e8m0_b32(qi).astype(np.float64).reshape(S, nh, hd)
                wt = nv.bf(nv.bf(x @ nv.val(p + "attn.indexer.weights_proj.weight").T)
                           * (hd ** -0.5 * nh ** -0.5))
                z = nv.bf(np.maximum(nv.bf(np.einsum("shd,td->sht", qi, K)), 0) * wt[:, :, None])
                T_ = K.shape[0]
                I = np.where(np.arange(T_)[None, :] < c[:, None], nv.bf(z.sum(1)), -np.inf)
                if role.candidate_source:
                    bs, nb = cfg.candidate_block_size, -(-T_ // cfg.candidate_block_size)
                    Ip = np.full((S, nb * bs), -np.inf)
                    Ip[:, :T_] = I
                    bsc = Ip.reshape(S, nb, bs).max(-1)
                    bsc[np.arange(S), (c - 1) // bs] = np.inf
                    cand = np.zeros((S, T_), bool)
                    for s_ in range(S):
                        top = np.argsort(-bsc[s_], kind="stable")[: cfg.candidate_topk_blocks]
                        for b in top[bsc[s_, top] > -np.inf]:
                            cand[s_, b * bs:(b + 1) * bs] = True
                    self.assertTrue(np.array_equal(cand, d[f"L{L}.candidates"]), f"L{L} candidates")
                if role.uses_candidates:
                    I = np.where(cand, I, -np.inf)
                mine = d[f"L{L}.index_scores"]
                self.assertTrue(np.array_equal(I, mine), f"L{L}: index scores")
                sel_of[L] = [np.sort(np.argsort(-I[s_], kind="stable")[: min(cfg.index_topk, c[s_])])
                             for s_ in range(S)]
            sp, scmp = d[f"L{L}.attn_slot_pos"], d[f"L{L}.attn_slot_cmp"]
            sink = nv.val(p + "attn.attn_sink")
            o = np.zeros((S, H, D))
            for s_ in range(S):
                wp = list(range(max(0, s_ - W + 1), s_ + 1))
                self.assertEqual(sp[s_][sp[s_] >= 0].tolist(), wp, f"L{L} p={s_}: window")
                rows = [kv[j] for j in wp]
                if r:
                    got = scmp[s_][scmp[s_] >= 0].tolist()
                    self.assertEqual(got, sel_of[role.topk_from][s_].tolist(), f"L{L} p={s_}")
                    rows += [src[role.kv_from][0][j] for j in got]
                Kr = np.array(rows)
                lg = np.einsum("hd,nd->hn", q[s_], Kr) * D ** -0.5
                mx = np.maximum(lg.max(1), sink)
                e = np.exp(lg - mx[:, None])
                o[s_] = (e @ Kr) / (e.sum(1) + np.exp(sink - mx))[:, None]
            core = d[f"L{L}.attn_core"]
            self.assertLess(np.abs(o - core).max() / np.abs(core).max(), 1e-2, f"L{L} core")

            # §5.4 wiring (delayed pre-mix) and §5.2/§5.3, from the dumped mixes
            X_in = d[f"L{L}.engram_out"] if role.engram_index >= 0 else (
                d[f"L{L - 1}.out"] if L else np.repeat(d["embed"][:, None], cfg.hc_mult, 1))
            pre_in = d[f"L{L - 1}.hc_ffn_pre"] if L else np.eye(cfg.hc_mult)[0][None].repeat(S, 0)
            X_in = X_in.astype(np.float64)
            a_in = nv.rms((pre_in[:, :, None] * X_in).sum(1), nv.val(p + "attn_norm.weight"))
            self.assertLess(np.abs(a_in - x).max(), 0.01 * np.abs(x).max(), f"L{L} attn_in")
            post, comb = d[f"L{L}.hc_attn_post"], d[f"L{L}.hc_attn_comb"]
            X_mid = nv.bf(post[:, :, None] * d[f"L{L}.attn_out"][:, None, :]
                          + np.einsum("sij,sid->sjd", comb, X_in))
            f_ref = d[f"L{L}.ffn_in"]
            f_in = nv.rms((d[f"L{L}.hc_attn_pre"][:, :, None] * X_mid).sum(1),
                          nv.val(p + "ffn_norm.weight"))
            self.assertLess(np.abs(f_in - f_ref).max(), 0.01 * np.abs(f_ref).max(), f"L{L} ffn_in")

            # §7 MoE from the dumped FFN input: gate (sqrtsoftplus + bias, top-k, normalised
            # weights × route_scale), SwiGLU experts with clamps, shared expert
            xf = f_ref.astype(np.float64)
            lg_ = xf @ nv.val(p + "ffn.gate.weight").T
            sc_ = np.sqrt(np.log1p(np.exp(lg_)))
            biased = sc_ + nv.val(p + "ffn.gate.bias")
            idx = np.argsort(-biased, axis=1, kind="stable")[:, : cfg.n_activated_experts]
            self.assertTrue(np.array_equal(idx, d[f"L{L}.moe_idx"]), f"L{L} routing")
            wts = np.take_along_axis(sc_, idx, 1)
            wts = wts / (wts.sum(1, keepdims=True) + 1e-20) * cfg.route_scale
            self.assertLess(np.abs(wts - d[f"L{L}.moe_wts"]).max(), 1e-5, f"L{L} weights")

            def ffn(xr, pre, fp4, weight=None):
                def lin(v, n):
                    if not fp4:
                        return nv.lin8(v, n)
                    codes = nv.fm.unpack_fp4(nv.t[n + ".weight"])
                    sc = np.repeat(nv.fm.e8m0_decode(nv.t[n + ".scale"]).astype(np.float64), 32, 1)
                    wq = nv.fm.e2m1_decode(codes).astype(np.float64) * sc
                    vq = nv.fm.act_quant_qdq(np.asarray(v, np.float32)).astype(np.float64)
                    return nv.bf(vq @ wq.T)
                g = np.minimum(lin(xr, pre + "w1"), cfg.swiglu_limit)
                u = np.clip(lin(xr, pre + "w3"), -cfg.swiglu_limit, cfg.swiglu_limit)
                h = g / (1 + np.exp(-g)) * u
                if weight is not None:
                    h = weight[:, None] * h
                return lin(nv.bf(h), pre + "w2")

            y = ffn(xf, p + "ffn.shared_experts.", False)
            for e in range(cfg.n_routed_experts):
                tok, slot = np.nonzero(idx == e)
                if tok.size:
                    y[tok] += ffn(xf[tok], p + f"ffn.experts.{e}.", True, wts[tok, slot])
            moe = d[f"L{L}.moe_out"]
            self.assertLess(np.abs(y - moe).max(), 0.01 * np.abs(moe).max(), f"L{L} moe")

    # -- DSpark, dumps, CLI ---------------------------------------------------------------------

    def test_dspark(self):
        m = self.model(dump=True)
        cfg = m.cfg
        seq = m.new_sequence(64)
        S = 20
        lg = m.forward(seq, self.ids[:S], 0)
        self.assertEqual(seq.main_hidden.shape, (S, len(cfg.dspark_target_layer_ids) * cfg.dim))
        # §4 step 7b: the bf16 mean over the hc copies of each target layer's INPUT
        from dsv4_oracle import formats
        for k, L in enumerate(cfg.dspark_target_layer_ids):
            x_in = seq.dump.get(f"L{L}.engram_out", seq.dump[f"L{L - 1}.out"])
            want = formats.round_bf16(x_in.astype(np.float64).mean(1).astype(np.float32))
            got = seq.main_hidden[:, k * cfg.dim:(k + 1) * cfg.dim]
            self.assertLess(np.abs(got - want).max(), 0.01 * np.abs(want).max())
        nxt = int(np.argmax(lg[-1]))
        self.assertIsNone(m.forward_spec(seq, nxt, seq.main_hidden, 0))
        lg = m.forward(seq, [nxt], S)
        nxt2 = int(np.argmax(lg[-1]))
        out, dl, conf = m.forward_spec(seq, nxt2, seq.main_hidden, S)
        B = int(cfg.dspark_block_size)
        self.assertEqual(out.shape, (B + 1,))
        self.assertEqual(int(out[0]), nxt2)
        self.assertEqual(dl.shape, (B, cfg.vocab_size))
        self.assertEqual(conf.shape, (B,))
        self.assertTrue(np.all(np.isfinite(dl)) and np.all(np.isfinite(conf)))
        self.assertEqual(out[1:].tolist(), np.argmax(dl, axis=1).tolist())
        for s in range(len(m.mtp)):
            self.assertEqual(seq.dspark[s].win_pos[S], S)       # one main_kv per main step
        for k in ("dspark.main_x", "dspark.z", "dspark.markov_e", "dspark.logits",
                  "dspark.confidence", "D0.attn_out", "D0.attn_slots", "D2.moe_idx"):
            self.assertIn(k, seq.spec_dump)
        # draft queries: ring slots 0..S in slot order, then the B draft rows (§9.3)
        W = int(cfg.window_size)
        self.assertEqual(seq.spec_dump["D1.attn_slots"][0].tolist(),
                         list(range(S + 1)) + [W + i for i in range(B)])
        # same inputs, fresh sequence: identical drafts (the forward is a pure function of state)
        seq2 = m.new_sequence(64)
        m.forward(seq2, self.ids[:S], 0)
        m.forward_spec(seq2, nxt, seq2.main_hidden, 0)
        m.forward(seq2, [nxt], S)
        out2, dl2, conf2 = m.forward_spec(seq2, nxt2, seq2.main_hidden, S)
        self.assertTrue(np.array_equal(out, out2) and np.array_equal(dl, dl2)
                        and np.array_equal(conf, conf2))

    def test_dump_names(self):
        m = self.model(dump=True)
        seq = m.new_sequence(40)
        m.forward(seq, self.ids[:40], 0)
        d = seq.dump
        for k in ("embed", "final_x", "logits"):
            self.assertIn(k, d)
        for role in m.backbone_roles:
            t = f"L{role.id}."
            for k in ("hc_attn_pre", "hc_attn_post", "hc_attn_comb", "hc_ffn_pre", "hc_ffn_post",
                      "hc_ffn_comb", "attn_in", "attn_out", "attn_slots", "ffn_in", "moe_idx",
                      "moe_wts", "moe_out", "out"):
                self.assertIn(t + k, d)
            if role.ratio > 0:
                self.assertIn(t + "attn_cmp_pos", d)
                self.assertEqual(d[t + "attn_cmp_pos"].shape[0], 40)
            if role.candidate_source:
                self.assertIn(t + "candidates", d)
            if role.engram_index >= 0:
                self.assertIn(t + "engram_gate", d)
                self.assertEqual(d[t + "engram_gate"].shape, (40, m.cfg.hc_mult))
        self.assertEqual(d["L0.moe_idx"].shape, (40, m.cfg.n_activated_experts))
        self.assertTrue(np.array_equal(d["logits"], self.logits("prefill", n=N_TOKENS)[:40]))

    def test_cli(self):
        ids = ",".join(str(i) for i in self.ids[:6])
        out = os.path.join(self.tmp, "lg.npy")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        subprocess.run([sys.executable, "-m", "dsv4_oracle", "logits", "-m", self.model_dir,
                        "--ids", ids, "--mode", "chunk:4", "--out", out], check=True, cwd=HERE,
                       env=env)
        lg = np.load(out)
        self.assertEqual(lg.shape, (6, 129280))
        self.assertTrue(np.array_equal(lg, self.logits("prefill", n=6)))
        r = subprocess.run([sys.executable, "-m", "dsv4_oracle", "generate", "-m", self.model_dir,
                            "--ids", ids, "-n", "3", "--json"], check=True, cwd=HERE, env=env,
                           capture_output=True, text=True)
        gen = json.loads(r.stdout)["generated_ids"]
        self.assertEqual(len(gen), 3)
        self.assertEqual(gen[0], int(np.argmax(lg[-1])))
        npz = os.path.join(self.tmp, "d.npz")
        subprocess.run([sys.executable, "-m", "dsv4_oracle", "dump", "-m", self.model_dir,
                        "--ids", ids, "--out", npz], check=True, cwd=HERE, env=env)
        with np.load(npz) as z:
            self.assertIn("L6.candidates", z.files)
            self.assertTrue(np.array_equal(z["logits"], lg))


if __name__ == "__main__":
    unittest.main()


class TestGreedyGoldens(unittest.TestCase):
    """Greedy continuations of 64 tokens in both index-key modes (the model-level goldens the
    engine is compared with): each must be consistent with the teacher-forced logits of the
    sequence it produced, and the two modes must agree wherever §16.2 cannot apply."""

    PROMPT = 36
    NEW = 64

    @classmethod
    def setUpClass(cls):
        binary, tok = _binary(), _tokenizer()
        if not os.path.exists(binary) or not os.path.exists(tok):
            raise unittest.SkipTest("needs the dsv4 binary and the tokenizer test data")
        # The V4.1 variant covers all 129,280 ids, so greedy choices on random weights always
        # have an Engram compressed id (with the V3 tokenizer, ids >= 128,815 have none: §16.6).
        tok41 = os.path.join(os.path.dirname(tok), "tokenizer-v41.json")
        if not os.path.exists(tok41):
            raise unittest.SkipTest("needs tokenizer-v41.json (tests/data/fetch_test_data.sh)")
        cls.tmp = tempfile.mkdtemp(prefix="dsv4_oracle_greedy_")
        cls.model_dir = os.path.join(cls.tmp, "tiny")
        subprocess.run([binary, "make-fixture", "--preset", "tiny", "--seed", "1", "--out",
                        cls.model_dir, "--tokenizer", tok41, "-q"], check=True)
        cls.prompt = text_ids(tok, cls.PROMPT)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_greedy_64_both_index_key_modes(self):
        runs = {}
        for keys in ("own", "reference"):
            m = M.Model(self.model_dir, index_keys=keys)
            gen, _ = M.generate(m, self.prompt, self.NEW)
            self.assertEqual(len(gen), self.NEW)
            self.assertTrue(all(0 <= g < 129280 for g in gen))
            # Teacher forcing the produced sequence in one prefill must pick the same tokens
            # (under 'reference' keys prefill equals 'own', so check with own-mode prefill only
            # where both agree: the own run is checked in full).
            full = list(self.prompt) + gen
            tf = M.run_logits(M.Model(self.model_dir, index_keys="own"), full[:-1], "prefill")
            argmax = [int(np.argmax(r)) for r in tf[self.PROMPT - 1:]]
            if keys == "own":
                self.assertEqual(argmax, gen, "greedy decode disagrees with teacher-forced prefill")
            runs[keys] = gen
        # §16.2 can change a selection only once a query sees more than index_topk ratio-2 rows
        # (position 82 on this preset); before that the two modes must produce the same tokens.
        first_pos_that_may_differ = 82
        k = first_pos_that_may_differ - self.PROMPT + 1  # generated tokens decided before it
        self.assertEqual(runs["own"][:k], runs["reference"][:k])
        print(f"\n  greedy own: {runs['own'][:12]}…  reference differs from index "
              f"{next((i for i, (a, b) in enumerate(zip(runs['own'], runs['reference'])) if a != b), None)}",
              file=sys.stderr)
