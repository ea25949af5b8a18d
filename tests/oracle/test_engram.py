"""Tests of dsv4_oracle.engram (reference-spec.md §8, §16.6).

Run: cd tests/oracle && /usr/bin/python3 -m unittest -v test_engram

Needs the downloaded test data (bash tests/data/fetch_test_data.sh; $DSV4_TEST_DATA may point
elsewhere): the DeepSeek V3 tokenizer.json, tokenizer-v41.json and the Node binding of the Hugging
Face `tokenizers` library, which gives the ground-truth token map. The engram_forward tests build
a tiny fixture with the dsv4 binary ($DSV4_BINARY, else <repo>/build/dsv4). Missing data is a
failure with instructions, as in the C++ tests.
"""

import importlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import types
import unicodedata
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.environ.get("DSV4_TEST_DATA") or os.path.join(REPO, "tests", "data", "downloaded")
BINARY = os.environ.get("DSV4_BINARY") or os.path.join(REPO, "build", "dsv4")
FETCH_HINT = "run `bash tests/data/fetch_test_data.sh` (or point DSV4_TEST_DATA at a directory it filled)"


# ------------------------------------------------------------------------------------------------
# Stand-ins for sibling modules that are not written yet (formats, strict, ops, safetensors).
# The real module is used whenever it imports and has the names this test needs; a stand-in is a
# plain, test-only implementation of the README contract (not bit-exact where it need not be).
# ------------------------------------------------------------------------------------------------

def _standin_formats():
    m = types.ModuleType("dsv4_oracle.formats")

    def round_bf16(x):
        x = np.ascontiguousarray(x, dtype=np.float32)
        u = x.view(np.uint32).astype(np.uint64)
        r = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
        return np.where(np.isnan(x), x, r).astype(np.float32)

    def from_bf16_bits(u16):
        return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)

    def _e4m3_table():
        t = np.zeros(256, dtype=np.float64)
        for c in range(256):
            s, e, f = c >> 7, (c >> 3) & 15, c & 7
            v = (f / 8.0) * 2.0 ** -6 if e == 0 else (1 + f / 8.0) * 2.0 ** (e - 7)
            t[c] = -v if s else v
        t[0x7F] = t[0xFF] = np.nan
        return t

    table = _e4m3_table()

    def e4m3_decode(codes):
        return table[np.asarray(codes, dtype=np.uint8)].astype(np.float32)

    def e8m0_decode(codes):
        c = np.asarray(codes, dtype=np.uint8).astype(np.float64)
        return np.where(c == 255, np.nan, np.exp2(c - 127)).astype(np.float32)

    pos = np.arange(0x7F)            # codes 0..126: the non-negative finite values, increasing
    pos_vals = table[pos]

    def e4m3_encode(x):
        x = np.clip(np.asarray(x, dtype=np.float64), -448, 448)
        a = np.abs(x)
        i = np.clip(np.searchsorted(pos_vals, a), 1, 126)
        lo, hi = pos_vals[i - 1], pos_vals[i]
        pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (i % 2 == 0))
        code = np.where(a <= 0, 0, np.where(pick_hi, i, i - 1)).astype(np.uint8)
        return np.where(x < 0, code | 0x80, code).astype(np.uint8)

    def act_quant(x):
        x = np.asarray(x, dtype=np.float32)
        blocks = x.reshape(x.shape[:-1] + (-1, 32))
        amax = np.maximum(np.abs(blocks).max(axis=-1), np.float32(1e-4))
        t = (amax * np.float32(1 / 448)).astype(np.float32)
        bits = t.view(np.uint32)
        e = ((bits >> 23) & 0xFF).astype(np.int64) - 127 + ((bits & 0x7FFFFF) != 0)
        s = np.exp2(e.astype(np.float64)).astype(np.float32)
        q = e4m3_encode(blocks / s[..., None]).reshape(x.shape)
        return q, (e + 127).astype(np.uint8)

    m.round_bf16, m.from_bf16_bits = round_bf16, from_bf16_bits
    m.e4m3_decode, m.e8m0_decode, m.e4m3_encode, m.act_quant = e4m3_decode, e8m0_decode, e4m3_encode, act_quant
    return m


