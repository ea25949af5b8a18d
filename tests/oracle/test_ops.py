"""dsv4_oracle.ops against slow scalar references and spec invariants (§2.5–2.11, §5, §6.8, §7).

The scalar references below evaluate each fp32 operation in Python double arithmetic and round
it to fp32 (for +, −, ×, ÷ of two fp32 values a double result rounded to fp32 is the correctly
rounded fp32 result), sums with math.fsum then one fp32 rounding — i.e. the strict contract,
written out one element at a time.
"""

import math
import types
import unittest
from fractions import Fraction

import numpy as np

import refmath as rm
from dsv4_oracle import formats as fm
from dsv4_oracle import ops
from dsv4_oracle import strict as st
from dsv4_oracle.config import Config

F32 = np.float32


def r32(v):
    with np.errstate(over="ignore"):
        return float(F32(v))


def fsum32(vals):
    v = math.fsum(vals)
    return r32(v) if v != 0 else 0.0


def sigmoid32(z):
    return r32(1.0 / (1.0 + math.exp(-z)))


def same_bits(x, y):
    return np.array_equal(np.asarray(x, F32).view(np.uint32), np.asarray(y, F32).view(np.uint32))


def bf16_rand(r, shape, scale=1.0):
    return fm.round_bf16((r.standard_normal(shape) * scale).astype(F32))


# ---------------------------------------------------------------------------------------------

def ref_sinkhorn(m, sc, b, hc, iters, eps):
    e = r32(eps)
    pre = [r32(sigmoid32(r32(r32(m[j] * sc[0]) + b[j])) + e) for j in range(hc)]
    post = [r32(2 * sigmoid32(r32(r32(m[hc + j] * sc[1]) + b[hc + j]))) for j in range(hc)]
    c = [[r32(r32(m[2 * hc + hc * i + k] * sc[2]) + b[2 * hc + hc * i + k]) for k in range(hc)]
         for i in range(hc)]
    for i in range(hc):
        mx = max(c[i])
        ex = [r32(math.exp(r32(v - mx))) for v in c[i]]
        den = fsum32(ex)
        c[i] = [r32(r32(v / den) + e) for v in ex]

    def col():
        for k in range(hc):
            den = r32(fsum32([c[i][k] for i in range(hc)]) + e)
            for i in range(hc):
                c[i][k] = r32(c[i][k] / den)
    col()
    for _ in range(iters - 1):
        for i in range(hc):
            den = r32(fsum32(c[i]) + e)
            c[i] = [r32(v / den) for v in c[i]]
        col()
    return pre, post, c


