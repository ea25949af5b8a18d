"""dsv4_oracle.formats against slow scalar references (refmath.py): spec §2.1–2.4."""

import math
import unittest
from fractions import Fraction

import numpy as np

import refmath as rm
from dsv4_oracle import formats as fm

F32 = np.float32


def bits_to_f32(u):
    return np.asarray(u, dtype=np.uint32).view(F32)


def all_bf16_values():
    """Every bf16 bit pattern widened to fp32 (NaNs included)."""
    return (np.arange(1 << 16, dtype=np.uint32) << 16).view(F32)


def random_f32(n, seed, lo_exp=-140, hi_exp=127):
    """Random finite fp32 values over a wide exponent range, both signs."""
    r = np.random.default_rng(seed)
    m = r.integers(0, 1 << 23, n, dtype=np.uint32)
    e = r.integers(max(lo_exp + 127, 0), hi_exp + 127 + 1, n).astype(np.uint32)
    s = r.integers(0, 2, n).astype(np.uint32) << 31
    return bits_to_f32(s | (e << 23) | m)


class Bf16Test(unittest.TestCase):
    def test_rounding_matches_reference(self):
        r = np.random.default_rng(1)
        u = r.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32)
        # ties with even and odd kept bit, around the top binade and subnormals
        ties = (r.integers(0, 1 << 16, 4000, dtype=np.uint32) << 16) | np.uint32(0x8000)
        special = np.array([0x7F7F8000, 0x7F7FFFFF, 0x7F7F7FFF, 0xFF7F8000, 0x00008000,
                            0x00018000, 0x80008000, 0x3F808000, 0x3F818000, 0, 0x80000000],
                           dtype=np.uint32)
        x = bits_to_f32(np.concatenate([u, ties, special]))
        got = fm.round_bf16(x)
        for xi, gi in zip(x.tolist(), got.tolist()):
            if math.isnan(xi):
                self.assertTrue(math.isnan(gi))
                continue
            want = rm.bf16(Fraction(xi)) if not math.isinf(xi) else xi
            self.assertEqual(want, gi, f"bf16({xi!r})")
            if want == 0:
                self.assertEqual(math.copysign(1, xi), math.copysign(1, gi))

    def test_nan_quieted_and_bits_roundtrip(self):
        nan_low = bits_to_f32(np.array([0x7F800001, 0xFF800001, 0x7FC00000], np.uint32))
        b = fm.bf16_bits(nan_low)
        self.assertEqual(b.tolist(), [0x7FC0, 0xFFC0, 0x7FC0])
        h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        back = fm.bf16_bits(fm.from_bf16_bits(h))
        non_nan = (h & 0x7FFF) <= 0x7F80
        np.testing.assert_array_equal(back[non_nan], h[non_nan])
        self.assertEqual(fm.round_bf16(F32(3.4e38)).item(), math.inf)  # above the midpoint


class E4m3Test(unittest.TestCase):
    def test_decode_table(self):
        v = fm.e4m3_decode(np.arange(256, dtype=np.uint8))
        for c in range(256):
            want = rm.e4m3_value(c)
            if want is None:
                self.assertTrue(math.isnan(v[c]), hex(c))
                self.assertEqual(bool(c & 0x80), bool(np.signbit(v[c])))
            else:
                self.assertEqual(Fraction(float(v[c])), want, hex(c))
        self.assertTrue(np.signbit(v[0x80]))
        self.assertEqual(v[0x7E], 448)
        self.assertEqual(v[0x08], 2.0 ** -6)
        self.assertEqual(v[0x01], 2.0 ** -9)

    def test_encode_every_code_and_midpoint(self):
        # every finite code round-trips; exact midpoints between neighbours tie to even; one fp32
        # ulp either side of each midpoint goes to the nearer code
        vals = [rm.e4m3_value(c) for c in range(0x7F)]
        xs, want = [], []
        for c in range(0x7E):
            lo, hi = vals[c], vals[c + 1]
            mid = (lo + hi) / 2
            m = float(mid)
            xs += [float(lo), m, float(np.nextafter(F32(m), F32(0))),
                   float(np.nextafter(F32(m), F32(1000)))]
            even = c if c % 2 == 0 else c + 1
            want += [c, even, c, c + 1]
        xs += [448.0, 464.0, 500.0, 1e30, math.inf, 2.0 ** -10, 2.0 ** -10 * 1.0000001,
               1e-30, 0.0]
        want += [0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0, 1, 0, 0]
        x = np.array(xs, dtype=F32)
        got = fm.e4m3_encode(x)
        self.assertEqual(got.tolist(), want)
        got_neg = fm.e4m3_encode(-x)
        self.assertEqual(got_neg.tolist(), [w | 0x80 for w in want])

    def test_encode_matches_reference(self):
        x = np.concatenate([all_bf16_values(), random_f32(20000, 2, -20, 10)])
        got = fm.e4m3_encode(x)
        for xi, gi in zip(x.tolist(), got.tolist()):
            self.assertEqual(rm.e4m3_code(xi), gi, f"e4m3({xi!r})")

    def test_nan(self):
        n = bits_to_f32(np.array([0x7FC00000, 0xFFC00000, 0x7F800001], np.uint32))
        self.assertEqual(fm.e4m3_encode(n).tolist(), [0x7F, 0xFF, 0x7F])


