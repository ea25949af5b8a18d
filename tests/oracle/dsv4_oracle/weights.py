"""Checkpoint weights as operands of strict dot products (strict.sdot64 / strict._dot64).

A dot operand is the tuple (values [N, K], row 2-norms [N] float64, row quantum exponents [N]
int) that strict._dot64 needs: the values must be exact (every product with an fp32 value exact
in float64), the norms give the error bound and the quanta the exactness test.

Why this module exists: the generic construction (strict._row_info) reads the bits of a float64
copy of the weight, which for a released-width model costs minutes per pass and needs eight bytes
per parameter. The stored formats make it cheap instead:

* values are kept in float32 whenever that is exact — every BF16 value, every E4M3 value times
  a power-of-two scale from 2^-127 to 2^119, every E2M1 value times 2^-127 .. 2^125 (all the
  scales a real checkpoint has) — and widened to float64 chunk by chunk inside the product, so a
  cached operand costs four bytes per parameter;
* the quantum exponent of each element depends only on its code (and its block's scale), so it
  comes from a table of 65,536 (BF16), 256 (E4M3) or 16 (E2M1) entries instead of bit tricks on
  every element.

Every function returns exactly what strict._row_info would return for the same dequantized
values (tests/oracle/test_strict.py checks this), so the results of the products do not depend
on which construction was used.
"""

import numpy as np

from . import formats as fm
from . import strict as st

F32 = np.float32
F64 = np.float64
_ROWS = 1024          # rows per chunk when building an operand (bounds the temporaries)
_NOQ = st._NO_QUANTUM


def _quantum_table(values32):
    return st._quantum_exp(np.asarray(values32, dtype=F32)).astype(np.int32)


_Q_BF16 = None
_Q_E4M3 = _quantum_table(fm.e4m3_decode(np.arange(256, dtype=np.uint8)))
_Q_E2M1 = _quantum_table(fm.e2m1_decode(np.arange(16, dtype=np.uint8)))


def _q_bf16():
    global _Q_BF16
    if _Q_BF16 is None:
        _Q_BF16 = _quantum_table(fm.from_bf16_bits(np.arange(65536, dtype=np.uint32)
                                                   .astype(np.uint16)))
    return _Q_BF16


def _norms(values):
    """Row 2-norms in float64 (an upper bound is all the error bound needs; this is the same
    einsum strict._row_norms uses, on a float64 copy of each chunk)."""
    out = np.empty(values.shape[0], dtype=F64)
    for lo in range(0, values.shape[0], _ROWS):
        out[lo:lo + _ROWS] = st._row_norms(np.asarray(values[lo:lo + _ROWS], dtype=F64))
    return out


def bf16_operand(bits):
    """BF16 weight (uint16 bit patterns [N, K]) -> dot operand with float32 values."""
    bits = np.asarray(bits, dtype=np.uint16)
    n = bits.shape[0]
    values = np.empty(bits.shape, dtype=F32)
    quanta = np.empty(n, dtype=np.int64)
    table = _q_bf16()
    for lo in range(0, n, _ROWS):
        b = bits[lo:lo + _ROWS]
        values[lo:lo + _ROWS] = fm.from_bf16_bits(b)
        quanta[lo:lo + _ROWS] = table[b].min(axis=1, initial=_NOQ)
    return values, _norms(values), quanta


def _scaled_quanta(code_q, scale_codes):
    """Per-row minimum of (element quantum + scale exponent) over 32-column blocks.
    code_q [n, K/32] is the per-block minimum of the element quanta; scale_codes [n, K/32]."""
    e = scale_codes.astype(np.int64) - 127
    q = np.where(code_q >= _NOQ, _NOQ, code_q + e)
    q = np.where(scale_codes == 0xFF, _NOQ, q)          # NaN scale: non-finite values
    return q.min(axis=1, initial=_NOQ)


