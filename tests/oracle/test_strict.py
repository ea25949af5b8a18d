"""dsv4_oracle.strict (docs/strict-numerics.md rules 1–3) against all-fsum / exact references."""

import math
import unittest
from fractions import Fraction

import numpy as np

import refmath as rm
from dsv4_oracle import strict as st

F32 = np.float32


def fsum_dot(a, b):
    """Reference: every output RNE32(fsum of the float64 products); an exact zero is +0."""
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    out = np.empty((a.shape[0], b.shape[0]), F32)
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            v = math.fsum((a64[i] * b64[j]).tolist())
            out[i, j] = F32(v) if v != 0 else F32(0)
    return out


def same_bits(x, y):
    return np.array_equal(np.asarray(x, F32).view(np.uint32), np.asarray(y, F32).view(np.uint32))


def adversarial_operands(seed, m=24, n=40, k=64):
    """Rows built to defeat naive accumulation: large cancelling pairs hiding small terms, sums
    that land on or next to fp32 midpoints, mixed magnitudes, bf16 and full-fp32 values."""
    r = np.random.default_rng(seed)
    a = r.standard_normal((m, k)).astype(F32)
    b = r.standard_normal((n, k)).astype(F32)
    # rows 0..5 of a: huge cancellation — x, −x pairs of magnitude 2^40 around a small payload
    for i in range(6):
        big = F32(2.0 ** (30 + i * 3))
        a[i] = r.standard_normal(k).astype(F32) * F32(2.0 ** -10)
        a[i, 0], a[i, -1] = big, -big
        a[i, 1], a[i, -2] = big * F32(1.5), -big * F32(1.5)
    b[:, [0, 1, -2, -1]] = F32(1.0)
    # rows 6..11 of a with b rows 0..9: exact sums at an fp32 midpoint plus ± a tiny term
    for i in range(6, 12):
        a[i] = 0
        a[i, 0] = F32(1.0)
        a[i, 1] = F32(2.0 ** -24)             # 1 + 2^-24 is the midpoint of 1 and 1 + 2^-23
        a[i, 2] = F32((-1) ** i * 2.0 ** -(40 + i))
        a[i, 3] = F32(2.0 ** 20)
        a[i, 4] = F32(-(2.0 ** 20))
    b[:10, :5] = F32(1.0)
    # rows 12..15: bf16 operands (low 16 bits zero), many exact sums
    a[12:16] = (a[12:16].view(np.uint32) & np.uint32(0xFFFF0000)).view(F32)
    # rows 16..17: tiny and subnormal magnitudes (results near zero keep their sign)
    a[16] = r.standard_normal(k).astype(F32) * F32(2.0 ** -70)
    a[17] = 0
    a[17, 0], a[17, 1] = F32(2.0 ** -100), F32(-(2.0 ** -100))
    return a, b


