"""Number formats and the activation quantizers (spec §2.1–2.4).

Everything here works on the bits of IEEE binary32 values (``uint32`` views) or on operations that
are exact by construction (multiplying by a power of two, ``np.rint`` of a value that was scaled by
a power of two), so no floating-point environment can change a result. Each quantizer evaluates
the reference's fp32 expressions one IEEE fp32 operation at a time (numpy float32 arithmetic is
IEEE binary32 with round-to-nearest-even, no excess precision).

Value conventions (README): fp32 values are ``np.float32`` arrays; bf16 values are ``np.float32``
arrays whose elements are bf16-representable; FP8/FP4/E8M0 codes are ``np.uint8``.

Non-finite inputs are outside the reference's contract. The conventions below are the ones the
C++ engine chose (``src/numeric/qdq.h``), so the two can be compared on any input:
  * a block's amax ignores NaN elements; a NaN element stays NaN (E4M3 code 0x7F/0xFF when
    quantizing, a quiet bf16 NaN after QDQ);
  * an inf element makes amax = inf: the power-of-two scale becomes +inf (E8M0 code 0xFF) and the
    block dequantizes to NaN; the E4M3-scale FP4 variant saturates its scale to 448 instead.
"""

import numpy as np

F32 = np.float32

_SIGN = np.uint32(0x80000000)
_ABS = np.uint32(0x7FFFFFFF)
_INF_BITS = np.uint32(0x7F800000)


def _bits(x):
    """The uint32 bit patterns of a float32 array (a copy-free view where possible)."""
    return np.asarray(x, dtype=F32, order="C").view(np.uint32)


def _from_bits(u):
    return np.asarray(u, dtype=np.uint32, order="C").view(F32)


def _isnan_bits(u):
    return (u & _ABS) > _INF_BITS


# ---------------------------------------------------------------------------------------------
# bf16 (§2 intro: "bf16(x)" is RNE rounding of an fp32 value to bfloat16)
# ---------------------------------------------------------------------------------------------

def bf16_bits(x):
    """fp32 -> bf16 bit patterns (uint16), round to nearest even on the 16 dropped bits.

    Why on bits: the reference's bf16 tensors hold the upper half of the fp32 pattern. Adding
    0x7FFF plus the lowest kept bit rounds the magnitude with ties to even; a carry moves to the
    next binade (and from the top binade exactly onto the infinity pattern). NaNs are truncated
    and forced quiet (bf16 mantissa bit 6), the convention of src/numeric/bf16.h, so that a NaN
    whose payload lives only in the low half does not become an infinity.
    """
    u = _bits(x).astype(np.uint32)
    lsb = (u >> np.uint32(16)) & np.uint32(1)
    rounded = (u + np.uint32(0x7FFF) + lsb) >> np.uint32(16)
    nan = (u >> np.uint32(16)) | np.uint32(0x0040)
    return np.where(_isnan_bits(u), nan, rounded).astype(np.uint16)


def from_bf16_bits(h):
    """bf16 bit patterns (uint16) -> fp32 values (exact widening)."""
    u = np.asarray(h, dtype=np.uint16).astype(np.uint32) << np.uint32(16)
    return _from_bits(u)


def round_bf16(x):
    """bf16(x): the fp32 value nearest to x that bf16 can hold (RNE; NaN kept, made quiet)."""
    return from_bf16_bits(bf16_bits(x))


# ---------------------------------------------------------------------------------------------
# E4M3FN (§2.1)
# ---------------------------------------------------------------------------------------------

def _e4m3_table():
    """All 256 E4M3FN values from their fields: normals (exp e>0) are (8+m)·2^(e−10),
    subnormals m·2^−9; 0x7F/0xFF are NaN (sign kept); the sign bit gives −0 for 0x80."""
    codes = np.arange(256, dtype=np.uint32)
    sign = (codes & 0x80) << 24
    e = (codes >> 3) & 0xF
    m = codes & 0x7
    normal = sign | ((e + 120) << 23) | (m << 20)           # rebias 7 -> 127, mantissa to top
    sub_mag = (m.astype(F32) * F32(2.0 ** -9)).view(np.uint32)  # exact: 3-bit integer · 2^-9
    sub = sign | sub_mag
    vals = np.where(e == 0, sub, normal)
    vals = np.where((e == 15) & (m == 7), sign | np.uint32(0x7FC00000), vals)
    return vals.astype(np.uint32).view(F32)


_E4M3_TABLE = _e4m3_table()
E4M3_MAX = F32(448.0)


def e4m3_decode(codes):
    """E4M3FN codes (uint8) -> fp32 values; 0x7F/0xFF decode to a quiet NaN with the code's sign."""
    return _E4M3_TABLE[np.asarray(codes, dtype=np.uint8)]


