"""Engram (reference-spec.md §8): the compressed token map, the hash layout, the n-gram hash and
the gated memory read, written from the spec alone (no code shared with src/).

Public functions (the module contract of tests/oracle/README.md):

    engram_token_map(tokenizer_json_path) -> (int32[n_tokens], compressed_vocab_size)   §8.2
    engram_layout(cfg) -> EngramLayout(primes, offsets)                                  §8.1
    hash_multipliers(cfg, layer_id) -> int64[max_ngram]                                   §8.1
    NgramHash(cfg, token_map)(ids, start_pos, mask) -> int64[S, n_engram_layers, cols]    §8.3
    engram_weights(tensors, layer_id) -> dict                                             §3.1
    engram_forward(X, hashes, mask, weights, cfg) -> bf16 f32[S, hc, dim]                 §8.4

Numerics follow docs/strict-numerics.md: every fp32 result of a reference torch op is
RNE32(RNE64(exact)); engram_forward documents where the spec's formulas are split into ops.
"""

from __future__ import annotations

import json
import unicodedata
from typing import NamedTuple

import numpy as np

# formats, strict and ops are imported inside the §8.4 functions, so that the token map, the
# layout and the hash (pure integer and string work) need no numeric module.

# --------------------------------------------------------------------------------------------
# §8.2 Compressed token map
# --------------------------------------------------------------------------------------------
#
# The reference built its table with the Hugging Face `tokenizers` (Rust) library, so each step
# below reproduces that library's behaviour, which differs from Python's str methods in places:
#
#   raw decode of [t]  ByteLevel decoder: if every character of the token string is one of the
#                      256 byte-alphabet characters, the token stands for those bytes; otherwise
#                      (added tokens such as "<｜User｜>") the token's own UTF-8 bytes are used,
#                      whole. Then UTF-8 decoding with invalid sequences replaced by U+FFFD
#                      (String::from_utf8_lossy; Python's errors="replace" may put a different
#                      number of U+FFFD, but only *whether* one appears matters here).
#   NFKC, NFD          unicodedata.normalize on the whole string.
#   StripAccents       drop every character of General_Category M (Mn, Mc, Me).
#   Lowercase          per character (Rust char::to_lowercase: the full mapping, no context, so
#                      no final-sigma rule: "ΟΣ" -> "οσ", where Python's str.lower gives "ος").
#                      A one-character str.lower() is exactly that mapping.
#   Replace            each run of [ \t\r\n] -> " "; a string that is exactly " " -> U+E000.
#   Strip              Unicode White_Space at both ends (Rust char::is_whitespace), NOT Python's
#                      str.strip() (which also strips U+001C..U+001F).
#   Replace            every U+E000 -> " ".
#
# Unicode versions: the library's NFKC/NFD/StripAccents use Unicode 9.0 tables (characters
# assigned later are left unchanged and are not marks); Python 3.11's unicodedata is Unicode
# 14.0. This makes no difference for the DeepSeek V3 / V4.1 vocabularies: the only characters of
# their decoded tokens that NFKC/NFD/StripAccents touch and that Unicode 3.2 (unicodedata.
# ucd_3_2_0) does not know are U+0358 (Unicode 4.1) and U+103A, U+103D, U+103E (Unicode 5.1),
# all older than 9.0, and for every other such character the 3.2 and 14.0 tables agree
# (tests/oracle/test_engram.py checks both facts, and compares the whole map with the library's).
# Lowercase in the library uses Rust's own (newer) tables, which likewise agree here.

_SENTINEL = "\ue000"  # private use: protects a lone " " from Strip

# Unicode White_Space (PropList.txt; unchanged since Unicode 6.3 removed U+180E).
_WHITE_SPACE = frozenset(
    [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680]
    + list(range(0x2000, 0x200B))
    + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
)
_WHITE_SPACE_CHARS = "".join(chr(c) for c in sorted(_WHITE_SPACE))
_COLLAPSE = frozenset(" \t\r\n")