class HyperConnectionTest(unittest.TestCase):
    def setUp(self):
        r = np.random.default_rng(10)
        self.mixes = (r.standard_normal((6, 24)) * 3).astype(F32)
        self.scale = np.array([0.7, 1.3, 2.1], F32)
        self.base = r.standard_normal(24).astype(F32)
        self.base[8:24:5] += F32(4)   # strong diagonal, like the fixtures

    def test_sinkhorn_matches_scalar_reference(self):
        pre, post, comb = ops.hc_split_sinkhorn(self.mixes, self.scale, self.base, 4, 20, 1e-6)
        for t in range(self.mixes.shape[0]):
            rp, rq, rc = ref_sinkhorn(self.mixes[t].tolist(), self.scale.tolist(),
                                      self.base.tolist(), 4, 20, 1e-6)
            self.assertEqual(pre[t].tolist(), rp)
            self.assertEqual(post[t].tolist(), rq)
            self.assertEqual(comb[t].tolist(), rc)

    def test_sinkhorn_invariants(self):
        pre, post, comb = ops.hc_split_sinkhorn(self.mixes, self.scale, self.base, 4, 20, 1e-6)
        np.testing.assert_allclose(comb.sum(axis=-2), 1.0, atol=1e-5)   # ends on columns
        np.testing.assert_allclose(comb.sum(axis=-1), 1.0, atol=0.1)    # rows only approximately
        self.assertTrue(np.all(pre > 1e-6) and np.all(pre <= 1 + 1e-6))
        self.assertTrue(np.all(post >= 0) and np.all(post <= 2))
        self.assertEqual(comb.shape, (6, 4, 4))

    def test_hc_pre_post_mixes(self):
        r = np.random.default_rng(11)
        X = bf16_rand(r, (3, 4, 40))
        pre = r.random((3, 4)).astype(F32)
        out = ops.hc_pre(X, pre)
        for t in range(3):
            for d in range(40):
                want = rm.bf16(fsum32([float(pre[t, c]) * float(X[t, c, d]) for c in range(4)]))
                self.assertEqual(out[t, d], want)
        y = bf16_rand(r, (3, 40))
        post = (r.random((3, 4)) * 2).astype(F32)
        comb = r.random((3, 4, 4)).astype(F32)
        o = ops.hc_post(y, X, post, comb)
        for t in range(3):
            for j in range(4):
                for d in range(0, 40, 7):
                    s = fsum32([float(comb[t, i, j]) * float(X[t, i, d]) for i in range(4)])
                    p = r32(float(post[t, j]) * float(y[t, d]))
                    self.assertEqual(o[t, j, d], rm.bf16(r32(p + s)))
        fn = (r.standard_normal((24, 160)) * 0.05).astype(F32)
        got = ops.hc_mixes(X, fn, self.scale, self.base, 1e-20, 1e-6, 20)
        xf = X.reshape(3, 160)
        for t in range(3):
            ms = r32(float(sum((Fraction(float(v)) ** 2 for v in xf[t]), Fraction(0)) / 160))
            rs = r32(1.0 / math.sqrt(r32(ms + r32(1e-20))))
            mixes = [r32(fsum32([float(a) * float(b) for a, b in zip(xf[t], fn[k])]) * rs)
                     for k in range(24)]
            rp, rq, rc = ref_sinkhorn(mixes, self.scale.tolist(), self.base.tolist(), 4, 20, 1e-6)
            self.assertEqual(got[0][t].tolist(), rp)
            self.assertEqual(got[2][t].tolist(), rc)


# ---------------------------------------------------------------------------------------------

def ref_attn_one(q, kv, sink, idx, scale):
    """§2.9 for one (query, head), scalar: q [D], kv [N, D], idx list."""
    mu, l = r32(-1e30), 0.0
    acc = [0.0] * len(q)
    for b0 in range(0, len(idx), 64):
        blk = idx[b0:b0 + 64]
        s = []
        for j in blk:
            if j < 0:
                s.append(-math.inf)
            else:
                s.append(r32(fsum32([float(a) * float(b) for a, b in zip(q, kv[j])]) * scale))
        mu_new = max([mu] + s)
        alpha = r32(math.exp(r32(mu - mu_new)))
        p = [r32(math.exp(r32(v - mu_new))) if v != -math.inf else 0.0 for v in s]
        l = r32(r32(l * alpha) + fsum32(p))
        pb = [rm.bf16(v) for v in p]
        for d in range(len(q)):
            pv = fsum32([pb[i] * float(kv[j][d]) for i, j in enumerate(blk) if j >= 0])
            acc[d] = r32(r32(acc[d] * alpha) + pv)
        mu = mu_new
    l = r32(l + r32(math.exp(r32(sink - mu))))
    return [rm.bf16(r32(a / l)) for a in acc]


def f64_attn(q, kv, sink, idx, scale):
    """Plain float64 softmax attention with the sink in the denominator (no bf16 rounding)."""
    out = np.zeros(q.shape)
    for s in range(q.shape[0]):
        v = [j for j in idx[s] if j >= 0]
        if not v:
            continue
        K = kv[v].astype(np.float64)
        for h in range(q.shape[1]):
            z = K @ q[s, h].astype(np.float64) * float(F32(scale))
            m = max(z.max(), float(sink[h]))
            w = np.exp(z - m)
            out[s, h] = (w @ K) / (w.sum() + math.exp(float(sink[h]) - m))
    return out


