"""Slow scalar reference arithmetic for the oracle's tests (not part of dsv4_oracle).

Written deliberately unlike the vectorised code under test: values are Python Fractions, rounding
is an explicit search for the two neighbouring representable values, and ties are decided by
the parity of the significand. Nothing here imports dsv4_oracle.
"""

import math
import struct
from fractions import Fraction


def f32_bits(v):
    """Bits of the float32 nearest to the Python float v (C cast, RNE)."""
    return struct.unpack("<I", struct.pack("<f", v))[0]


def bits_f32(u):
    return struct.unpack("<f", struct.pack("<I", u & 0xFFFFFFFF))[0]


def round_fraction(x, p, emin, max_finite=None, saturate=False):
    """Round the exact rational x to a binary format with p significand bits (implicit bit
    included), minimum normal exponent emin (subnormals below, quantum 2^(emin−p+1)), round to
    nearest with ties to the even significand. Overflow: beyond max_finite (if given) the result
    is ±inf unless saturate (then ±max_finite). Returns a Fraction (or ±math.inf)."""
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, emin)                       # subnormals share the quantum of the lowest binade
    quantum = Fraction(2) ** (e - p + 1)
    q = a / quantum
    n = q.numerator // q.denominator
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * quantum
    if max_finite is not None:
        if saturate and r > max_finite:
            r = Fraction(max_finite)
        elif not saturate:
            # overflow threshold: the midpoint between max_finite and the next would-be value
            step = Fraction(2) ** (math.floor(math.log2(max_finite)) - p + 1)
            if a >= max_finite + step / 2 and r > max_finite:
                return sign * math.inf
    return sign * r


def rne32(x):
    """float32 nearest to the rational (or float) x, as a Python float (±inf on overflow)."""
    r = round_fraction(Fraction(x), 24, -126, max_finite=Fraction((2 ** 24 - 1) * 2 ** 104))
    return float(r)


def rne64(x):
    return float(Fraction(x))  # Fraction -> float is correctly rounded (ties to even)


def bf16(x):
    """bf16 rounding of a real x (float/Fraction), ±inf on overflow."""
    r = round_fraction(Fraction(x), 8, -126, max_finite=Fraction(255 * 2 ** 120))
    return float(r)


E4M3_MAX = Fraction(448)


def e4m3_value(code):
    """Value of an E4M3FN code from its fields (None for the NaN codes)."""
    s = -1 if code & 0x80 else 1
    e = (code >> 3) & 15
    m = code & 7
    if e == 15 and m == 7:
        return None
    if e == 0:
        return s * Fraction(m, 512)
    return s * Fraction(8 + m, 8) * Fraction(2) ** (e - 7)


def e4m3_code(x):
    """E4M3FN code nearest to float x (RNE, saturating to 448, sign kept, NaN -> 0x7F|sign)."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7F
    if math.isinf(x):
        return sign | 0x7E
    r = round_fraction(abs(Fraction(x)), 4, -6, max_finite=E4M3_MAX, saturate=True)
    return sign | _E4M3_CODE_OF[r]


_E4M3_CODE_OF = {e4m3_value(c): c for c in range(0x7F)}

E2M1_MAG = [Fraction(v) for v in ("0", "0.5", "1", "1.5", "2", "3", "4", "6")]


def e2m1_code(x):
    """Nearest E2M1 code of a float already in [−6, 6]; ties to the even code index."""
    sign = 8 if math.copysign(1.0, x) < 0 else 0
    a = abs(Fraction(x))
    best, best_d = None, None
    for i, m in enumerate(E2M1_MAG):
        d = abs(m - a)
        if best is None or d < best_d or (d == best_d and i % 2 == 0):
            best, best_d = i, d
    return sign | best


def pow2_ceil(t):
    """Smallest power of two >= t > 0 (as a Fraction)."""
    t = Fraction(t)
    p = Fraction(1)
    while p < t:
        p *= 2
    while p / 2 >= t:
        p /= 2
    return p