def fp8_operand(codes, scale):
    """E4M3 weight [N, K] with E8M0 scales over 32×32 blocks [ceil(N/32), ceil(K/32)]
    -> dot operand of the exact values e4m3(code) · 2^(scale − 127)."""
    c = np.asarray(codes, dtype=np.uint8)
    s = np.asarray(scale, dtype=np.uint8)
    n, k = c.shape
    if s.shape != (-(-n // 32), -(-k // 32)):
        raise ValueError(f"FP8 weight {c.shape}: scale shape {s.shape}, expected "
                         f"{(-(-n // 32), -(-k // 32))}")
    if k % 32 or n % 32:
        values = _fp8_values64(c, s)
        return st._row_info(values)
    finite = s[s != 0xFF]
    dtype = F32 if finite.size == 0 or int(finite.max()) <= 127 + 119 else F64
    values = np.empty((n, k), dtype=dtype)
    quanta = np.empty(n, dtype=np.int64)
    sv = fm.e8m0_decode(s).astype(dtype)
    table = fm.e4m3_decode(np.arange(256, dtype=np.uint8)).astype(dtype)
    rows = _ROWS - _ROWS % 32
    for lo in range(0, n, rows):
        cb = c[lo:lo + rows]
        m = cb.shape[0]
        sb = sv[lo // 32:(lo + m) // 32]                                  # [m/32, K/32]
        v = table[cb].reshape(m // 32, 32, k // 32, 32) * sb[:, None, :, None]
        values[lo:lo + m] = v.reshape(m, k)
        qb = _Q_E4M3[cb].reshape(m, k // 32, 32).min(axis=2)               # [m, K/32]
        sc = np.repeat(s[lo // 32:(lo + m) // 32], 32, axis=0)             # [m, K/32]
        quanta[lo:lo + m] = _scaled_quanta(qb, sc)
    return values, _norms(values), quanta


def _fp8_values64(c, s):
    n, k = c.shape
    sf = fm.e8m0_decode(s).astype(F64)
    s_full = np.repeat(np.repeat(sf, 32, axis=0)[:n], 32, axis=1)[:, :k]
    return fm.e4m3_decode(c).astype(F64) * s_full


def _byte_tables():
    """Per packed FP4 byte (two E2M1 codes, element 2j in the low nibble): the two values, the
    smaller quantum of the two, and the sum of their squares (exact in float32)."""
    b = np.arange(256, dtype=np.uint8)
    lo, hi = b & np.uint8(0xF), b >> np.uint8(4)
    vals = np.stack([fm.e2m1_decode(lo), fm.e2m1_decode(hi)], axis=1).astype(F32)   # [256, 2]
    q = np.minimum(_Q_E2M1[lo], _Q_E2M1[hi]).astype(np.int16)
    sq = (vals.astype(F64) ** 2).sum(axis=1).astype(F32)
    return vals, q, sq


_FP4_PAIRS, _FP4_PAIR_Q, _FP4_PAIR_SQ = _byte_tables()
# the two float32 values of a byte as one 8-byte word: a 1-D lookup numpy does quickly
_FP4_PAIRS_U64 = np.ascontiguousarray(_FP4_PAIRS).view(np.uint64).reshape(256)


def fp4_operand(packed, scale):
    """Packed E2M1 weight [N, K/2] with E8M0 scales per row and 32 columns [N, ceil(K/32)]
    -> dot operand of the exact values e2m1(code) · 2^(scale − 127).

    Routed experts are rebuilt whenever the cache has no room for them, so this works on the
    packed bytes directly: one table lookup per byte gives both values, their quantum and
    their squares. Block sums of squares (≤ 32 · 36, multiples of 1/4) are exact in float32;
    scaling and summing them in float64 gives the norm up to (K/32)·2^-53 relative, which the
    error bound's 2^-20 slack covers."""
    p = np.asarray(packed, dtype=np.uint8)
    s = np.asarray(scale, dtype=np.uint8)
    n, k = p.shape[0], 2 * p.shape[1]
    if s.shape != (n, -(-k // 32)):
        raise ValueError(f"FP4 weight {p.shape}: scale shape {s.shape}, expected "
                         f"{(n, -(-k // 32))}")
    finite = s[s != 0xFF]
    if k % 32 or (finite.size and int(finite.max()) > 127 + 125):
        c = fm.unpack_fp4(p)
        sf = np.repeat(fm.e8m0_decode(s).astype(F64), 32, axis=1)[:, :k]
        return st._row_info(fm.e2m1_decode(c).astype(F64) * sf)
    kb = k // 32
    values = _FP4_PAIRS_U64[p].view(F32).reshape(n, kb, 32)    # [n, K/32, 32] float32
    sv = fm.e8m0_decode(s)                                  # [n, K/32] float32, exact
    values *= sv[:, :, None]                               # exact: a power-of-two scale
    values = values.reshape(n, k)
    qb = _FP4_PAIR_Q[p].reshape(n, kb, 16).min(axis=2)      # [n, K/32]
    quanta = _scaled_quanta(qb, s)
    sq = _FP4_PAIR_SQ[p].reshape(n, kb, 16).sum(axis=2, dtype=F32)     # exact block sums
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt((sq.astype(F64) * np.square(sv.astype(F64))).sum(axis=1))
    return values, norms, quanta