def _finite_int(v):
    """Integer-valued floats to int64; non-finite entries (overridden by the caller) -> 0."""
    return np.where(np.isfinite(v), np.clip(v, -(2.0 ** 30), 2.0 ** 30), 0).astype(np.int64)


def e4m3_encode(x):
    """fp32 -> E4M3FN codes, round to nearest even, saturating to ±448, NaN -> 0x7F | sign.

    Method (independent of the C++ bit trick): the magnitude is divided by its quantum — 2^−9 in
    the subnormal range (|x| < 2^−6), 2^(e−3) in a normal binade 2^e — which is an exact scaling
    by a power of two, and ``np.rint`` rounds the quotient to an integer with ties to even. An
    even integer is an even code (the code's low bit is the mantissa's low bit), so this is RNE on
    the E4M3 grid. A quotient of 16 (a round-up out of the binade) lands on the next binade's
    first code. |x| >= 448 (inf included) saturates; 464, the midpoint towards the would-be code
    0x7F, ties to the even 0x7E = 448 anyway. The sign bit is kept for every result, so negative
    values that round to zero give 0x80.
    """
    u = _bits(x)
    sign = ((u >> np.uint32(24)) & np.uint32(0x80)).astype(np.uint8)
    a = (u & _ABS).view(F32)
    fexp = ((u & _ABS) >> np.uint32(23)).astype(np.int32)  # biased fp32 exponent field
    # Subnormal E4M3 range: integer q = rint(|x| / 2^-9) in 0..8 (8 is the smallest normal 0x08).
    with np.errstate(invalid="ignore", over="ignore"):
        q_sub = np.rint(a * F32(2.0 ** 9))
        # Normal range: |x| in [2^e, 2^(e+1)), e = fexp − 127 in [−6, 8]; q = rint(|x| / 2^(e−3))
        # in 8..16; code = ((e + 7) << 3) + (q − 8).
        e = fexp - 127
        quantum_exp = np.minimum(np.maximum(e - 3, -9), 5)
        scale = np.ldexp(F32(1.0), -quantum_exp).astype(F32)   # 2^-(e-3), exact
        q_norm = np.rint(a * scale)
    normal_code = ((np.minimum(np.maximum(e, -6), 8) + 7) << 3) + (_finite_int(q_norm) - 8)
    sub_code = _finite_int(q_sub)
    code = np.where(a < F32(2.0 ** -6), sub_code, normal_code)
    code = np.where(a >= E4M3_MAX, 0x7E, code)              # saturate (±inf included)
    code = np.where(np.isnan(a), 0x7F, code)
    return (code.astype(np.uint8) | sign).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# E8M0 (§2.1)
# ---------------------------------------------------------------------------------------------

def e8m0_decode(codes):
    """E8M0 codes -> fp32 2^(e−127); 0x00 is the fp32 subnormal 2^−127; 0xFF is NaN."""
    c = np.asarray(codes, dtype=np.uint8).astype(np.uint32)
    v = c << np.uint32(23)
    v = np.where(c == 0, np.uint32(0x00400000), v)
    v = np.where(c == 0xFF, np.uint32(0x7FC00000), v)
    return _from_bits(v)


def e8m0_encode_pow2(x):
    """fp32 power of two 2^k, k in [−127, 127] -> E8M0 code k+127. NaN and +inf -> 0xFF.

    +inf is accepted because it is the scale a block holding an infinity gets (module docstring);
    storing it as 0xFF (NaN) is what the engine's unchecked encoder does. Anything else (zero,
    negative, not a power of two) has no E8M0 code and raises ValueError.
    """
    u = _bits(x)
    exp = (u >> np.uint32(23)) & np.uint32(0xFF)
    man = u & np.uint32(0x7FFFFF)
    neg = (u >> np.uint32(31)) == 1
    nan = _isnan_bits(u)
    pos_inf = u == _INF_BITS
    normal_pow2 = (~neg) & (man == 0) & (exp != 0) & (exp != 0xFF)
    sub_pow2 = u == np.uint32(0x00400000)
    ok = nan | pos_inf | normal_pow2 | sub_pow2
    if not np.all(ok):
        bad = np.asarray(x, dtype=F32)[~ok].ravel()[:5]
        raise ValueError(f"e8m0_encode_pow2: not a power of two in [2^-127, 2^127]: {bad}")
    code = np.where(nan | pos_inf, np.uint32(0xFF), np.where(sub_pow2, np.uint32(0), exp))
    return code.astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# E2M1 / FP4 (§2.1)
# ---------------------------------------------------------------------------------------------

