"""dsv4_oracle.weights: dot operands built from the stored codes with tables must equal the
generic construction (strict._row_info of the exact float64 values) bit for bit, and the strict
products with them must equal an fsum reference."""

import math
import unittest

import numpy as np

from dsv4_oracle import formats as fm
from dsv4_oracle import strict as st
from dsv4_oracle import weights as wt

F32 = np.float32
F64 = np.float64


def generic(values64):
    return st._row_info(np.asarray(values64, dtype=F64))


def fp8_values64(codes, scale):
    n, k = codes.shape
    s = np.repeat(np.repeat(fm.e8m0_decode(scale).astype(F64), 32, axis=0)[:n], 32, axis=1)[:, :k]
    return fm.e4m3_decode(codes).astype(F64) * s


def fp4_values64(packed, scale):
    c = fm.unpack_fp4(packed)
    return fm.e2m1_decode(c).astype(F64) * np.repeat(fm.e8m0_decode(scale).astype(F64), 32, axis=1)


def same_operand(test, got, want):
    """Values and quanta identical; norms equal up to 2^-45 relative (they only feed the error
    bound, whose 2^-20 slack covers that, so the products are the same either way)."""
    test.assertTrue(np.array_equal(np.asarray(got[0], F64), want[0], equal_nan=True))
    gn, wn = np.asarray(got[1], F64), np.asarray(want[1], F64)
    test.assertTrue(np.array_equal(np.isnan(gn), np.isnan(wn)))
    ok = ~np.isnan(wn)
    test.assertTrue(np.all(np.abs(gn[ok] - wn[ok]) <= wn[ok] * 2.0 ** -45), (gn, wn))
    test.assertEqual(np.asarray(got[2]).tolist(), np.asarray(want[2]).tolist())


def fsum_dot(a, b64):
    out = np.empty((a.shape[0], b64.shape[0]), F32)
    for i in range(a.shape[0]):
        for j in range(b64.shape[0]):
            v = math.fsum((a[i].astype(F64) * b64[j]).tolist())
            out[i, j] = F32(v) if v != 0 else F32(0)
    return out