def _byte_alphabet() -> dict:
    """The GPT-2 ByteLevel alphabet: character -> byte. Printable Latin-1 bytes ('!'..'~',
    '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68 bytes map, in byte order, onto
    U+0100, U+0101, ..."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    char_to_byte = {chr(b): b for b in printable}
    shifted = 0
    for b in range(256):
        if b not in char_to_byte.values():
            char_to_byte[chr(256 + shifted)] = b
            shifted += 1
    return char_to_byte


_CHAR_TO_BYTE = _byte_alphabet()


def byte_level_decode(token: str) -> bytes:
    """The ByteLevel decoder on one token: its bytes if every character is in the alphabet,
    otherwise the token's own UTF-8."""
    try:
        return bytes(_CHAR_TO_BYTE[c] for c in token)
    except KeyError:
        return token.encode("utf-8")


def engram_normalize(text: str) -> str:
    """The §8.2 normalizer Sequence (see the table above)."""
    if text.isascii():
        s = text.lower()  # NFKC/NFD leave ASCII alone and ASCII has no marks
    else:
        s = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
        s = "".join(c.lower() for c in s if not unicodedata.category(c).startswith("M"))
    # Replace(/[ \t\r\n]+/ -> " ")
    out = []
    in_run = False
    for c in s:
        ws = c in _COLLAPSE
        if not (ws and in_run):
            out.append(" " if ws else c)
        in_run = ws
    s = "".join(out)
    # Replace(/^ $/ -> U+E000), Strip (White_Space), Replace(U+E000 -> " ")
    if s == " ":
        s = _SENTINEL
    s = s.strip(_WHITE_SPACE_CHARS)
    return s.replace(_SENTINEL, " ")


def engram_token_key(token: str) -> str:
    """The key of one token string (§8.2): the raw token if its raw decode has U+FFFD, else the
    normalized decode, or the decode itself when normalization leaves nothing."""
    text = byte_level_decode(token).decode("utf-8", errors="replace")
    if "\ufffd" in text:
        return token
    key = engram_normalize(text)
    return key if key != "" else text


def tokenizer_tokens(tokenizer_json_path: str) -> list:
    """id -> token string of a tokenizer.json, as the `tokenizers` library numbers them:
    model.vocab gives its ids; an added token already in the vocab keeps that id; every other
    added token takes the next id, in the order of `added_tokens`."""
    with open(tokenizer_json_path, "r", encoding="utf-8") as f:
        doc = json.load(f)
    try:
        vocab = doc["model"]["vocab"]
        added = doc.get("added_tokens") or []
    except (KeyError, TypeError) as e:
        raise ValueError(f"{tokenizer_json_path}: not a tokenizer.json with model.vocab") from e
    if not isinstance(vocab, dict):
        raise ValueError(f"{tokenizer_json_path}: model.vocab is not a token -> id object")
    n = len(vocab)
    tokens: list = [None] * n
    for tok, i in vocab.items():
        if not isinstance(i, int) or not 0 <= i < n or tokens[i] is not None:
            raise ValueError(f"{tokenizer_json_path}: model.vocab ids are not 0..{n - 1} (id {i!r})")
        tokens[i] = tok
    known = dict(vocab)
    for a in added:
        content = a["content"]
        if content in known:
            continue
        known[content] = len(tokens)
        tokens.append(content)
    return tokens


def engram_token_map(tokenizer_json_path: str):
    """§8.2: (map int32[n_tokens], compressed_vocab_size). Keys get dense ids in order of first
    appearance over token ids 0 .. n_tokens - 1."""
    tokens = tokenizer_tokens(tokenizer_json_path)
    key_to_id: dict = {}
    out = np.empty(len(tokens), dtype=np.int32)
    for t, tok in enumerate(tokens):
        key = engram_token_key(tok)
        cid = key_to_id.get(key)
        if cid is None:
            cid = len(key_to_id)
            key_to_id[key] = cid
        out[t] = cid
    return out, len(key_to_id)


# --------------------------------------------------------------------------------------------
# §8.1 Layout: primes, column offsets, hash multipliers
# --------------------------------------------------------------------------------------------

def _is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24 (the first 13 prime bases)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    for p in small:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