class E8m0Test(unittest.TestCase):
    def test_decode_table(self):
        v = fm.e8m0_decode(np.arange(256, dtype=np.uint8))
        for c in range(255):
            self.assertEqual(Fraction(float(v[c])), Fraction(2) ** (c - 127), c)
        self.assertTrue(math.isnan(v[255]))

    def test_encode(self):
        p = fm.e8m0_decode(np.arange(255, dtype=np.uint8))
        np.testing.assert_array_equal(fm.e8m0_encode_pow2(p), np.arange(255, dtype=np.uint8))
        self.assertEqual(fm.e8m0_encode_pow2(np.array([np.nan, np.inf], F32)).tolist(),
                         [255, 255])
        for bad in (0.0, 3.0, -2.0, 2.0 ** -128):
            with self.assertRaises(ValueError):
                fm.e8m0_encode_pow2(np.array([bad], F32))


class E2m1Test(unittest.TestCase):
    def test_decode_table(self):
        self.assertEqual(fm.e2m1_decode(np.arange(16, dtype=np.uint8)).tolist(),
                         [0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6])
        self.assertTrue(np.signbit(fm.e2m1_decode(np.uint8(8))))
        self.assertEqual(fm.e2m1_decode(np.uint8(0x13)).item(), 1.5)  # low nibble only

    def test_ties_are_even_codes(self):
        x = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], F32)
        self.assertEqual(fm.e2m1_encode(x).tolist(), [0, 2, 2, 4, 4, 6, 6])
        self.assertEqual(fm.e2m1_encode(-x).tolist(), [8, 10, 10, 12, 12, 14, 14])
        self.assertEqual(fm.e2m1_encode(np.array([-1e-30, -0.0, 7.0, -100.0], F32)).tolist(),
                         [8, 8, 7, 15])

    def test_matches_reference(self):
        r = np.random.default_rng(3)
        grid = np.array([0, .5, 1, 1.5, 2, 3, 4, 6], F32)
        mids = (grid[1:] + grid[:-1]) / 2
        near = np.concatenate([np.nextafter(mids, F32(0)), np.nextafter(mids, F32(7)), mids])
        x = np.concatenate([r.uniform(-6, 6, 20000).astype(F32), near, -near, grid, -grid])
        got = fm.e2m1_encode(x)
        for xi, gi in zip(x.tolist(), got.tolist()):
            self.assertEqual(rm.e2m1_code(xi), gi, f"e2m1({xi!r})")

    def test_unpack_order(self):
        p = np.array([[0x21, 0xF7]], np.uint8)
        self.assertEqual(fm.unpack_fp4(p).tolist(), [[1, 2, 7, 15]])
        c = np.random.default_rng(4).integers(0, 16, (3, 64)).astype(np.uint8)
        np.testing.assert_array_equal(fm.unpack_fp4(fm.pack_fp4(c)), c)


class Pow2ScaleTest(unittest.TestCase):
    def test_matches_reference(self):
        x = np.abs(random_f32(20000, 5, -126, 126))
        x = np.concatenate([x, np.ldexp(F32(1), np.arange(-126, 128)).astype(F32)])
        got = fm.pow2_ceil_scale(x)
        for xi, gi in zip(x.tolist(), got.tolist()):
            self.assertEqual(Fraction(gi), rm.pow2_ceil(xi), xi)

    def test_edges(self):
        x = bits_to_f32(np.array([0, 0x80000000, 1, 0x7F7FFFFF, 0x7F000001, 0x7FC00000,
                                  0xC0400000], np.uint32))
        got = fm.pow2_ceil_scale(x)
        self.assertEqual(got[0], 0)
        self.assertEqual(got[1], 0)
        self.assertEqual(got[2], 2.0 ** -126)
        self.assertEqual(got[3], math.inf)
        self.assertEqual(got[4], math.inf)
        self.assertTrue(math.isnan(got[5]))
        self.assertEqual(got[6], 4.0)     # sign ignored


# ---- quantizers vs a slow scalar version --------------------------------------------------

def ref_fp8_block(block):
    """§2.3 for one block of bf16 floats -> (codes, scale code, dequantized bf16 floats)."""
    amax = max(abs(Fraction(v)) for v in block)
    amax = max(amax, Fraction(float(np.float32(1e-4))))
    c = Fraction(rm.rne32(Fraction(1, 448)))
    t = Fraction(rm.rne32(amax * c))
    s = rm.pow2_ceil(t)
    codes, deq = [], []
    for v in block:
        q = Fraction(v) / s                                   # exact: s is a power of two
        q = max(min(q, rm.E4M3_MAX), -rm.E4M3_MAX)
        code = rm.e4m3_code(float(q)) if q != 0 else (0x80 if math.copysign(1, v) < 0 else 0)
        codes.append(code)
        deq.append(rm.bf16(rm.e4m3_value(code) * s))
    e = s.numerator.bit_length() - 1 - (s.denominator.bit_length() - 1)
    return codes, e + 127, deq