class SparseAttnTest(unittest.TestCase):
    def setUp(self):
        r = np.random.default_rng(12)
        self.q = bf16_rand(r, (30, 4, 128), 1.0)
        self.kv = bf16_rand(r, (90, 128), 1.0)
        self.sink = r.standard_normal(4).astype(F32)
        idx = np.stack([r.permutation(90)[:72] for _ in range(30)])
        idx[r.random(idx.shape) < 0.15] = -1
        idx[0] = -1                                  # an all-empty row
        idx[1, 40:] = -1
        self.idx = idx
        self.scale = 128 ** -0.5

    def test_matches_scalar_reference(self):
        o = ops.sparse_attn(self.q, self.kv, self.sink, self.idx, self.scale)
        for s, h in [(1, 0), (2, 1), (5, 3), (17, 2), (29, 0)]:
            want = ref_attn_one(self.q[s, h].tolist(), self.kv.tolist(), float(self.sink[h]),
                                self.idx[s].tolist(), float(F32(self.scale)))
            self.assertEqual(o[s, h].tolist(), want, (s, h))

    def test_close_to_float64_softmax(self):
        o = ops.sparse_attn(self.q, self.kv, self.sink, self.idx, self.scale)
        ref = f64_attn(self.q, self.kv, self.sink, self.idx, self.scale)
        np.testing.assert_allclose(o, ref, atol=2 ** -7, rtol=2 ** -6)
        self.assertTrue(np.all(o[0] == 0))
        self.assertEqual(o.dtype, F32)
        self.assertTrue(same_bits(o, fm.round_bf16(o)))

    def test_64_slot_partition_changes_bits(self):
        """The same 40 valid slots listed after 32 empty ones fall into other 64-blocks: the
        bf16 rounding of p against each block's running max changes the result (§16.4)."""
        r = np.random.default_rng(13)
        q = bf16_rand(r, (40, 4, 128), 2.0)
        kv = bf16_rand(r, (40, 128), 1.0)
        sink = np.zeros(4, F32)
        valid = np.stack([r.permutation(40) for _ in range(40)])
        first = np.concatenate([valid, -np.ones((40, 32), int)], axis=1)    # compact-like
        late = np.concatenate([-np.ones((40, 32), int), valid], axis=1)     # decode-like
        a = ops.sparse_attn(q, kv, sink, first, self.scale)
        b = ops.sparse_attn(q, kv, sink, late, self.scale)
        self.assertFalse(same_bits(a, b))
        np.testing.assert_allclose(a, b, atol=2 ** -6)
        # with a single block (no partition) the empty slots' position does not matter
        c = ops.sparse_attn(q, kv, sink, first[:, :64], self.scale)
        d = ops.sparse_attn(q, kv, sink, np.concatenate(
            [-np.ones((40, 24), int), valid], axis=1), self.scale)
        self.assertTrue(same_bits(c, d))


# ---------------------------------------------------------------------------------------------

class TopkTest(unittest.TestCase):
    def test_ties_lowest_index(self):
        v = np.array([1, 3, 3, 2, 3, -np.inf, 3], F32)
        self.assertEqual(ops.topk_lowest_index(v, 2).tolist(), [1, 2])
        self.assertEqual(ops.topk_lowest_index(v, 5).tolist(), [1, 2, 4, 6, 3])
        self.assertEqual(ops.topk_lowest_index(np.array([0.0, -0.0, 0.0], F32), 2).tolist(),
                         [0, 1])
        m = np.array([[5, 5, 1], [2, 7, 7]], F32)
        self.assertEqual(ops.topk_lowest_index(m, 2).tolist(), [[0, 1], [1, 2]])
        self.assertEqual(ops.topk_lowest_index(m, 1, axis=0).tolist(), [[0, 1, 1]])
        self.assertEqual(ops.topk_lowest_index(np.array([3, 9, 9, 1]), 2).tolist(), [1, 2])