class EngramLayout(NamedTuple):
    """primes int64[n_engram_layers, max_ngram - 1, n_heads] (primes[l][n - 2][h] is the table
    size of order n, head h); offsets int64[n_engram_layers, (max_ngram - 1) * n_heads], the
    exclusive prefix sums of the primes in (n, head) order. Unpacks as (primes, offsets)."""

    primes: np.ndarray
    offsets: np.ndarray

    @property
    def rows(self) -> np.ndarray:
        """Table rows per engram layer: the sum of its primes (= engram_num_embeddings)."""
        return self.primes.reshape(self.primes.shape[0], -1).sum(axis=1)


def engram_layout(cfg) -> EngramLayout:
    """§8.1 prime search. One set of used primes shared by all engram layers; for each engram
    layer (in engram_layer_ids order) and each order n = 2..max_ngram, start from
    engram_vocab_size - 1 (a per-order list is also accepted) and give each head the smallest
    unused prime greater than the current value, continuing from it."""
    max_ngram = int(cfg.engram_max_ngram_size)
    n_heads = int(cfg.engram_n_heads)
    vocab_sizes = cfg.engram_vocab_size
    if isinstance(vocab_sizes, (int, np.integer)):
        vocab_sizes = [int(vocab_sizes)] * (max_ngram - 1)
    if len(vocab_sizes) != max_ngram - 1:
        raise ValueError(f"engram_vocab_size: {len(vocab_sizes)} values for {max_ngram - 1} n-gram orders")
    used: set = set()
    layers = []
    for _layer_id in cfg.engram_layer_ids:
        per_n = []
        for n in range(2, max_ngram + 1):
            current = int(vocab_sizes[n - 2]) - 1
            heads = []
            for _h in range(n_heads):
                candidate = current + 1
                while not _is_prime(candidate) or candidate in used:
                    candidate += 1
                used.add(candidate)
                heads.append(candidate)
                current = candidate
            per_n.append(heads)
        layers.append(per_n)
    primes = np.array(layers, dtype=np.int64).reshape(len(layers), max_ngram - 1, n_heads)
    flat = primes.reshape(len(layers), -1)
    offsets = np.zeros_like(flat)
    offsets[:, 1:] = np.cumsum(flat, axis=1)[:, :-1]
    return EngramLayout(primes, offsets)