class WeightOperands(unittest.TestCase):
    def codes(self, r, shape, zero_rows=True):
        c = r.integers(0, 256, shape, dtype=np.uint8)
        c[c & 0x7F == 0x7F] = 0x11                    # no NaN codes here (tested apart)
        if zero_rows:
            c[3] = 0                                  # an all-zero row: the sentinel quantum
            c[5, :40] = 0x80                          # negative zeros
        return c

    def test_fp8_matches_generic(self):
        r = np.random.default_rng(1)
        for scale_lo, scale_hi in ((100, 140), (0, 3), (240, 247), (247, 254)):
            codes = self.codes(r, (96, 128))
            scale = r.integers(scale_lo, scale_hi + 1, (3, 4), dtype=np.uint8)
            got = wt.fp8_operand(codes, scale)
            # float32 storage only where it is exact (scale ≤ 2^119), float64 beyond
            self.assertEqual(got[0].dtype, F32 if scale_hi <= 246 else F64)
            same_operand(self, got, generic(fp8_values64(codes, scale)))

    def test_fp4_matches_generic(self):
        r = np.random.default_rng(2)
        for scale_lo, scale_hi in ((100, 140), (0, 2), (250, 254)):
            packed = r.integers(0, 256, (70, 48), dtype=np.uint8)
            packed[4] = 0
            scale = r.integers(scale_lo, scale_hi + 1, (70, 3), dtype=np.uint8)
            got = wt.fp4_operand(packed, scale)
            self.assertEqual(got[0].dtype, F32 if scale_hi <= 252 else F64)
            same_operand(self, got, generic(fp4_values64(packed, scale)))

    def test_nan_codes_and_scales(self):
        r = np.random.default_rng(3)
        codes = self.codes(r, (64, 64), zero_rows=False)
        codes[7, 9] = 0x7F
        scale = r.integers(120, 130, (2, 2), dtype=np.uint8)
        scale[1, 1] = 0xFF
        got = wt.fp8_operand(codes, scale)
        want = generic(fp8_values64(codes, scale))
        same_operand(self, got, want)

    def test_odd_shapes_fall_back(self):
        r = np.random.default_rng(4)
        codes = self.codes(r, (40, 72))
        scale = r.integers(110, 140, (2, 3), dtype=np.uint8)
        same_operand(self, wt.fp8_operand(codes, scale), generic(fp8_values64(codes, scale)))

    def test_bf16_matches_generic(self):
        r = np.random.default_rng(5)
        bits = fm.bf16_bits(r.standard_normal((50, 96)).astype(F32) *
                            np.exp2(r.integers(-60, 60, (50, 1))).astype(F32))
        bits[2] = 0
        bits[6, :7] = 0x8000
        bits[9, 3] = 0x0001                            # a subnormal
        got = wt.bf16_operand(bits)
        self.assertEqual(got[0].dtype, F32)
        same_operand(self, got, generic(fm.from_bf16_bits(bits)))

    def test_products_are_strict(self):
        """sdot64 with a float32-valued operand = fsum of the exact products, rounded once."""
        r = np.random.default_rng(6)
        codes = self.codes(r, (64, 96))
        scale = r.integers(115, 135, (2, 3), dtype=np.uint8)
        op = wt.fp8_operand(codes, scale)
        a = r.standard_normal((5, 96)).astype(F32)
        a[0, :2] = [2.0 ** 40, -(2.0 ** 40)]
        got = st.sdot64(a, op[0], op)
        want = fsum_dot(a, fp8_values64(codes, scale))
        self.assertTrue(np.array_equal(got.view(np.uint32), want.view(np.uint32)))
        packed = r.integers(0, 256, (40, 48), dtype=np.uint8)
        scale4 = r.integers(115, 135, (40, 3), dtype=np.uint8)
        op4 = wt.fp4_operand(packed, scale4)
        a4 = r.standard_normal((4, 96)).astype(F32)
        got4 = st.sdot64(a4, op4[0], op4)
        want4 = fsum_dot(a4, fp4_values64(packed, scale4))
        self.assertTrue(np.array_equal(got4.view(np.uint32), want4.view(np.uint32)))


class Cache(unittest.TestCase):
    def test_lfu_keeps_the_reused_entries(self):
        """A cyclic scan larger than the cache keeps the entries that are reused, instead of
        evicting each just before its next use (what LRU would do)."""
        c = st.WeightCache(limit_bytes=4 * 800)
        arrs = [np.zeros(100, F64) for _ in range(8)]          # 800 bytes each
        for k in range(4):                                    # four hot entries, used twice
            c.put(("hot", k), arrs[k], ())
            c.get(("hot", k))
        for k in range(4, 8):                                 # a scan of cold entries
            c.put(("cold", k), arrs[k], ())
        self.assertEqual(sum(1 for key in c.entries if key[0] == "hot"), 3)
        self.assertLessEqual(c.bytes, c.limit)
        c.put(("huge",), np.zeros(1000, F64), ())             # larger than the limit: not kept
        self.assertNotIn(("huge",), c.entries)

    def test_streamed_entries_never_evict_kept_ones(self):
        c = st.WeightCache(limit_bytes=3 * 800)
        arrs = [np.zeros(100, F64) for _ in range(6)]
        c.put(("kept", 0), arrs[0], ())
        for k in range(1, 6):                                 # experts: evict one another
            c.put(("streamed", k), arrs[k], (), keep=False)
        self.assertIn(("kept", 0), c.entries)
        self.assertEqual(len(c.entries), 3)
        c.put(("kept", 1), arrs[0], ())                       # a kept entry evicts streamed ones
        c.put(("kept", 2), arrs[1], ())
        self.assertEqual(sorted(k[0] for k in c.entries), ["kept"] * 3)
        c.put(("streamed", 9), arrs[2], (), keep=False)       # ... and no streamed one gets in
        self.assertNotIn(("streamed", 9), c.entries)


if __name__ == "__main__":
    unittest.main()