class CandidateBlocksTest(unittest.TestCase):
    def test_basic_forced_and_padding(self):
        # T = 10, bs = 4: blocks [0..3], [4..7], [8, 9] (padded with −inf)
        I = np.array([0, 1, 2, 3, 9, 0, 0, 0, -5, -6], F32)
        m = ops.select_candidate_blocks(I, 10, 2, 4)
        # block 2 holds the newest visible position 9 -> forced; the best other is block 1
        self.assertEqual(m.tolist(), [False] * 4 + [True] * 4 + [True] * 2)
        m = ops.select_candidate_blocks(I, 6, 2, 4)     # newest visible 5 is in block 1
        self.assertEqual(m.tolist(), [True] * 8 + [False] * 2)

    def test_ties_and_fillers(self):
        I = np.array([1, 1, 1, 1, 1, 1, -np.inf, -np.inf], F32)
        # blocks of 2: scores 1, 1, 1, −inf; c = 2 forces block 0; budget 2 -> tie: block 1
        self.assertEqual(ops.select_candidate_blocks(I, 2, 2, 2).tolist(),
                         [True] * 4 + [False] * 4)
        # budget 4 picks the −inf block as filler, which is dropped
        self.assertEqual(ops.select_candidate_blocks(I, 2, 4, 2).tolist(),
                         [True] * 6 + [False] * 2)
        J = np.full(8, -np.inf, F32)
        self.assertEqual(ops.select_candidate_blocks(J, 3, 4, 2).tolist(),
                         [False, False, True, True] + [False] * 4)
        self.assertFalse(ops.select_candidate_blocks(J, 0, 4, 2).any())

    def test_budget_covers_all_reachable(self):
        r = np.random.default_rng(14)
        I = fm.round_bf16(r.standard_normal((5, 37)).astype(F32))
        c = np.array([1, 8, 20, 33, 37])
        I[np.arange(37)[None, :] >= c[:, None]] = -np.inf          # prefill visibility
        m = ops.select_candidate_blocks(I, c, 100, 4)
        reach = np.arange(40)[None, :] // 4 <= (c[:, None] - 1) // 4
        self.assertTrue(np.array_equal(m, reach[:, :37]))

    def test_small_budget_then_topk_returns_masked_visible(self):
        """§16.5: with candidate_topk_blocks × bs < index_topk, the later top-k also returns
        masked (−inf) visible positions — deterministically the lowest-index ones here."""
        I = np.arange(20, dtype=F32)
        cand = ops.select_candidate_blocks(I, 20, 1, 4)           # only the newest block
        self.assertEqual(np.nonzero(cand)[0].tolist(), [16, 17, 18, 19])
        masked = np.where(cand, I, -np.inf).astype(F32)
        chosen = np.sort(ops.topk_lowest_index(masked, 8))
        self.assertEqual(chosen.tolist(), [0, 1, 2, 3, 16, 17, 18, 19])


# ---------------------------------------------------------------------------------------------

RELEASED = Config()
TINY = Config({"rope_head_dim": 32})