def hash_multipliers(cfg, layer_id: int) -> np.ndarray:
    """§8.1: bound = max(1, (2^63 - 1) // compressed_vocab_size // 2);
    v = default_rng(10007 * layer_id).integers(0, bound, size=max_ngram, dtype=int64);
    m = 2v + 1 (odd). m[s] multiplies the compressed id s positions back."""
    compressed = int(cfg.engram_compressed_vocab_size)
    bound = max(1, (2**63 - 1) // compressed // 2)
    v = np.random.default_rng(10007 * int(layer_id)).integers(
        0, bound, size=int(cfg.engram_max_ngram_size), dtype=np.int64)
    return v * 2 + 1


# --------------------------------------------------------------------------------------------
# §8.3 NgramHash
# --------------------------------------------------------------------------------------------

DEAD = -1  # cache value of an image token (mask false): blocks every n-gram through it


class NgramHash:
    """§8.3 for one sequence. Holds the persistent cache of compressed ids (int64, DEAD = -1 for
    image tokens) of every position written so far, so calls may come in chunks at any
    start_pos: a call at start_pos overwrites positions start_pos.. and forgets anything after
    them (the reference never reads a position before rewriting it).

    token_map: the int32 map of engram_token_map (or the (map, size) pair it returns)."""

    def __init__(self, cfg, token_map):
        if isinstance(token_map, tuple):
            token_map, size = token_map
            if int(size) != int(cfg.engram_compressed_vocab_size):
                raise ValueError(f"the token map has {size} compressed ids, the config says "
                                 f"engram_compressed_vocab_size = {cfg.engram_compressed_vocab_size}")
        self.map = np.asarray(token_map, dtype=np.int64)
        if self.map.ndim != 1 or self.map.size == 0:
            raise ValueError("token_map must be a non-empty 1-D array")
        if int(self.map.max()) >= int(cfg.engram_compressed_vocab_size):
            raise ValueError(f"token map ids reach {int(self.map.max())}, beyond "
                             f"engram_compressed_vocab_size = {cfg.engram_compressed_vocab_size}")
        self.max_ngram = int(cfg.engram_max_ngram_size)
        self.n_heads = int(cfg.engram_n_heads)
        layout = engram_layout(cfg)
        self.primes = layout.primes        # [L, max_ngram - 1, n_heads]
        self.offsets = layout.offsets      # [L, (max_ngram - 1) * n_heads]
        self.multipliers = np.stack([hash_multipliers(cfg, lid) for lid in cfg.engram_layer_ids])
        self.pad = int(self.map[self._check_id(int(cfg.engram_pad_id), "engram_pad_id")])
        self.cache = np.zeros(0, dtype=np.int64)

    def _check_id(self, token_id: int, what: str = "token id") -> int:
        if not 0 <= token_id < self.map.size:
            raise ValueError(f"{what} {token_id} has no Engram compressed id: the tokenizer defines "
                             f"ids 0..{self.map.size - 1} only (spec §16.6)")
        return token_id

    def reset(self) -> None:
        self.cache = np.zeros(0, dtype=np.int64)

    def __call__(self, ids, start_pos: int, mask=None) -> np.ndarray:
        """ids int[S] (absolute positions start_pos .. start_pos + S - 1), mask bool[S] (False for
        image tokens; None = all text). Returns int64[S, n_engram_layers, (max_ngram-1)*n_heads]:
        row indices into each layer's table (already offset by the column's base)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        S = ids.size
        mask = np.ones(S, dtype=bool) if mask is None else np.asarray(mask, dtype=bool).reshape(-1)
        if mask.size != S:
            raise ValueError(f"mask has {mask.size} entries for {S} ids")
        start_pos = int(start_pos)
        if not 0 <= start_pos <= self.cache.size:
            raise ValueError(f"start_pos {start_pos}: positions 0..{self.cache.size - 1} are written, "
                             f"a call must start at or before {self.cache.size}")
        # Step 1: compressed ids; image tokens are DEAD. Their ids are not looked up (they need
        # no compressed id); every text id must be one the tokenizer defines (§16.6).
        bad = mask & ((ids < 0) | (ids >= self.map.size))
        if bad.any():
            self._check_id(int(ids[np.argmax(bad)]))
        c = np.full(S, DEAD, dtype=np.int64)
        c[mask] = self.map[ids[mask]]
        self.cache = np.concatenate([self.cache[:start_pos], c])

        # Step 2: shifted tokens with cumulative blocking.
        pos = start_pos + np.arange(S, dtype=np.int64)
        toks = np.empty((self.max_ngram, S), dtype=np.int64)
        blocked = np.zeros(S, dtype=bool)
        for s in range(self.max_ngram):
            src = self.cache[np.maximum(pos - s, 0)]
            blocked = blocked | (pos < s) | (src == DEAD)
            toks[s] = np.where(blocked, self.pad, src)

        # Step 3: per engram layer, multiply, roll XOR, reduce modulo each head's prime.
        n_layers = self.primes.shape[0]
        out = np.empty((S, n_layers, (self.max_ngram - 1) * self.n_heads), dtype=np.int64)
        for l in range(n_layers):
            prod = toks * self.multipliers[l][:, None]  # < 2^63 by the choice of bound: exact
            roll = prod[0].copy()
            for n in range(2, self.max_ngram + 1):
                roll ^= prod[n - 1]
                for h in range(self.n_heads):
                    col = (n - 2) * self.n_heads + h
                    out[:, l, col] = roll % self.primes[l, n - 2, h] + self.offsets[l, col]
        return out


# --------------------------------------------------------------------------------------------
# §8.4 Engram_L.forward
# --------------------------------------------------------------------------------------------

_WEIGHT_NAMES = ("embed.weight", "embed.scale", "wkv.weight", "wkv.scale", "q_weight", "k_weight")


def engram_weights(tensors: dict, layer_id: int) -> dict:
    """The raw tensors of layer `layer_id`'s Engram (spec §3.1 `layers.L.engram.*`) from a
    safetensors.load_model dict, keyed by the short names embed.weight, embed.scale, wkv.weight,
    wkv.scale, q_weight, k_weight."""
    prefix = f"layers.{int(layer_id)}.engram."
    missing = [n for n in _WEIGHT_NAMES if prefix + n not in tensors]
    if missing:
        raise KeyError(f"missing Engram tensors: {', '.join(prefix + n for n in missing)}")
    return {n: tensors[prefix + n] for n in _WEIGHT_NAMES}


def _weight(weights: dict, name: str):
    """weights[name], accepting short names or full `layers.L.engram.` names."""
    if name in weights:
        return weights[name]
    hits = [k for k in weights if k.endswith("engram." + name)]
    if len(hits) != 1:
        raise KeyError(f"Engram weight {name!r}: {len(hits)} matching entries")
    return weights[hits[0]]


def _bf16_values(a) -> np.ndarray:
    """A BF16 tensor as its f32 values (raw uint16 bits as load_model gives them, or values)."""
    from . import formats
    a = np.asarray(a)
    if a.dtype == np.uint16:
        return formats.from_bf16_bits(a)
    return a.astype(np.float32)


def engram_rows(hashes, embed_codes, embed_scale) -> np.ndarray:
    """§8.4 step 1: E[s, j, :] = bf16(e4m3(row hashes[s, j]) · e8m0 scale of each 32 channels),
    flattened to [S, n_cols * head_dim] (column order = id order). The product is exact (a
    4-bit significand times a power of two) except where it leaves the fp32 range; it is
    rounded once to fp32, then to bf16."""
    from . import formats, strict
    hashes = np.asarray(hashes, dtype=np.int64)
    rows = int(embed_codes.shape[0])
    if hashes.size and (int(hashes.min()) < 0 or int(hashes.max()) >= rows):
        raise ValueError(f"Engram row index out of the table's {rows} rows")
    head_dim = int(embed_codes.shape[1])
    codes = np.asarray(embed_codes[hashes.reshape(-1)])                 # [S*n, head_dim]
    scales = np.asarray(embed_scale[hashes.reshape(-1)]).reshape(codes.shape[0], -1)
    if scales.shape[1] * 32 != head_dim:
        raise ValueError(f"embed.scale has {scales.shape[1]} blocks for head_dim {head_dim}")
    vals = formats.e4m3_decode(codes).astype(np.float64)
    sc = np.repeat(formats.e8m0_decode(scales).astype(np.float64), 32, axis=1)
    e = formats.round_bf16(strict.f32(vals * sc))
    return e.reshape(hashes.shape[0], -1)


def engram_forward(X, hashes, mask, weights: dict, cfg, return_intermediates: bool = False):
    """§8.4 for one sequence.

    X: bf16 f32[S, hc, dim] (the residual stream before layer L); hashes: int64[S, n_cols]
    (this layer's slice of NgramHash's output); mask: bool[S] (False for image tokens);
    weights: the layer's raw tensors (engram_weights). Returns bf16 f32[S, hc, dim], or
    (out, intermediates dict) when return_intermediates.

    Rounding points (docs/strict-numerics.md rule 1; f32(op) = RNE32(RNE64(exact))):
      E          = bf16(f32(e4m3 · e8m0))                                  (engram_rows)
      kv         = ops.linear_fp8(E)  -> bf16 [S, (hc + 1) · dim]
      key        = kv[:, :hc·dim] viewed [S, hc, dim] (copy-major), value = kv[:, hc·dim:]
      wgt        = f32(f32(q_weight) · f32(k_weight))          exact: a product of two bf16
      h          = f32(X)
      per copy c (torch ops: square, mean, + eps, rsqrt, then the product of the two rsqrts):
        h2       = f32(h · h)        exact for bf16 h (16-bit significand) unless it underflows
        ms_h     = smean(h2)         one op: exact sum / dim, rounded once
        a_h      = f32(ms_h + f32(1e-20))
        r_h      = srsqrt(a_h)       one float64 evaluation, rounded once
        (the same for key: r_k)
        rstd     = f32(r_h · r_k)
      dot (torch: h * wgt, then * key, elementwise fp32 ops, then a sum over dim):
        hw       = f32(h · wgt)      exact (8-bit times 16-bit significand) unless it underflows
        hwk      = f32(hw · key)     rounded: the only inexact product
        sum      = ssum(hwk)         one op: exact sum, rounded once
        dot      = f32(f32(sum · rstd) · f32(dim^-0.5))   left to right, as the spec writes it
      gate (torch: abs, clamp_min, sqrt, sign, mul, sigmoid):
        mag      = max(|dot|, f32(1e-6))                  exact
        rt       = ssqrt(mag)
        sg       = sign(dot) · rt                         exact (sign is -1, 0 or +1)
        gate     = ssigmoid(sg), then 0 where mask is false
      out        = bf16(f32(h + f32(gate · value)))      two fp32 ops, one bf16 rounding at the end
    For an image token (mask false) gate = 0, so out = bf16(h + 0) = X exactly.
    """
    from . import formats, ops, strict

    X = np.asarray(X, dtype=np.float32)
    S, hc, dim = X.shape
    if hc != int(cfg.hc_mult) or dim != int(cfg.dim):
        raise ValueError(f"X has shape {X.shape}, expected [S, {cfg.hc_mult}, {cfg.dim}]")
    hashes = np.asarray(hashes, dtype=np.int64).reshape(S, -1)
    n_cols = (int(cfg.engram_max_ngram_size) - 1) * int(cfg.engram_n_heads)
    if hashes.shape[1] != n_cols:
        raise ValueError(f"hashes have {hashes.shape[1]} columns, expected {n_cols}")
    mask = np.ones(S, dtype=bool) if mask is None else np.asarray(mask, dtype=bool).reshape(S)

    # Step 1: table rows.
    E = engram_rows(hashes, _weight(weights, "embed.weight"), _weight(weights, "embed.scale"))
    if E.shape[1] != n_cols * int(cfg.engram_head_dim):
        raise ValueError(f"Engram rows have {E.shape[1]} values per position, expected "
                         f"{n_cols} x {cfg.engram_head_dim}")

    # Step 2: kv = wkv(E), bf16; key (fp32 view of the bf16 values) and value.
    kv = ops.linear_fp8(E, np.asarray(_weight(weights, "wkv.weight")),
                        np.asarray(_weight(weights, "wkv.scale")))
    if kv.shape != (S, (hc + 1) * dim):
        raise ValueError(f"wkv output has shape {kv.shape}, expected {(S, (hc + 1) * dim)}")
    key = np.ascontiguousarray(kv[:, : hc * dim], dtype=np.float32).reshape(S, hc, dim)
    value = np.ascontiguousarray(kv[:, hc * dim:], dtype=np.float32)      # [S, dim]

    # Step 3: wgt = f32(q_weight) · f32(k_weight) -> [hc, dim].
    q_w = _bf16_values(_weight(weights, "q_weight"))
    k_w = _bf16_values(_weight(weights, "k_weight"))
    wgt = strict.f32(q_w.astype(np.float64) * k_w.astype(np.float64))

    def mul(a, b):
        return strict.f32(np.asarray(a, np.float64) * np.asarray(b, np.float64))

    def add(a, b):
        return strict.f32(np.asarray(a, np.float64) + np.asarray(b, np.float64))

    eps = np.float32(1e-20)
    # Step 4: per-copy norms and the dot product.
    h = X
    r_h = strict.srsqrt(add(strict.smean(mul(h, h), axis=-1), eps))        # [S, hc]
    r_k = strict.srsqrt(add(strict.smean(mul(key, key), axis=-1), eps))    # [S, hc]
    rstd = mul(r_h, r_k)
    hwk = mul(mul(h, wgt[None, :, :]), key)
    dsum = strict.ssum(hwk, axis=-1)                                       # [S, hc]
    dot = mul(mul(dsum, rstd), np.float32(dim ** -0.5))

    # Step 5: signed square root, sigmoid, image tokens closed.
    mag = np.maximum(np.abs(dot), np.float32(1e-6)).astype(np.float32)
    sg = (np.sign(dot) * strict.ssqrt(mag)).astype(np.float32)
    gate = np.asarray(strict.ssigmoid(sg), dtype=np.float32)
    gate = np.where(mask[:, None], gate, np.float32(0)).astype(np.float32)

    # Step 6: out = bf16(h + gate · value).
    out = formats.round_bf16(add(h, mul(gate[:, :, None], value[:, None, :])))
    if return_intermediates:
        return out, {"E": E, "kv": kv, "key": key, "value": value, "wgt": wgt, "rstd": rstd,
                     "dot": dot, "gate": gate}
    return out