class SdotTest(unittest.TestCase):
    def test_random_equals_fsum(self):
        r = np.random.default_rng(0)
        for k in (1, 7, 64, 257):
            a = r.standard_normal((20, k)).astype(F32)
            b = r.standard_normal((30, k)).astype(F32)
            self.assertTrue(same_bits(st.sdot(a, b), fsum_dot(a, b)), k)

    def test_adversarial_equals_fsum(self):
        for seed in range(4):
            a, b = adversarial_operands(seed)
            self.assertTrue(same_bits(st.sdot(a, b), fsum_dot(a, b)), seed)

    def test_plain_float32_matmul_is_not_strict(self):
        """The check above can fail: fp32 accumulation gives other bits on the same data."""
        a, b = adversarial_operands(0)
        ref = fsum_dot(a, b)
        naive = (a @ b.T).astype(F32)
        self.assertFalse(same_bits(naive, ref))
        # and a float64 sum without the bound check is wrong too on the cancelling rows
        seq = np.array([[float(sum((a[i].astype(float) * b[j].astype(float)).tolist()))
                         for j in range(b.shape[0])] for i in range(6)]).astype(F32)
        self.assertFalse(same_bits(seq, ref[:6]))

    def test_double_rounding_semantics(self):
        """RNE32(RNE64(exact)): 1 + 2^-24 + 2^-50 -> 1 + 2^-23; 1 + 2^-24 + 2^-60 -> 1
        (RNE64 drops 2^-60 and the fp32 tie goes to even), as the contract says."""
        a = np.array([[1, 2.0 ** -24, 2.0 ** -50], [1, 2.0 ** -24, 2.0 ** -60]], F32)
        b = np.ones((1, 3), F32)
        out = st.sdot(a, b)[:, 0]
        self.assertEqual(out[0], F32(1 + 2.0 ** -23))
        self.assertEqual(out[1], F32(1.0))

    def test_zero_signs(self):
        a = np.array([[1.0, -1.0], [-0.0, -0.0], [2.0 ** -100, 0.0], [-(2.0 ** -100), 0.0]], F32)
        b = np.array([[1.0, 1.0], [2.0 ** -60, 1.0]], F32)
        out = st.sdot(a, b)
        self.assertFalse(np.signbit(out[0, 0]))   # exact zero -> +0
        self.assertFalse(np.signbit(out[1, 0]))   # all −0 terms: still an exact zero -> +0
        self.assertEqual(out[2, 1], 0)            # 2^-160 underflows, positive
        self.assertFalse(np.signbit(out[2, 1]))
        self.assertTrue(np.signbit(out[3, 1]))    # −2^-160 underflows to −0

    def test_bf16_uint16_and_leading_axes(self):
        r = np.random.default_rng(1)
        a = r.standard_normal((2, 3, 16)).astype(F32)
        bb = (r.integers(0, 1 << 16, (5, 16)).astype(np.uint16) & 0xBFFF)  # finite bf16 bits
        bf = (bb.astype(np.uint32) << 16).view(F32)
        out = st.sdot(a, bb)
        self.assertEqual(out.shape, (2, 3, 5))
        self.assertTrue(same_bits(out.reshape(6, 5), fsum_dot(a.reshape(6, 16), bf)))

    def test_exact_fast_path_bf16(self):
        """bf16 operands whose float64 sums are exact (narrow exponent range) and others that
        are not (wide range, borderline 2^53 spans): the exactness shortcut agrees with fsum."""
        r = np.random.default_rng(6)
        for spread in (2, 12, 40):
            a = r.standard_normal((16, 300)) * np.exp2(r.integers(-spread, spread + 1, (16, 300)))
            b = r.standard_normal((24, 300)) * np.exp2(r.integers(-spread, spread + 1, (24, 300)))
            a = (a.astype(F32).view(np.uint32) & np.uint32(0xFFFF0000)).view(F32)
            b = (b.astype(F32).view(np.uint32) & np.uint32(0xFFFF0000)).view(F32)
            self.assertTrue(same_bits(st.sdot(a, b), fsum_dot(a, b)), spread)
        # spans of exactly 2^53 and just below: [2^30, 2^-23] needs 54 bits, [2^30 − 2^22, 2^-23] 53
        a = np.array([[2.0 ** 30, 2.0 ** -23, 0], [2.0 ** 30 - 2.0 ** 22, 2.0 ** -23, 0],
                      [2.0 ** 30, 2.0 ** -23, -(2.0 ** 30)]], F32)
        b = np.ones((1, 3), F32)
        self.assertTrue(same_bits(st.sdot(a, b), fsum_dot(a, b)))
        self.assertEqual(st.sdot(a, b)[2, 0], F32(2.0 ** -23))

    def test_cached_mapped_operands(self):
        """Read-only memory-mapped weights get their float64 copy cached; results stay those of
        the bytes of each mapping (two files, remapped in turn)."""
        import os
        import tempfile
        r = np.random.default_rng(7)
        a = r.standard_normal((3, 32)).astype(F32)
        with tempfile.TemporaryDirectory(prefix="dsv4_oracle_cache_") as d:
            outs = []
            for i in range(2):
                w = r.standard_normal((9, 32)).astype(F32)
                p = os.path.join(d, f"w{i}.bin")
                w.tofile(p)
                mm = np.memmap(p, dtype=F32, mode="r", shape=w.shape)
                first = st.sdot(a, mm)
                again = st.sdot(a, mm)
                self.assertTrue(same_bits(first, fsum_dot(a, w)))
                self.assertTrue(same_bits(again, first))
                outs.append(first)
                del mm
            self.assertFalse(same_bits(outs[0], outs[1]))
            st.clear_cache()

    def test_smatmul(self):
        r = np.random.default_rng(2)
        a = r.standard_normal((3, 4, 33)).astype(F32)
        b = r.standard_normal((3, 33, 5)).astype(F32)
        a[0, 0, :2] = [2 ** 40, -(2 ** 40)]
        out = st.smatmul(a, b)
        for i in range(3):
            self.assertTrue(same_bits(out[i], fsum_dot(a[i], b[i].T)))