_E2M1_MAG = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=F32)
_E2M1_TABLE = np.concatenate([_E2M1_MAG, -_E2M1_MAG]).astype(F32)  # code 8 is −0
E2M1_MAX = F32(6.0)


def e2m1_decode(codes):
    """E2M1 codes (low 4 bits of each uint8) -> fp32: bit 3 sign, bits 0–2 index
    [0, 0.5, 1, 1.5, 2, 3, 4, 6]."""
    return _E2M1_TABLE[np.asarray(codes, dtype=np.uint8) & np.uint8(0xF)]


def e2m1_encode(x):
    """fp32 -> E2M1 code, nearest on the grid, exact ties to the even code (§2.1).

    The input is clamped to [−6, 6] first (the reference only encodes clamped values). The grid
    has quantum 0.5 on [0, 2), 1 on [2, 4) and 2 on [4, 6]; rounding |v| / quantum with
    ``np.rint`` (ties to even) picks the even multiple at a tie, and an even multiple of the
    quantum is exactly an even code: 0.25→0, 0.75→1, 1.25→1, 1.75→2, 2.5→2, 3.5→4, 5→4. The sign
    comes from the sign bit (−tiny and −0 give code 8). NaN is outside the contract; like the
    engine it maps to the zero code of its sign bit.
    """
    u = _bits(x)
    sign = ((u >> np.uint32(28)) & np.uint32(0x8)).astype(np.uint8)
    a = (u & _ABS).view(F32)
    with np.errstate(invalid="ignore"):
        a = np.where(np.isnan(a), F32(0), np.minimum(a, E2M1_MAX)).astype(F32)
        v = np.where(a < F32(2), np.rint(a * F32(2)) * F32(0.5),
                     np.where(a < F32(4), np.rint(a), np.rint(a * F32(0.5)) * F32(2)))
    idx = np.searchsorted(_E2M1_MAG, v.astype(F32))  # v is exactly a grid value
    return (idx.astype(np.uint8) | sign).astype(np.uint8)


def unpack_fp4(packed):
    """Packed FP4 bytes [..., K/2] -> codes [..., K]: byte j holds element 2j in the LOW nibble
    and element 2j+1 in the high nibble (``float4_e2m1fn_x2``, §2.1)."""
    p = np.asarray(packed, dtype=np.uint8)
    out = np.empty(p.shape[:-1] + (2 * p.shape[-1],), dtype=np.uint8)
    out[..., 0::2] = p & np.uint8(0xF)
    out[..., 1::2] = p >> np.uint8(4)
    return out


def pack_fp4(codes):
    """Inverse of unpack_fp4 (for tests and fixtures)."""
    c = np.asarray(codes, dtype=np.uint8)
    return ((c[..., 0::2] & 0xF) | ((c[..., 1::2] & 0xF) << 4)).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# §2.2 power-of-two scale
# ---------------------------------------------------------------------------------------------

def pow2_ceil_scale(t):
    """2^ceil(log2 t) on t's bits (§2.2, "fast_round_scale"): biased exponent field, plus one if
    any mantissa bit is set, rebuilt as a bare exponent ((e+127) << 23).

    Defined on |t| (sign ignored) like the engine: t in (2^127, inf] -> +inf; ±0 -> +0;
    subnormal -> 2^−126; NaN passed through. The amax floors keep real inputs normal.
    """
    u = _bits(t)
    exp = (u >> np.uint32(23)) & np.uint32(0xFF)
    bump = ((u & np.uint32(0x7FFFFF)) != 0).astype(np.uint32)
    out = (exp + bump) << np.uint32(23)
    out = np.where(_isnan_bits(u), u, out)
    return _from_bits(out)


# ---------------------------------------------------------------------------------------------
# §2.3 act_quant (FP8, 1×32, ue8m0) and §2.4 fp4_act_quant
# ---------------------------------------------------------------------------------------------

FP8_BLOCK = 32
FP4_E8M0_BLOCK = 32
FP4_E4M3_BLOCK = 16
FP8_AMAX_FLOOR = F32(1e-4)             # the Python constant 1e-4 compared in fp32
FP8_RECIP = F32(1.0 / 448.0)           # fp32(1/448)
FP4_RECIP = F32(1.0 / 6.0)             # fp32(1/6)
FP4_E8M0_AMAX_FLOOR = F32(6.0 * 2.0 ** -126)
FP4_E4M3_AMAX_FLOOR = F32(6.0 * 2.0 ** -9)