def ref_fp4_block(block, e4m3_scale):
    """§2.4 for one block (16 with E4M3 scale, 32 with E8M0 scale) -> dequantized floats."""
    amax = max(abs(Fraction(v)) for v in block)
    if e4m3_scale:
        amax = max(amax, Fraction(6) * Fraction(2) ** -9)
        t = rm.rne32(amax / 6)                                # fp32 division
        s = rm.e4m3_value(rm.e4m3_code(t))
    else:
        amax = max(amax, Fraction(6) * Fraction(2) ** -126)
        t = Fraction(rm.rne32(amax * Fraction(rm.rne32(Fraction(1, 6)))))
        s = rm.pow2_ceil(t)
    out = []
    for v in block:
        q = Fraction(rm.rne32(Fraction(v) / s))               # correctly rounded fp32 division
        q = max(min(q, Fraction(6)), Fraction(-6))
        qf = float(q) if q != 0 else math.copysign(0.0, v)
        out.append(rm.bf16(rm.E2M1_MAG[rm.e2m1_code(qf) & 7] * s)
                   * (-1 if rm.e2m1_code(qf) & 8 else 1))
    return out


def quant_inputs(n_blocks, block, seed):
    """bf16 blocks of varied magnitude: tiny (below the floors), normal, huge, with exact ties
    at the grid points and zeros."""
    r = np.random.default_rng(seed)
    mags = r.choice([1e-30, 1e-8, 1e-5, 1e-3, 0.1, 1, 30, 1e4, 1e20, 1e36], n_blocks)
    x = r.standard_normal((n_blocks, block)) * mags[:, None]
    x[r.random(x.shape) < 0.05] = 0
    x = fm.round_bf16(x.astype(F32))
    # blocks whose elements hit exact quantizer ties: k·amax/8 patterns
    for b in range(0, n_blocks, 7):
        amax = x[b].max() if x[b].max() > 0 else F32(1)
        x[b, : block // 2] = fm.round_bf16((np.arange(block // 2) * amax / 8).astype(F32))
    return x.astype(F32)


class ActQuantTest(unittest.TestCase):
    def test_act_quant_matches_reference(self):
        x = quant_inputs(300, 32, 6)
        q, s = fm.act_quant(x)
        qdq = fm.act_quant_qdq(x)
        for b in range(x.shape[0]):
            codes, scode, deq = ref_fp8_block(x[b].tolist())
            self.assertEqual(q[b].tolist(), codes, f"block {b}")
            self.assertEqual(int(s[b, 0]), scode, f"block {b}")
            self.assertEqual(qdq[b].tolist(), deq, f"block {b}")

    def test_shapes_and_blocks(self):
        x = quant_inputs(8, 32, 7).reshape(2, 128)
        q, s = fm.act_quant(x)
        self.assertEqual(q.shape, (2, 128))
        self.assertEqual(s.shape, (2, 4))
        with self.assertRaises(ValueError):
            fm.act_quant(np.zeros((2, 33), F32))

    def test_fp8_floor_constant(self):
        # the floor is fp32(1e-4): the decimal constant's nearest float32 (same as the C++ 1e-4f)
        self.assertEqual(rm.f32_bits(1e-4), rm.f32_bits(float(rm.rne32(Fraction("0.0001")))))

    def test_fp4_e8m0_matches_reference(self):
        x = quant_inputs(300, 32, 8)
        got = fm.fp4_qdq_e8m0_b32(x)
        for b in range(x.shape[0]):
            self.assertEqual(got[b].tolist(), ref_fp4_block(x[b].tolist(), False), f"block {b}")

    def test_fp4_e4m3_matches_reference(self):
        x = quant_inputs(500, 16, 9)
        got = fm.fp4_qdq_e4m3_b16(x)
        for b in range(x.shape[0]):
            self.assertEqual(got[b].tolist(), ref_fp4_block(x[b].tolist(), True), f"block {b}")

    def test_non_finite_conventions(self):
        x = np.ones(32, F32)
        x[3] = np.nan
        q, s = fm.act_quant(x)
        self.assertEqual(q[3], 0x7F)
        self.assertEqual(int(s[0]), 127 - 8)           # amax 1 -> 2^-8 (NaN ignored)
        y = fm.act_quant_qdq(x)
        self.assertTrue(np.isnan(y[3]) and np.all(y[np.arange(32) != 3] == 1))
        x[3] = np.inf
        q, s = fm.act_quant(x)
        self.assertEqual(int(s[0]), 0xFF)
        self.assertTrue(np.all(np.isnan(fm.act_quant_qdq(x))))
        self.assertTrue(np.all(np.isnan(fm.fp4_qdq_e8m0_b32(x))))
        z = np.ones(16, F32)
        z[0] = np.inf
        out = fm.fp4_qdq_e4m3_b16(z)
        self.assertEqual(out[0], 6 * 448)              # scale saturates to 448
        self.assertTrue(np.all(out[1:] == 0))


if __name__ == "__main__":
    unittest.main()