def ref_freqs(dim, base, yarn, cfg):
    out = []
    for i in range(dim // 2):
        e = r32(r32(2 * i) / dim)
        f = r32(1.0 / r32(math.pow(r32(base), e)))
        out.append(f)
    if not yarn:
        return out
    def corr(rr):
        return dim * math.log(cfg.original_seq_len / (rr * 2 * math.pi)) / (2 * math.log(base))
    low = max(math.floor(corr(cfg.beta_fast)), 0)
    high = min(math.ceil(corr(cfg.beta_slow)), dim - 1)
    span = r32(max(high - low, 0.001))
    res = []
    for i, f in enumerate(out):
        ramp = min(max(r32(r32(i - low) / span), 0.0), 1.0)
        smooth = r32(1 - ramp)
        res.append(r32(r32(r32(f / cfg.rope_factor) * r32(1 - smooth)) + r32(f * smooth)))
    return res


class RopeTest(unittest.TestCase):
    def test_yarn_range_released(self):
        self.assertEqual(ops.yarn_correction_range(32, 1, 64, 160000, 65536), (15, 25))
        self.assertEqual(ops.yarn_correction_range(32, 1, 32, 160000, 65536), (7, 13))

    def test_ramp_and_freqs_released(self):
        plain = ops.rope_freqs(RELEASED, 160000.0, False)
        yarn = ops.rope_freqs(RELEASED, 160000.0, True)
        self.assertTrue(same_bits(yarn[:16], plain[:16]))                 # pairs 0–15 keep freq
        self.assertTrue(same_bits(yarn[25:], (plain[25:] / F32(16)).astype(F32)))  # 25–31 /16
        blend = slice(16, 25)
        self.assertTrue(np.all(yarn[blend] < plain[blend]))
        self.assertTrue(np.all(yarn[blend] > plain[blend] / 16))
        ramp = ops.yarn_ramp(15, 25, 32)
        self.assertEqual(ramp[15], 0)
        self.assertEqual(ramp[20], F32(0.5))
        self.assertEqual(ramp[25], 1)
        for cfg, dim in ((RELEASED, 64), (TINY, 32)):
            for base, y in ((160000.0, True), (10000.0, False)):
                self.assertEqual(ops.rope_freqs(cfg, base, y).tolist(), ref_freqs(dim, base, y, cfg))

    def test_alternative_yarn_form_agrees_on_these_configs(self):
        """§2.8: f/factor·ramp + f·(1−ramp) is a different fp32 expression but gives the same
        bits on the released and the tiny configurations."""
        for cfg, dim in ((RELEASED, 64), (TINY, 32)):
            f = ops.rope_freqs(cfg, 160000.0, False)
            low, high = ops.yarn_correction_range(32, 1, dim, 160000, 65536)
            ramp = ops.yarn_ramp(low, high, dim // 2)
            alt = ((f / F32(16)).astype(F32) * ramp).astype(F32) + (f * (F32(1) - ramp)).astype(F32)
            self.assertTrue(same_bits(alt.astype(F32), ops.rope_freqs(cfg, 160000.0, True)))

    def test_table_values(self):
        cos, sin = ops.rope_table(RELEASED, 160000.0, True, 4096)
        self.assertEqual(cos.shape, (4096, 32))
        freq = ops.rope_freqs(RELEASED, 160000.0, True)
        for p in (0, 1, 127, 2049, 4095):
            for i in (0, 15, 20, 31):
                ang = r32(float(F32(p)) * float(freq[i]))
                self.assertEqual(cos[p, i], r32(math.cos(ang)))
                self.assertEqual(sin[p, i], r32(math.sin(ang)))
                self.assertAlmostEqual(float(cos[p, i]), math.cos(p * float(freq[i])), delta=1e-3)

    def test_apply_rope(self):
        r = np.random.default_rng(15)
        x = bf16_rand(r, (6, 3, 128))
        cos, sin = ops.rope_table(TINY, 160000.0, True, 100)
        pos = np.array([0, 3, 7, 50, 98, 99])
        y = ops.apply_rope(x, cos[pos], sin[pos])
        self.assertTrue(np.array_equal(y[..., :96], x[..., :96]))          # nope dims untouched
        for s in range(6):
            for h in range(3):
                for j in range(16):
                    a, b = float(x[s, h, 96 + 2 * j]), float(x[s, h, 97 + 2 * j])
                    c, sn = float(cos[pos[s], j]), float(sin[pos[s], j])
                    self.assertEqual(y[s, h, 96 + 2 * j], rm.bf16(r32(a * c - b * sn)))
                    self.assertEqual(y[s, h, 97 + 2 * j], rm.bf16(r32(a * sn + b * c)))
        back = ops.apply_rope(y, cos[pos], sin[pos], inverse=True)
        np.testing.assert_allclose(back, x, atol=2 ** -6, rtol=2 ** -6)
        self.assertTrue(np.array_equal(ops.apply_rope(x[0, 0], cos[0], sin[0]), x[0, 0]))  # pos 0


# ---------------------------------------------------------------------------------------------

class NormLinearTest(unittest.TestCase):
    def test_rmsnorm(self):
        r = np.random.default_rng(16)
        x = bf16_rand(r, (5, 256), 3.0)
        x[4] = 0                                                        # eps keeps it finite
        w = fm.round_bf16(bf16_rand(r, (256,)) + F32(1))
        y = ops.rmsnorm(x, fm.bf16_bits(w), 1e-20)                      # raw bf16 bits accepted
        for t in range(5):
            ms = r32(float(sum((Fraction(float(v)) ** 2 for v in x[t]), Fraction(0)) / 256))
            rs = r32(1.0 / math.sqrt(r32(ms + r32(1e-20))))
            want = [rm.bf16(r32(float(wi) * r32(float(xi) * rs))) for xi, wi in zip(x[t], w)]
            self.assertEqual(y[t].tolist(), want, t)

    def test_linear_fp8_fp4_exact_sum(self):
        r = np.random.default_rng(17)
        x = bf16_rand(r, (3, 96))
        codes = r.integers(0, 256, (40, 96)).astype(np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x10                               # no NaN codes
        scale = r.integers(110, 130, (2, 3)).astype(np.uint8)
        out = ops.linear_fp8(x, codes, scale)
        q, s = fm.act_quant(x)
        for m in range(3):
            a = [rm.e4m3_value(int(q[m, k])) * Fraction(2) ** (int(s[m, k // 32]) - 127)
                 for k in range(96)]
            for n in (0, 17, 31, 32, 39):
                w = [rm.e4m3_value(int(codes[n, k])) * Fraction(2) ** (int(scale[n // 32, k // 32]) - 127)
                     for k in range(96)]
                exact = sum((ai * wi for ai, wi in zip(a, w)), Fraction(0))
                self.assertEqual(out[m, n], rm.bf16(r32(float(exact))), (m, n))
        packed = r.integers(0, 256, (8, 48)).astype(np.uint8)
        s4 = r.integers(115, 125, (8, 3)).astype(np.uint8)
        out4 = ops.linear_fp4(x, packed, s4)
        c4 = fm.unpack_fp4(packed)
        for m in range(3):
            a = [rm.e4m3_value(int(q[m, k])) * Fraction(2) ** (int(s[m, k // 32]) - 127)
                 for k in range(96)]
            for n in range(8):
                w = [Fraction(float(fm.e2m1_decode(c4[n, k]))) * Fraction(2) ** (int(s4[n, k // 32]) - 127)
                     for k in range(96)]
                exact = sum((ai * wi for ai, wi in zip(a, w)), Fraction(0))
                self.assertEqual(out4[m, n], rm.bf16(r32(float(exact))), (m, n))

    def test_linear_bf16_f32(self):
        r = np.random.default_rng(18)
        x = bf16_rand(r, (4, 64))
        w = bf16_rand(r, (10, 64))
        y = ops.linear_bf16(x, fm.bf16_bits(w))
        z = ops.linear_f32(x, w)
        for m in range(4):
            for n in range(10):
                v = fsum32([float(a) * float(b) for a, b in zip(x[m], w[n])])
                self.assertEqual(z[m, n], v)
                self.assertEqual(y[m, n], rm.bf16(v))


# ---------------------------------------------------------------------------------------------

def moe_cfg(**kw):
    d = dict(score_func="sqrtsoftplus", n_activated_experts=2, route_scale=1.5, gate_temp=1.0,
             swiglu_limit=10.0, expert_dtype="fp4")
    d.update(kw)
    return types.SimpleNamespace(**d)


def rand_fp4(r, n, k):
    return (r.integers(0, 256, (n, k // 2)).astype(np.uint8),
            r.integers(118, 126, (n, k // 32)).astype(np.uint8))


def rand_fp8(r, n, k):
    c = r.integers(0, 256, (n, k)).astype(np.uint8)
    c[(c & 0x7F) == 0x7F] = 0x30
    return c, r.integers(118, 126, (-(-n // 32), -(-k // 32))).astype(np.uint8)


class MoeTest(unittest.TestCase):
    def test_gate_reference_and_ties(self):
        r = np.random.default_rng(19)
        x = bf16_rand(r, (6, 64))
        w = bf16_rand(r, (8, 64), 0.2)
        w[5] = w[2]                                       # experts 2 and 5 always tie
        bias = np.zeros(8, F32)
        cfg = moe_cfg(n_activated_experts=3)
        idx, wts = ops.gate(x, w, bias, cfg)
        for t in range(6):
            s = []
            for e in range(8):
                logit = fsum32([float(a) * float(b) for a, b in zip(x[t], w[e])])
                s.append(r32(math.sqrt(r32(math.log1p(math.exp(logit))) if logit <= 20 else logit)))
            order = sorted(range(8), key=lambda e: (-s[e], e))[:3]
            self.assertEqual(idx[t].tolist(), order)
            if 2 in order and 5 in order:
                self.assertLess(order.index(2), order.index(5))
            tot = r32(fsum32([s[e] for e in order]) + r32(1e-20))
            self.assertEqual(wts[t].tolist(), [r32(r32(s[e] / tot) * 1.5) for e in order])
        np.testing.assert_allclose(wts.sum(-1), 1.5, rtol=1e-6)

    def test_gate_bias_selects_but_does_not_weigh(self):
        r = np.random.default_rng(20)
        x = bf16_rand(r, (4, 64))
        w = bf16_rand(r, (8, 64), 0.2)
        bias = np.zeros(8, F32)
        bias[7] = 100
        idx, wts = ops.gate(x, w, bias, moe_cfg(n_activated_experts=2))
        self.assertTrue(np.all(idx[:, 0] == 7))
        vl = np.zeros(8, F32)
        vl[3] = 100
        idx2, _ = ops.gate(x, w, bias, moe_cfg(), bias_vl=vl,
                           image_mask=np.array([True, False, True, False]))
        self.assertEqual(idx2[:, 0].tolist(), [3, 7, 3, 7])
        self.assertTrue(np.all(wts < 10))

    def test_moe_accumulates_in_expert_order(self):
        r = np.random.default_rng(21)
        dim, inter, ne = 64, 32, 4
        x = bf16_rand(r, (7, dim))
        gw = bf16_rand(r, (ne, dim), 0.3)
        gb = (r.standard_normal(ne) * 0.1).astype(F32)
        experts = [(rand_fp4(r, inter, dim), rand_fp4(r, inter, dim), rand_fp4(r, dim, inter))
                   for _ in range(ne)]
        shared = (rand_fp8(r, inter, dim), rand_fp8(r, inter, dim), rand_fp8(r, dim, inter))
        cfg = moe_cfg()
        y = ops.moe(x, gw, gb, experts, shared, cfg)
        idx, wts = ops.gate(x, gw, gb, cfg)
        acc = np.zeros((7, dim), F32)
        for e in range(ne):
            for t in range(7):
                for slot in range(2):
                    if idx[t, slot] == e:
                        o = ops.expert(x[t:t + 1], *experts[e], weight=wts[t, slot:slot + 1])
                        acc[t] = (acc[t] + o[0]).astype(F32)
        acc = (acc + ops.expert(x, *shared, fmt="fp8")).astype(F32)
        self.assertTrue(same_bits(y, fm.round_bf16(acc)))
        # callable experts give the same result
        self.assertTrue(same_bits(y, ops.moe(x, gw, gb, lambda e: experts[e], shared, cfg)))

    def test_expert_clamps(self):
        r = np.random.default_rng(22)
        x = bf16_rand(r, (3, 64), 40.0)
        w1, w3, w2 = rand_fp8(r, 32, 64), rand_fp8(r, 32, 64), rand_fp8(r, 64, 32)
        g = ops.linear_fp8(x, *w1)
        u = ops.linear_fp8(x, *w3)
        h = (st.ssilu(np.minimum(g, F32(10))) * np.clip(u, F32(-10), F32(10))).astype(F32)
        want = ops.linear_fp8(fm.round_bf16(h), *w2)
        self.assertTrue(same_bits(ops.expert(x, w1, w3, w2, fmt="fp8"), want))
        self.assertTrue(np.abs(u).max() > 10)            # the clamp mattered


if __name__ == "__main__":
    unittest.main()