def _blocks(x, block, fn):
    x = np.asarray(x, dtype=F32)
    if x.ndim == 0 or x.shape[-1] % block != 0:
        raise ValueError(f"{fn}: last dimension {x.shape[-1:] or '()'} is not a multiple of "
                         f"the block size {block}")
    return x.reshape(x.shape[:-1] + (x.shape[-1] // block, block))


def block_amax(xb):
    """max |x| over the last axis, NaN elements ignored (0 for an all-NaN block)."""
    a = (_bits(xb) & _ABS).view(F32)
    a = np.where(np.isnan(a), F32(0), a)
    return a.max(axis=-1)


def _clamp_keep_nan(v, m):
    """clamp(v, −m, m) in which NaN passes (np.maximum / np.minimum propagate NaN)."""
    return np.minimum(np.maximum(v, -m), m).astype(F32)


def _fp8_block_scale(xb):
    """§2.3 steps 1–2: s = pow2-ceil(max(amax, 1e−4) · fp32(1/448)) per block."""
    amax = np.maximum(block_amax(xb), FP8_AMAX_FLOOR).astype(F32)
    return pow2_ceil_scale((amax * FP8_RECIP).astype(F32))


def act_quant(x):
    """§2.3 quantize mode: bf16 x[..., K] -> (q E4M3 codes [..., K], s E8M0 codes [..., K/32]).

    q = E4M3(clamp(x / s, −448, 448)) with the division in fp32 (exact: s is a power of two).
    A block holding inf gets s = +inf, stored as 0xFF (module docstring).
    """
    xb = _blocks(x, FP8_BLOCK, "act_quant")
    s = _fp8_block_scale(xb)
    with np.errstate(invalid="ignore"):
        v = _clamp_keep_nan((xb / s[..., None]).astype(F32), E4M3_MAX)
    q = e4m3_encode(v).reshape(np.shape(x))
    s_code = ((_bits(s) >> np.uint32(23)) & np.uint32(0xFF)).astype(np.uint8)  # unchecked encoder
    return q, s_code


def act_dequant(q, s_code):
    """float(q) · s per block in fp32 (exact unless it overflows fp32 — see act_quant_qdq)."""
    qb = e4m3_decode(q)
    qb = qb.reshape(qb.shape[:-1] + (qb.shape[-1] // FP8_BLOCK, FP8_BLOCK))
    s = e8m0_decode(s_code)
    with np.errstate(invalid="ignore", over="ignore"):
        d = (qb * s[..., None]).astype(F32)
    return d.reshape(np.shape(q))


def act_quant_qdq(x):
    """§2.3 in-place mode (FP8 QDQ): bf16(float(q) · s).

    The fp32 product is exact except at the very top of the bf16 range, where q·s can reach
    2^128 and becomes inf — the same product the reference evaluates (src/numeric/qdq.h).
    """
    q, s = act_quant(x)
    return round_bf16(act_dequant(q, s))


def _fp4_qdq_finish(xb, s):
    """§2.4 common tail: v = clamp(fp32(x / s), −6, 6); out = bf16(E2M1(v) · s); NaN kept."""
    with np.errstate(invalid="ignore", over="ignore"):
        v = _clamp_keep_nan((xb / s[..., None]).astype(F32), E2M1_MAX)
        deq = (e2m1_decode(e2m1_encode(v)) * s[..., None]).astype(F32)
    deq = np.where(np.isnan(v), v, deq)
    return round_bf16(deq)


def fp4_qdq_e8m0_b32(x):
    """§2.4 E8M0 variant, block 32 (indexer queries and index keys):
    amax floored at 6·2^−126; s = pow2-ceil(fp32(amax · fp32(1/6))); bf16(E2M1(clamp(x/s)) · s)."""
    xb = _blocks(x, FP4_E8M0_BLOCK, "fp4_qdq_e8m0_b32")
    amax = np.maximum(block_amax(xb), FP4_E8M0_AMAX_FLOOR).astype(F32)
    s = pow2_ceil_scale((amax * FP4_RECIP).astype(F32))
    return _fp4_qdq_finish(xb, s).reshape(np.shape(x))


def fp4_qdq_e4m3_b16(x):
    """§2.4 E4M3 variant, block 16 (compressed KV latent): amax floored at 6·2^−9;
    s = float(E4M3(fp32(amax / 6))) — an fp32 division by 6, then RNE to E4M3 with saturation;
    v = clamp(fp32(x / s), −6, 6) (a true, rounded division: s is not a power of two);
    out = bf16(E2M1(v) · s)."""
    xb = _blocks(x, FP4_E4M3_BLOCK, "fp4_qdq_e4m3_b16")
    amax = np.maximum(block_amax(xb), FP4_E4M3_AMAX_FLOOR).astype(F32)
    with np.errstate(over="ignore", invalid="ignore"):
        t = (amax / F32(6.0)).astype(F32)
    s = e4m3_decode(e4m3_encode(t))
    return _fp4_qdq_finish(xb, s).reshape(np.shape(x))