class SumTest(unittest.TestCase):
    def test_ssum(self):
        r = np.random.default_rng(3)
        x = r.standard_normal((7, 50, 9)).astype(F32)
        x[0, :2, 0] = [2 ** 50, -(2 ** 50)]
        for axis in (0, 1, 2, -1):
            got = st.ssum(x, axis=axis)
            moved = np.moveaxis(x, axis, -1).astype(np.float64)
            want = np.vectorize(lambda v: v)(np.zeros(moved.shape[:-1]))
            for idx in np.ndindex(moved.shape[:-1]):
                want[idx] = F32(math.fsum(moved[idx].tolist()))
            self.assertTrue(same_bits(got, want.astype(F32)), axis)
        self.assertEqual(st.ssum(x, axis=1, keepdims=True).shape, (7, 1, 9))

    def test_smean_is_one_rounding(self):
        r = np.random.default_rng(4)
        x = r.standard_normal((40, 5120)).astype(F32)
        x[0, :3] = [2 ** 60, -(2 ** 60), 1]
        got = st.smean(x, axis=-1)
        for i in range(x.shape[0]):
            exact = sum((Fraction(float(v)) for v in x[i]), Fraction(0)) / 5120
            self.assertEqual(rm.f32_bits(float(exact)), int(got[i:i + 1].view(np.uint32)[0]), i)


class TranscendentalTest(unittest.TestCase):
    def sample(self, lo, hi, n=3000):
        r = np.random.default_rng(5)
        return r.uniform(lo, hi, n).astype(F32)

    def check(self, got, fn, x):
        want = np.array([fn(float(v)) for v in x], dtype=np.float64).astype(F32)
        self.assertTrue(same_bits(got, want))

    def test_wrappers(self):
        x = self.sample(-30, 30)
        self.check(st.sexp(x), math.exp, x)
        self.check(st.ssigmoid(x), lambda v: 1.0 / (1.0 + math.exp(-v)), x)
        self.check(st.ssilu(x), lambda v: v * (1.0 / (1.0 + math.exp(-v))), x)
        p = np.abs(x) + F32(1e-3)
        self.check(st.ssqrt(p), math.sqrt, p)
        self.check(st.srsqrt(p), lambda v: 1.0 / math.sqrt(v), p)
        self.check(st.slog1p(p), math.log1p, p)
        a = self.sample(-1000, 1000)
        self.check(st.scos(a), math.cos, a)
        self.check(st.ssin(a), math.sin, a)
        e = self.sample(0, 1)
        self.check(st.spow(np.full_like(e, F32(160000)), e), lambda v: math.pow(160000.0, v), e)

    def test_softplus_threshold(self):
        x = np.array([-50, -1, 0, 19.5, 20, np.nextafter(F32(20), F32(30)), 25, 100], F32)
        got = st.ssoftplus(x)
        for xi, gi in zip(x.tolist(), got.tolist()):
            want = xi if xi > 20 else float(F32(math.log1p(math.exp(xi))))
            self.assertEqual(gi, want, xi)
        self.assertEqual(got[5], x[5])                          # the input itself above 20


class LibmFallbackTest(unittest.TestCase):
    """The element-wise glibc path strict.py takes when numpy's ufuncs are not glibc's (numpy's
    AVX-512 dispatch): one- and two-argument functions, overflow and domain errors as IEEE."""

    def test_one_and_two_argument_functions(self):
        self.assertEqual(st._safe(math.exp)(1.5), math.exp(1.5))
        self.assertEqual(st._safe(math.exp)(1e6), math.inf)
        self.assertTrue(math.isnan(st._safe(math.log1p)(-2.0)))
        self.assertEqual(st._safe(math.pow)(160000.0, 0.25), math.pow(160000.0, 0.25))
        self.assertEqual(st._safe(math.pow)(10.0, 400.0), math.inf)
        # The C library itself for the element-wise path: its poles, not Python's exceptions.
        self.assertEqual(st._libm_fn("log1p")(-1.0), -math.inf)
        self.assertEqual(st._libm_fn("pow", 2)(0.0, -1.0), math.inf)
        self.assertEqual(st._libm_fn("exp")(0.5), math.exp(0.5))
        vec = st._libm_vectorised(st._libm_fn("cos"))
        x = np.array([0.0, 1.0, -3.0])
        self.assertTrue(np.array_equal(vec(x), np.array([math.cos(v) for v in x])))


if __name__ == "__main__":
    unittest.main()