def _standin_strict():
    m = types.ModuleType("dsv4_oracle.strict")

    def f32(x):
        return np.asarray(np.asarray(x, dtype=np.float64), dtype=np.float32)

    def ssum(x, axis):
        return f32(np.sum(np.asarray(x, np.float64), axis=axis))   # float64 sum; fine for a stand-in

    def smean(x, axis):
        x = np.asarray(x, np.float64)
        return f32(np.sum(x, axis=axis) / x.shape[axis])

    m.f32, m.ssum, m.smean = f32, ssum, smean
    m.srsqrt = lambda x: f32(1.0 / np.sqrt(np.asarray(x, np.float64)))
    m.ssqrt = lambda x: f32(np.sqrt(np.asarray(x, np.float64)))
    m.ssigmoid = lambda x: f32(1.0 / (1.0 + np.exp(-np.asarray(x, np.float64))))
    return m


def _standin_ops(formats):
    m = types.ModuleType("dsv4_oracle.ops")

    def linear_fp8(x, w_codes, w_scale):
        q, s = formats.act_quant(x)
        a = formats.e4m3_decode(q).astype(np.float64) * np.repeat(formats.e8m0_decode(s), 32, axis=-1)
        ws = np.repeat(np.repeat(formats.e8m0_decode(w_scale).astype(np.float64), 32, axis=0), 32, axis=1)
        w = formats.e4m3_decode(np.asarray(w_codes)).astype(np.float64) * ws[: w_codes.shape[0], : w_codes.shape[1]]
        return formats.round_bf16((a @ w.T).astype(np.float32))

    m.linear_fp8 = linear_fp8
    return m


def _standin_safetensors():
    m = types.ModuleType("dsv4_oracle.safetensors")
    dtypes = {"BF16": np.uint16, "F8_E4M3": np.uint8, "F8_E8M0": np.uint8, "I8": np.uint8,
              "F32": np.float32, "I32": np.int32, "I64": np.int64}

    def load_model(d):
        with open(os.path.join(d, "model.safetensors.index.json")) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        out = {}
        for fn in files:
            path = os.path.join(d, fn)
            with open(path, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(n))
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                b, e = info["data_offsets"]
                dt = dtypes[info["dtype"]]
                out[name] = np.memmap(path, dtype=dt, mode="r", offset=8 + n + b,
                                      shape=tuple(info["shape"]) if e > b else (0,))
        return out

    m.load_model = load_model
    return m


STANDINS = []


def _module(name, needed, make):
    full = "dsv4_oracle." + name
    try:
        mod = importlib.import_module(full)
        if all(hasattr(mod, n) for n in needed):
            return mod
    except ImportError:
        pass
    mod = make()
    sys.modules[full] = mod
    import dsv4_oracle
    setattr(dsv4_oracle, name, mod)
    STANDINS.append(name)
    return mod


formats = _module("formats", ["round_bf16", "from_bf16_bits", "e4m3_decode", "e8m0_decode", "act_quant"],
                  _standin_formats)
strict = _module("strict", ["f32", "ssum", "smean", "srsqrt", "ssqrt", "ssigmoid"], _standin_strict)
ops = _module("ops", ["linear_fp8"], lambda: _standin_ops(formats))
safetensors = _module("safetensors", ["load_model"], _standin_safetensors)

from dsv4_oracle import engram  # noqa: E402  (after the stand-ins are in place)

if STANDINS:
    sys.stderr.write(f"test_engram: using test-only stand-ins for dsv4_oracle.{', '.join(STANDINS)}\n")


def data_file(test, name):
    path = os.path.join(DATA, name)
    if not os.path.isfile(path):
        test.fail(f"test data file {path} is missing: {FETCH_HINT}")
    return path


# ------------------------------------------------------------------------------------------------
# Configurations
# ------------------------------------------------------------------------------------------------

RELEASED_ENGRAM = dict(
    engram_layer_ids=[1, 14], engram_vocab_size=16000000,
    engram_num_embeddings=[384006168, 384016682], engram_max_ngram_size=4, engram_pad_id=2,
    engram_compressed_vocab_size=99092, engram_n_heads=8, engram_head_dim=256, dim=5120, hc_mult=4)


def released_config():
    """The released values of spec §1.1 (the Engram fields), through config.py when it exists."""
    try:
        from dsv4_oracle import config as config_mod
        load = config_mod.load_config
    except (ImportError, AttributeError):
        return types.SimpleNamespace(**RELEASED_ENGRAM)
    d = tempfile.mkdtemp(prefix="engram_cfg_")
    try:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(RELEASED_ENGRAM, f)
        try:
            return load(d)
        except Exception:  # a config.py that wants every field: the spec values are what matter
            return types.SimpleNamespace(**RELEASED_ENGRAM)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fixture_config(model_dir):
    try:
        from dsv4_oracle import config as config_mod
        return config_mod.load_config(model_dir)
    except (ImportError, AttributeError):
        with open(os.path.join(model_dir, "config.json")) as f:
            return types.SimpleNamespace(**json.load(f))


# ------------------------------------------------------------------------------------------------
# §8.2 token map
# ------------------------------------------------------------------------------------------------

class TokenMapTest(unittest.TestCase):
    maps = {}

    @classmethod
    def built(cls, test, name):
        if name not in cls.maps:
            path = data_file(test, name)
            t0 = time.perf_counter()
            cls.maps[name] = engram.engram_token_map(path)
            sys.stderr.write(f"\n  engram_token_map({name}): {time.perf_counter() - t0:.2f} s\n")
        return cls.maps[name]

    def test_v3_counts(self):
        m, size = self.built(self, "tokenizer.json")
        self.assertEqual(m.dtype, np.int32)
        self.assertEqual(len(m), 128815)       # 128,000 vocab + 815 new added tokens (§16.6)
        self.assertEqual(size, 98627)
        self.assertEqual(int(m[2]), 2)         # pad = map[engram_pad_id = 2]
        self.assertEqual(int(m.max()) + 1, size)

    def test_v41_counts(self):
        m, size = self.built(self, "tokenizer-v41.json")
        self.assertEqual(len(m), 129280)
        self.assertEqual(size, 99092)          # the published engram_compressed_vocab_size
        self.assertEqual(int(m[2]), 2)

    def test_dense_first_appearance(self):
        m, size = self.built(self, "tokenizer.json")
        first = np.maximum.accumulate(m)
        # each new id is exactly one more than every id before it
        self.assertTrue(np.all(m <= np.concatenate([[0], first[:-1] + 1])))
        self.assertEqual(len(np.unique(m)), size)

    def test_added_token_ids_agree_with_the_json(self):
        for name in ("tokenizer.json", "tokenizer-v41.json"):
            path = data_file(self, name)
            tokens = engram.tokenizer_tokens(path)
            with open(path, encoding="utf-8") as f:
                added = json.load(f)["added_tokens"]
            for a in added:
                self.assertEqual(tokens[a["id"]], a["content"], f"{name}: added token {a['id']}")

    def run_library(self, name):
        """The Hugging Face `tokenizers` map, by tests/text/engram_map_reference.js."""
        path = data_file(self, name)
        node = shutil.which("node")
        if node is None:
            self.fail(f"`node` is needed for the tokenizers-library reference: {FETCH_HINT}")
        script = os.path.join(REPO, "tests", "text", "engram_map_reference.js")
        cmd = [node, script, "--tokenizer", path, "--node-modules", os.path.join(DATA, "node_modules")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            self.fail(f"{' '.join(cmd)} failed ({r.stderr.strip()}); it needs node and the npm package "
                      f"`tokenizers`: {FETCH_HINT}")
        return json.loads(r.stdout)

    def check_against_library(self, name):
        ref = self.run_library(name)
        m, size = self.built(self, name)
        tokens = engram.tokenizer_tokens(data_file(self, name))
        self.assertEqual(size, ref["compressed_vocab_size"])
        self.assertEqual(len(m), len(ref["compressed_id"]))
        ref_ids = np.array(ref["compressed_id"], dtype=np.int64)
        bad = np.nonzero(ref_ids != m)[0]
        msgs = [f"token {t} {tokens[t]!r}: key {engram.engram_token_key(tokens[t])!r}, library "
                f"{ref['key'][t]!r}" for t in bad[:10]]
        self.assertEqual(len(bad), 0, f"{len(bad)} ids differ from tokenizers {ref['tokenizers_version']}:\n"
                         + "\n".join(msgs))
        keys_bad = [t for t in range(len(tokens)) if engram.engram_token_key(tokens[t]) != ref["key"][t]]
        self.assertEqual(keys_bad[:10], [])

    def test_v3_equals_tokenizers_library(self):
        self.check_against_library("tokenizer.json")

    def test_v41_equals_tokenizers_library(self):
        self.check_against_library("tokenizer-v41.json")

    def test_unicode_9_vs_14_makes_no_difference(self):
        """The library's NFKC/NFD/StripAccents use Unicode 9.0 tables, Python 3.11's 14.0. Every
        character of the decoded vocabulary that those steps touch must either be known to Unicode
        3.2 with the same behaviour under 3.2 and 14.0 tables, or be one of the listed characters
        assigned before 9.0; then a 9.0 table treats it the same."""
        assigned_before_9 = {0x0358: "4.1", 0x103A: "5.1", 0x103D: "5.1", 0x103E: "5.1"}
        old, new = unicodedata.ucd_3_2_0, unicodedata
        self.assertGreaterEqual(int(new.unidata_version.split(".")[0]), 9)

        def touched(c, u):
            return u.normalize("NFKC", c) != c or u.normalize("NFD", c) != c or u.category(c).startswith("M")

        for name in ("tokenizer.json", "tokenizer-v41.json"):
            chars = set()
            for tok in engram.tokenizer_tokens(data_file(self, name)):
                text = engram.byte_level_decode(tok).decode("utf-8", errors="replace")
                if "\ufffd" not in text:
                    chars.update(text)
            unknown_to_3_2 = {ord(c) for c in chars if old.category(c) == "Cn" and touched(c, new)}
            self.assertTrue(unknown_to_3_2 <= set(assigned_before_9),
                            f"{name}: check the Unicode age of {sorted(map(hex, unknown_to_3_2 - set(assigned_before_9)))}")
            differ = [hex(ord(c)) for c in chars if old.category(c) != "Cn" and (
                old.normalize("NFKC", c) != new.normalize("NFKC", c)
                or old.normalize("NFD", c) != new.normalize("NFD", c)
                or old.category(c).startswith("M") != new.category(c).startswith("M"))]
            self.assertEqual(differ, [], name)

    def test_normalizer_cases(self):
        n = engram.engram_normalize
        self.assertEqual(n("The"), "the")
        self.assertEqual(n(" the"), "the")
        self.assertEqual(n("ＴＨＥ"), "the")                   # NFKC
        self.assertEqual(n("Café"), "cafe")                   # NFD + mark strip
        self.assertEqual(n("e\u20dd"), "e")                   # Me is a mark too
        self.assertEqual(n("ΟΣ"), "οσ")                       # per character: no final sigma
        self.assertEqual(n("İ"), "i")                         # NFD: I + U+0307, the mark goes, then "i"
        self.assertEqual(n(" "), " ")                         # a lone space survives Strip
        self.assertEqual(n(" \t\n"), " ")                     # a whitespace run is one space
        self.assertEqual(n("\n\n"), " ")
        self.assertEqual(n("a  \t b"), "a b")
        self.assertEqual(n("\u00a0x\u00a0"), "x")             # NFKC makes NBSP a space
        self.assertEqual(n("\u3000"), " ")                    # NFKC: ideographic space -> " "
        self.assertEqual(n("\u2028x"), "x")                   # White_Space stripped
        self.assertEqual(n("\x1cx\x1f"), "\x1cx\x1f")         # not White_Space (Python's strip would)
        self.assertEqual(n("\u200bx"), "\u200bx")             # ZWSP is not White_Space
        self.assertEqual(n("a\ue000b"), "a b")                # every U+E000 becomes a space
        self.assertEqual(n("\u0301"), "")                     # all marks: empty

    def test_keys(self):
        k = engram.engram_token_key
        self.assertEqual(k("ĠThe"), "the")                    # byte-level 'Ġ' = space
        self.assertEqual(k("Ġ"), " ")
        self.assertEqual(k("ĊĊ"), " ")
        self.assertEqual(k("\u0301"), "\u0301")              # normalizes to "": the raw text
        self.assertEqual(k("âĢ"), "âĢ")                      # bytes E2 80: partial UTF-8 -> raw token
        self.assertEqual(k("<｜User｜>"), "<|user|>")          # outside the byte alphabet: own UTF-8; NFKC
        self.assertEqual(k("ĠÃ©"), "e")                      # " é" -> "e"


# ------------------------------------------------------------------------------------------------
# §8.1 layout and multipliers
# ------------------------------------------------------------------------------------------------

SPEC_PRIMES = {
    1: [[16000057, 16000079, 16000081, 16000097, 16000121, 16000129, 16000133, 16000183],
        [16000189, 16000207, 16000211, 16000253, 16000277, 16000289, 16000307, 16000321],
        [16000339, 16000381, 16000393, 16000399, 16000403, 16000409, 16000447, 16000463]],
    14: [[16000477, 16000487, 16000499, 16000507, 16000511, 16000573, 16000609, 16000627],
         [16000667, 16000669, 16000693, 16000697, 16000711, 16000729, 16000759, 16000769],
         [16000781, 16000799, 16000813, 16000819, 16000841, 16000877, 16000879, 16000889]],
}
SPEC_OFFSETS = {
    1: [0, 16000057, 32000136, 48000217, 64000314, 80000435, 96000564, 112000697, 128000880,
        144001069, 160001276, 176001487, 192001740, 208002017, 224002306, 240002613, 256002934,
        272003273, 288003654, 304004047, 320004446, 336004849, 352005258, 368005705],
    14: [0, 16000477, 32000964, 48001463, 64001970, 80002481, 96003054, 112003663, 128004290,
         144004957, 160005626, 176006319, 192007016, 208007727, 224008456, 240009215, 256009984,
         272010765, 288011564, 304012377, 320013196, 336014037, 352014914, 368015793],
}
SPEC_MULTIPLIERS = {
    1: [76632096046245, 4839876093313, 35959672319349, 73987337458391],
    14: [67716810739261, 51510806800915, 30921347202721, 82619226485591],
}


class LayoutTest(unittest.TestCase):
    def test_released_primes_offsets_rows(self):
        cfg = released_config()
        lay = engram.engram_layout(cfg)
        primes, offsets = lay                              # unpacks as a pair
        self.assertEqual(primes.shape, (2, 3, 8))
        for l, lid in enumerate([1, 14]):
            self.assertEqual(primes[l].tolist(), SPEC_PRIMES[lid], f"layer {lid}")
            self.assertEqual(offsets[l].tolist(), SPEC_OFFSETS[lid], f"layer {lid}")
        self.assertEqual(lay.rows.tolist(), [384006168, 384016682])
        self.assertEqual(lay.rows.tolist(), list(cfg.engram_num_embeddings))

    def test_primes_are_prime_and_smallest(self):
        flat = [p for lid in (1, 14) for row in SPEC_PRIMES[lid] for p in row]
        for p in flat:
            self.assertTrue(all(p % d for d in range(2, int(p ** 0.5) + 1)), p)
        # between consecutive used primes of one (layer, n) run there is no unused prime
        used = set()
        for lid in (1, 14):
            for row in SPEC_PRIMES[lid]:
                cur = 15999999
                for p in row:
                    gap = [q for q in range(cur + 1, p) if engram._is_prime(q) and q not in used]
                    self.assertEqual(gap, [], p)
                    used.add(p)
                    cur = p

    def test_tiny_preset_rows(self):
        cfg = types.SimpleNamespace(engram_layer_ids=[1, 4], engram_vocab_size=1000, engram_max_ngram_size=4,
                                    engram_n_heads=2)
        lay = engram.engram_layout(cfg)
        self.assertEqual(lay.primes.tolist(), [[[1009, 1013], [1019, 1021], [1031, 1033]],
                                               [[1039, 1049], [1051, 1061], [1063, 1069]]])
        self.assertEqual(lay.rows.tolist(), [6126, 6332])    # the fixture's engram_num_embeddings

    def test_multipliers(self):
        cfg = released_config()
        self.assertEqual((2 ** 63 - 1) // 99092 // 2, 46539438283891)
        for lid in (1, 14):
            m = engram.hash_multipliers(cfg, lid)
            self.assertEqual(m.dtype, np.int64)
            self.assertEqual(m.tolist(), SPEC_MULTIPLIERS[lid])


# ------------------------------------------------------------------------------------------------
# §8.3 NgramHash
# ------------------------------------------------------------------------------------------------

def literal_hash(cfg, token_map, ids, mask):
    """§8.3 written position by position with Python ints, from position 0."""
    lay = engram.engram_layout(cfg)
    mults = [engram.hash_multipliers(cfg, lid).tolist() for lid in cfg.engram_layer_ids]
    pad = int(token_map[cfg.engram_pad_id])
    N, H = cfg.engram_max_ngram_size, cfg.engram_n_heads
    c = [int(token_map[i]) if ok else -1 for i, ok in zip(ids, mask)]
    out = []
    for p in range(len(ids)):
        toks, blocked = [], False
        for s in range(N):
            src = c[max(p - s, 0)]
            blocked = blocked or p < s or src == -1
            toks.append(pad if blocked else src)
        per_layer = []
        for l in range(len(cfg.engram_layer_ids)):
            prod = [t * m for t, m in zip(toks, mults[l])]
            assert all(x < 2 ** 63 for x in prod)
            roll, cols = prod[0], []
            for n in range(2, N + 1):
                roll ^= prod[n - 1]
                for h in range(H):
                    cols.append(roll % int(lay.primes[l, n - 2, h]) + int(lay.offsets[l, (n - 2) * H + h]))
            per_layer.append(cols)
        out.append(per_layer)
    return np.array(out, dtype=np.int64)


class NgramHashTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cfg = released_config()
        path = os.path.join(DATA, "tokenizer-v41.json")
        cls.tm = TokenMapTest.maps.get("tokenizer-v41.json")       # (map, size)
        if cls.tm is None and os.path.isfile(path):
            cls.tm = TokenMapTest.maps["tokenizer-v41.json"] = engram.engram_token_map(path)
        cls.map = None if cls.tm is None else cls.tm[0]
        rng = np.random.default_rng(5)
        cls.S = 100
        cls.ids = rng.integers(0, 129280, size=cls.S)
        cls.ids[10:13] = cls.ids[40]         # repeats
        cls.mask = np.ones(cls.S, dtype=bool)
        cls.mask[20:26] = False              # an image span
        cls.mask[60] = False
        cls.mask[0] = False                  # an image at position 0

    def setUp(self):
        if self.map is None:
            self.fail(f"tokenizer-v41.json is missing: {FETCH_HINT}")

    def hasher(self):
        return engram.NgramHash(self.cfg, self.tm)

    def test_shape_and_literal(self):
        hs = self.hasher()
        t0 = time.perf_counter()
        got = hs(self.ids, 0, self.mask)
        dt = time.perf_counter() - t0
        sys.stderr.write(f"\n  NgramHash of {self.S} tokens (released layout): {dt * 1e3:.2f} ms\n")
        self.assertEqual(got.dtype, np.int64)
        self.assertEqual(got.shape, (self.S, 2, 24))
        np.testing.assert_array_equal(got, literal_hash(self.cfg, self.map, self.ids, self.mask))

    def test_rows_in_range(self):
        got = self.hasher()(self.ids, 0, self.mask)
        lay = engram.engram_layout(self.cfg)
        for l in range(2):
            lo = lay.offsets[l]
            hi = lo + lay.primes[l].reshape(-1)
            self.assertTrue(np.all((got[:, l] >= lo) & (got[:, l] < hi)))

    def test_blocking(self):
        pad = int(self.map[2])
        got = self.hasher()(self.ids, 0, self.mask)
        # an image token, and the first token after an image (n-grams through the image see pad)
        all_pad = self.hasher()(np.full(4, 2), 0, None)[3]      # pad everywhere (ids all = 2)
        np.testing.assert_array_equal(got[20], all_pad)
        np.testing.assert_array_equal(got[0], all_pad)
        # position 26 (right after the span): only its own token is live
        own = self.hasher()(np.array([2, 2, 2, self.ids[26]]), 0, None)[3]
        self.assertEqual(pad, 2)
        np.testing.assert_array_equal(got[26], own)
        # position 1 sees the image at 0 as a wall, like position 0 of a fresh sequence
        first = self.hasher()(np.array([self.ids[1]]), 0, None)[0]
        np.testing.assert_array_equal(got[1], first)

    def test_chunks_agree(self):
        whole = self.hasher()(self.ids, 0, self.mask)
        hs = self.hasher()
        one = np.concatenate([hs(self.ids[p:p + 1], p, self.mask[p:p + 1]) for p in range(self.S)])
        np.testing.assert_array_equal(one, whole)
        hs = self.hasher()
        three = np.concatenate([hs(self.ids[p:p + 3], p, self.mask[p:p + 3]) for p in range(0, self.S, 3)])
        np.testing.assert_array_equal(three, whole)
        # rewinding: recompute from position 50 after the whole sequence
        np.testing.assert_array_equal(hs(self.ids[50:], 50, self.mask[50:]), whole[50:])

    def test_ids_outside_the_tokenizer(self):
        v3 = TokenMapTest.built(self, "tokenizer.json")
        cfg = types.SimpleNamespace(**dict(RELEASED_ENGRAM, engram_compressed_vocab_size=98627))
        hs = engram.NgramHash(cfg, v3)
        with self.assertRaisesRegex(ValueError, r"128815 has no Engram compressed id.*§16\.6"):
            hs(np.array([5, 128815]), 0)
        with self.assertRaisesRegex(ValueError, "no Engram compressed id"):
            hs(np.array([-1]), 0)
        # an image token needs no compressed id (129264 is beyond the V3 tokenizer)
        out = hs(np.array([5, 129264, 7]), 0, np.array([True, False, True]))
        self.assertEqual(out.shape, (3, 2, 24))

    def test_bad_calls(self):
        hs = self.hasher()
        with self.assertRaises(ValueError):
            hs(self.ids[:3], 1)            # start_pos beyond what is written
        with self.assertRaises(ValueError):
            engram.NgramHash(types.SimpleNamespace(**dict(RELEASED_ENGRAM, engram_compressed_vocab_size=98627)),
                             self.tm)          # the map has 99,092 ids, the config says 98,627


# ------------------------------------------------------------------------------------------------
# §8.4 engram_forward on the tiny fixture
# ------------------------------------------------------------------------------------------------

class EngramForwardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = None
        cls.error = None
        tok = os.path.join(DATA, "tokenizer.json")
        if not os.path.isfile(tok):
            cls.error = f"tokenizer.json is missing: {FETCH_HINT}"
            return
        if not os.access(BINARY, os.X_OK):
            cls.error = f"the dsv4 binary {BINARY} is missing: build it, or set DSV4_BINARY"
            return
        cls.tmp = tempfile.mkdtemp(prefix="engram_fixture_")
        cls.dir = os.path.join(cls.tmp, "tiny")
        r = subprocess.run([BINARY, "make-fixture", "--preset", "tiny", "--seed", "1", "--out", cls.dir,
                            "--tokenizer", tok, "--quiet"], capture_output=True, text=True)
        if r.returncode != 0:
            cls.error = f"make-fixture failed: {r.stderr.strip()}"
            return
        cls.cfg = fixture_config(cls.dir)
        cls.tensors = safetensors.load_model(cls.dir)
        cls.map = engram.engram_token_map(os.path.join(cls.dir, "tokenizer.json"))
        rng = np.random.default_rng(11)
        cls.S = 100
        cls.ids = rng.integers(0, 128815, size=cls.S)
        cls.mask = np.ones(cls.S, dtype=bool)
        cls.mask[30:37] = False
        cls.mask[80] = False
        hc, dim = int(cls.cfg.hc_mult), int(cls.cfg.dim)
        cls.X = formats.round_bf16(rng.standard_normal((cls.S, hc, dim)).astype(np.float32)
                                   * np.float32(0.7))
        cls.X[5, 2, :] = 0                     # a zero copy: rstd = rsqrt(eps), dot = 0, gate 1/2

    @classmethod
    def tearDownClass(cls):
        if cls.tmp:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        if self.error:
            self.fail(self.error)

    def layer(self, l):
        lid = int(self.cfg.engram_layer_ids[l])
        return engram.engram_weights(self.tensors, lid)

    def test_layout_matches_fixture(self):
        lay = engram.engram_layout(self.cfg)
        self.assertEqual(lay.rows.tolist(), list(self.cfg.engram_num_embeddings))
        for l, lid in enumerate(self.cfg.engram_layer_ids):
            self.assertEqual(self.tensors[f"layers.{lid}.engram.embed.weight"].shape[0], int(lay.rows[l]))
        self.assertEqual(self.map[1], int(self.cfg.engram_compressed_vocab_size))

    def run_forward(self):
        hashes = engram.NgramHash(self.cfg, self.map)(self.ids, 0, self.mask)
        outs = []
        for l in range(len(self.cfg.engram_layer_ids)):
            t0 = time.perf_counter()
            out, mid = engram.engram_forward(self.X, hashes[:, l], self.mask, self.layer(l), self.cfg,
                                             return_intermediates=True)
            outs.append((out, mid, time.perf_counter() - t0))
        return hashes, outs

    def test_forward_invariants(self):
        hashes, outs = self.run_forward()
        for l, (out, mid, dt) in enumerate(outs):
            sys.stderr.write(f"\n  engram_forward layer {self.cfg.engram_layer_ids[l]}, {self.S} tokens: "
                             f"{dt * 1e3:.1f} ms\n")
            self.assertEqual(out.dtype, np.float32)
            self.assertEqual(out.shape, self.X.shape)
            np.testing.assert_array_equal(formats.round_bf16(out), out)        # bf16 values
            gate = mid["gate"]
            self.assertEqual(gate.shape, (self.S, int(self.cfg.hc_mult)))
            # image tokens: gate 0, output = bf16(h) = X unchanged (bitwise)
            self.assertTrue(np.all(gate[~self.mask] == 0))
            np.testing.assert_array_equal(out[~self.mask].view(np.uint32), self.X[~self.mask].view(np.uint32))
            # text tokens: a real gate, and the output moves
            self.assertTrue(np.all((gate[self.mask] > 0) & (gate[self.mask] < 1)))
            self.assertFalse(np.array_equal(out[self.mask], self.X[self.mask]))
            # the zero copy: dot = 0 -> sign 0 -> sigmoid(0) = 1/2
            self.assertEqual(float(gate[5, 2]), 0.5)
            # the key and value come from the same wkv row block layout: value shared by copies
            self.assertEqual(mid["key"].shape, self.X.shape)
            self.assertEqual(mid["value"].shape, (self.S, int(self.cfg.dim)))

    def test_forward_matches_float64_formula(self):
        """An independent float64 evaluation of §8.4 (not strict): the gates agree to ~1e-6 and
        the outputs to one bf16 ulp."""
        hashes, outs = self.run_forward()
        hc, dim = self.X.shape[1:]
        for l, (out, mid, _) in enumerate(outs):
            w = self.layer(l)
            h = self.X.astype(np.float64)
            key = mid["key"].astype(np.float64)
            value = mid["value"].astype(np.float64)
            q = formats.from_bf16_bits(np.asarray(w["q_weight"])).astype(np.float64)
            k = formats.from_bf16_bits(np.asarray(w["k_weight"])).astype(np.float64)
            rstd = 1 / np.sqrt((h * h).mean(-1) + 1e-20) / np.sqrt((key * key).mean(-1) + 1e-20)
            dot = (h * q * k * key).sum(-1) * rstd * dim ** -0.5
            gate = 1 / (1 + np.exp(-np.sign(dot) * np.sqrt(np.maximum(np.abs(dot), 1e-6))))
            gate[~self.mask] = 0
            np.testing.assert_allclose(mid["gate"], gate, rtol=1e-5, atol=1e-6)
            ref = h + gate[:, :, None] * value[:, None, :]
            ulp = np.abs(ref) * 2.0 ** -7 + 1e-30
            self.assertTrue(np.all(np.abs(out - ref) <= ulp))
            # E rows: bf16(e4m3 · scale) of the hashed rows
            codes = np.asarray(w["embed.weight"])[hashes[:, l].reshape(-1)]
            sc = formats.e8m0_decode(np.asarray(w["embed.scale"])[hashes[:, l].reshape(-1)])
            e = formats.e4m3_decode(codes).astype(np.float64) * np.repeat(sc, 32, axis=1)
            np.testing.assert_array_equal(mid["E"], formats.round_bf16(e.astype(np.float32)).reshape(self.S, -1))

    def test_chunked_equals_whole(self):
        _, outs = self.run_forward()
        hs = engram.NgramHash(self.cfg, self.map)
        pieces = [[] for _ in self.cfg.engram_layer_ids]
        for p0 in range(0, self.S, 7):
            sl = slice(p0, min(p0 + 7, self.S))
            hsh = hs(self.ids[sl], p0, self.mask[sl])
            for l in range(len(self.cfg.engram_layer_ids)):
                pieces[l].append(engram.engram_forward(self.X[sl], hsh[:, l], self.mask[sl], self.layer(l), self.cfg))
        for l, (out, _, _) in enumerate(outs):
            np.testing.assert_array_equal(np.concatenate(pieces[l]).view(np.uint32), out.view(np.uint32))

    def test_bad_inputs(self):
        hashes = engram.NgramHash(self.cfg, self.map)(self.ids[:4], 0)
        with self.assertRaises(ValueError):
            engram.engram_forward(self.X[:4], hashes[:, 0, :5], None, self.layer(0), self.cfg)
        bad = hashes[:, 0].copy()
        bad[0, 0] = int(self.cfg.engram_num_embeddings[0])
        with self.assertRaises(ValueError):
            engram.engram_forward(self.X[:4], bad, None, self.layer(0), self.cfg)
        with self.assertRaises(KeyError):
            engram.engram_weights(self.tensors, 0)


if __name__ == "__main__":
    unittest.main()
