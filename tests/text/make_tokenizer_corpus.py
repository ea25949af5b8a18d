#!/usr/bin/env python3
"""Assembles the tokenizer comparison corpus (tests/text/tokenizer_corpus_test.cc, bench/).

The corpus is real text found on a Debian 12 machine with the packages of scripts/install-deps.sh
plus generated edge cases, written as JSON lines {"name": ..., "text": ...}, one document each.
Everything is read in sorted order and the generated part comes from a fixed-seed PRNG, so the
same machine always yields the same corpus. Sources, each capped so that none dominates:

  mo        translated messages of the gettext catalogs in /usr/share/locale (coreutils, bash,
            libpam, apt, dpkg, binutils, ...: ~90 languages in Latin, Cyrillic, Greek, Arabic,
            Hebrew, Devanagari, Bengali, Tamil, Thai, Khmer, Georgian, CJK, Hangul scripts...),
            interleaved by language
  python    the Python standard library sources (/usr/lib/python3.*)
  headers   C and C++ headers (/usr/include)
  cmake     CMake's reStructuredText documentation (/usr/share/cmake-*/Help)
  licenses  /usr/share/common-licenses
  copyright /usr/share/doc/*/copyright
  certs     the Mozilla CA bundle (/usr/share/ca-certificates; base64 and CA names)
  js        JavaScript sources (/usr/share/nodejs, the tokenizers binding)
  gen:*     generated: many scripts, combining marks, emoji and ZWJ sequences, odd whitespace,
            digit runs, every special-token string in many contexts, long runs, every BMP code
            point, samples of the other planes (incl. Unicode 15.1/16.0/17.0 additions)

If the real sources come to less than --min-bytes, more Python sources are added until it is met.

Usage: make_tokenizer_corpus.py --out CORPUS.jsonl [--tokenizer tokenizer.json ...] [--min-bytes N]
Writes CORPUS.jsonl (atomically) and CORPUS.jsonl.summary.json, and prints the summary.
"""
import argparse
import glob
import json
import os
import random
import struct
import sys

DOC_BYTES = 16 * 1024  # real files are cut into documents of at most about this size


class Corpus:
    def __init__(self):
        self.docs = []  # (name, text)
        self.sources = {}

    def add(self, source, name, text):
        if not text:
            return 0
        self.docs.append((f"{source}:{name}", text))
        s = self.sources.setdefault(source, {"docs": 0, "bytes": 0})
        n = len(text.encode("utf-8"))
        s["docs"] += 1
        s["bytes"] += n
        return n

    def add_chunked(self, source, name, text, budget):
        """Adds text cut at line ends into documents of about DOC_BYTES; returns bytes added."""
        used = 0
        lines = text.splitlines(keepends=True)
        cur, cur_bytes, part = [], 0, 0
        for line in lines:
            b = len(line.encode("utf-8"))
            if cur and cur_bytes + b > DOC_BYTES:
                used += self.add(source, f"{name}#{part}", "".join(cur))
                part += 1
                cur, cur_bytes = [], 0
                if used >= budget:
                    return used
            cur.append(line)
            cur_bytes += b
        if cur and used < budget:
            used += self.add(source, f"{name}#{part}", "".join(cur))
        return used

    def total(self):
        return sum(s["bytes"] for s in self.sources.values())


def read_text(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def sorted_files(patterns, exts=None):
    out = []
    for pat in patterns:
        for root in sorted(glob.glob(pat)):
            if os.path.isfile(root):
                out.append(root)
                continue
            for d, dirs, files in os.walk(root):
                dirs.sort()
                for f in sorted(files):
                    p = os.path.join(d, f)
                    if exts is None or any(f.endswith(e) for e in exts):
                        if os.path.isfile(p) and not os.path.islink(p):
                            out.append(p)
    return out


def add_files(corpus, source, files, budget, min_size=64):
    used = 0
    for p in files:
        if used >= budget:
            break
        t = read_text(p)
        if t is None or len(t) < min_size:
            continue
        used += corpus.add_chunked(source, p, t, budget - used)
    return used


# ----------------------------------------------------------------------------------------------
# gettext catalogs

def read_mo(path):
    """The translated strings of a .mo file, decoded with its declared charset."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return []
    if len(data) < 28:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic == 0x950412DE else ">" if magic == 0xDE120495 else None
    if e is None:
        return []
    n, otab, ttab = struct.unpack(e + "3I", data[8:20])
    raw = []
    charset = "utf-8"
    for i in range(n):
        try:
            olen, _ = struct.unpack(e + "2I", data[otab + 8 * i: otab + 8 * i + 8])
            tlen, toff = struct.unpack(e + "2I", data[ttab + 8 * i: ttab + 8 * i + 8])
        except struct.error:
            return []
        s = data[toff: toff + tlen]
        if olen == 0:  # the header entry
            for line in s.decode("ascii", errors="replace").splitlines():
                if "charset=" in line:
                    charset = line.split("charset=")[1].strip() or "utf-8"
            continue
        raw.append(s)
    try:
        "".encode(charset)
    except LookupError:
        charset = "utf-8"
    return [s.decode(charset, errors="replace").replace("\0", "\n") for s in raw]


def add_mo(corpus, budget):
    files = sorted_files(["/usr/share/locale"], exts=[".mo"])
    by_lang = {}
    for p in files:
        parts = p.split("/")
        lang = parts[4] if len(parts) > 4 else "?"
        by_lang.setdefault(lang, []).append(p)
    langs = sorted(by_lang)
    used, rnd = 0, 0
    per_doc = 8 * 1024
    while used < budget:
        progressed = False
        for lang in langs:
            if rnd < len(by_lang[lang]):
                progressed = True
                p = by_lang[lang][rnd]
                text, size = [], 0
                for s in read_mo(p):
                    text.append(s)
                    size += len(s.encode("utf-8")) + 1
                    if size >= per_doc:
                        break
                used += corpus.add("mo", p, "\n".join(text))
                if used >= budget:
                    break
        if not progressed:
            break
        rnd += 1
    return used


# ----------------------------------------------------------------------------------------------
# Generated edge cases

def cp_range(a, b):
    return [chr(c) for c in range(a, b + 1)]


SCRIPTS = {
    "latin": cp_range(0x61, 0x7A) + cp_range(0xE0, 0xFF) + cp_range(0x100, 0x17F),
    "greek": cp_range(0x3B1, 0x3C9) + cp_range(0x391, 0x3A9) + cp_range(0x1F00, 0x1F15),
    "cyrillic": cp_range(0x430, 0x44F) + cp_range(0x410, 0x42F) + ["ё", "ї", "є", "ґ"],
    "armenian": cp_range(0x561, 0x586),
    "hebrew": cp_range(0x5D0, 0x5EA),
    "arabic": cp_range(0x627, 0x64A) + ["پ", "چ", "ژ", "گ", "ی", "ک"],
    "devanagari": cp_range(0x915, 0x939),
    "bengali": cp_range(0x995, 0x9B9),
    "tamil": cp_range(0xB95, 0xBB9),
    "thai": cp_range(0xE01, 0xE2E),
    "lao": cp_range(0xE81, 0xEAE),
    "tibetan": cp_range(0xF40, 0xF6C),
    "myanmar": cp_range(0x1000, 0x102A),
    "georgian": cp_range(0x10D0, 0x10FA),
    "ethiopic": cp_range(0x1200, 0x1248),
    "khmer": cp_range(0x1780, 0x17A2),
    "mongolian": cp_range(0x1820, 0x1877),
    "hangul": None,  # syllables, generated below
    "hiragana": cp_range(0x3041, 0x3096),
    "katakana": cp_range(0x30A1, 0x30FA) + ["ー"],
    "cjk": None,  # ideographs, generated below
    "bopomofo": cp_range(0x3105, 0x312F),
    "yi": cp_range(0xA000, 0xA48C),
    "cherokee": cp_range(0x13A0, 0x13F4),
    "fullwidth": cp_range(0xFF21, 0xFF3A) + cp_range(0xFF41, 0xFF5A),
    "halfwidth_kana": cp_range(0xFF66, 0xFF9D),
    "math_alnum": cp_range(0x1D400, 0x1D433),
    "garay_16": cp_range(0x10D4A, 0x10D65),       # Unicode 16.0
    "todhri_16": cp_range(0x105C0, 0x105F3),      # Unicode 16.0
    "kawi_15": cp_range(0x11F04, 0x11F10),        # Unicode 15.0
    "cjk_ext_i_151": cp_range(0x2EBF0, 0x2EC20),  # Unicode 15.1
    "unassigned_17": cp_range(0x11DB0, 0x11DDB),  # Unicode 17.0: unknown to both tables
}
MARKS = {
    "devanagari": cp_range(0x93E, 0x94D) + ["\u0901", "\u0902", "\u0903", "\u093C"],
    "bengali": cp_range(0x9BE, 0x9CD),
    "tamil": cp_range(0xBBE, 0xBCD),
    "thai": cp_range(0xE31, 0xE31) + cp_range(0xE34, 0xE3A) + cp_range(0xE47, 0xE4E),
    "lao": cp_range(0xEB1, 0xEBC) + cp_range(0xEC8, 0xECD),
    "tibetan": cp_range(0xF71, 0xF84),
    "myanmar": cp_range(0x102B, 0x103E),
    "khmer": cp_range(0x17B6, 0x17D3),
    "arabic": cp_range(0x64B, 0x652) + ["\u0670"],
    "hebrew": cp_range(0x5B0, 0x5BD) + ["\u05C1", "\u05C2"],
    "latin": cp_range(0x300, 0x36F),
}
PUNCT = {
    "devanagari": ["।", "॥"], "arabic": ["،", "؛", "؟", "ـ"], "cjk": ["。", "、", "「", "」", "『", "』", "・", "〜"],
    "thai": ["ฯ", "๏"], "armenian": ["։", "՞"], "ethiopic": ["።", "፣"], "hebrew": ["׃", "״"],
    "latin": ["«", "»", "„", "“", "”", "‘", "’", "¿", "¡", "—", "–", "…"],
}
DIGITS = [cp_range(0x30, 0x39), cp_range(0x660, 0x669), cp_range(0x6F0, 0x6F9), cp_range(0x966, 0x96F),
          cp_range(0x9E6, 0x9EF), cp_range(0xE50, 0xE59), cp_range(0xFF10, 0xFF19), cp_range(0x1D7CE, 0x1D7D7),
          cp_range(0x10D40, 0x10D49)]
OTHER_NUMBERS = ["²", "³", "¹", "½", "¼", "¾", "⅓", "Ⅻ", "ⅻ", "①", "⑳", "〇", "〡", "〸", "𝟘", "∞", "⁰", "₉"]
SPACES = [" ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2000", "\u2002", "\u2003",
          "\u2007", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
NOT_SPACES = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e", "\x1c", "\x1d", "\x1e", "\x1f", "\x00",
              "\x07", "\x1b", "\x7f", "\u00ad", "\u061c", "\u200e", "\u200f", "\u202e"]
EMOJI = ["😀", "😂", "🥲", "👍", "👍🏽", "❤️", "❤", "✨", "🔥", "🎉", "🇯🇵", "🇺🇸", "🇪🇺", "🏳️‍🌈", "🏴‍☠️",
         "👨‍👩‍👧‍👦", "👩🏾‍💻", "🧑‍🤝‍🧑", "🫱🏻‍🫲🏿", "1️⃣", "#️⃣", "*️⃣", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
         "☺︎", "☺️", "↔️", "©️", "™", "🪿", "🫎", "🩷", "🫨", "\U0001FA89", "\U0001FADF", "🐈‍⬛", "👁️‍🗨️"]
ASCII_PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def hangul(self):
        return chr(0xAC00 + self.r.randrange(11172))

    def cjk(self):
        # mostly inside the CJK split's range (U+4E00..U+9FA5), sometimes just outside it
        if self.r.random() < 0.9:
            return chr(0x4E00 + self.r.randrange(0x9FA5 - 0x4E00 + 1))
        return self.pick([chr(c) for c in range(0x9FA6, 0x9FFF)] + ["㐀", "㑇", "𠀀", "𪜀", "\U00030000", "豈"])

    def letter(self, script):
        if script == "hangul":
            return self.hangul()
        if script == "cjk":
            return self.cjk()
        return self.pick(SCRIPTS[script])

    def word(self, script, lo=1, hi=9):
        out = []
        for _ in range(self.r.randint(lo, hi)):
            out.append(self.letter(script))
            if script in MARKS and self.r.random() < 0.4:
                out.append(self.pick(MARKS[script]))
        return "".join(out)

    def sentence(self, script):
        words = [self.word(script) for _ in range(self.r.randint(3, 14))]
        sep = "" if script in ("thai", "cjk", "hiragana", "katakana", "lao", "khmer", "myanmar") and self.r.random() < 0.7 else " "
        s = sep.join(words)
        p = PUNCT.get(script, PUNCT["latin"] if script in ("latin", "greek", "cyrillic") else [".", ",", "!", "?"])
        return s + self.pick(p + [".", "!", "?", ",", ":", ";"])


def generated(corpus, added_tokens):
    g = Gen(20240531)
    r = g.r
    scripts = sorted(SCRIPTS)

    # Prose-like text per script, with digits and punctuation mixed in.
    for script in scripts:
        for d in range(2):
            parts = []
            for _ in range(40):
                parts.append(g.sentence(script))
                if r.random() < 0.2:
                    parts.append(" " + "".join(g.pick(g.pick(DIGITS)) for _ in range(r.randint(1, 12))))
                parts.append(g.pick([" ", " ", "\n", "\n\n", "  ", "\t"]))
            corpus.add("gen:scripts", f"{script}#{d}", "".join(parts))

    # Mixed scripts in one line, switching mid-word.
    for d in range(40):
        out = []
        for _ in range(200):
            out.append(g.word(g.pick(scripts), 1, 4))
            if r.random() < 0.3:
                out.append(g.pick([" ", "", "-", "_", "'", "·", "\u200d", "\u200c", "\u00ad"]))
        corpus.add("gen:mixed", str(d), "".join(out))

    # Combining marks in every position, including stacks and marks after non-letters.
    bases = ["a", "e", " ", "1", ".", "😀", "\n", "中", "ア", "\t", "-", "x"]
    all_marks = cp_range(0x300, 0x36F) + cp_range(0x1AB0, 0x1ABE) + cp_range(0x20D0, 0x20F0) + cp_range(0xFE20, 0xFE2F)
    for d in range(30):
        out = []
        for _ in range(300):
            out.append(g.pick(bases))
            out.append("".join(g.pick(all_marks) for _ in range(r.randint(0, 8))))
        corpus.add("gen:marks", str(d), "".join(out))
    corpus.add("gen:marks", "leading", "\u0301\u0302abc \u0303 \u0304\u0305 1\u0306 .\u0307")

    # Emoji: alone, sequences, with text, ZWJ chains, modifiers, flags, keycaps, tags.
    for d in range(30):
        out = []
        for _ in range(250):
            out.append(g.pick(EMOJI))
            out.append(g.pick(["", "", " ", "\u200d", "a", "1", "!", "\n", "\ufe0f", "\ufe0e", "\U0001F3FB"]))
        corpus.add("gen:emoji", str(d), "".join(out))

    # Whitespace: every White_Space character, the non-space look-alikes, CR/LF mixtures, runs
    # before letters, punctuation, digits and the end of the document.
    for d in range(36):
        out = []
        for _ in range(300):
            out.append("".join(g.pick(SPACES + NOT_SPACES[:6]) for _ in range(r.randint(1, 6))))
            out.append(g.pick(["a", "word", "Ab", ".", "!?", "1", "12345", "中文", "\n", "", "😀", "'s", "(x)", "\u0301"]))
        if d % 3 == 0:
            out.append("   ")
        elif d % 3 == 1:
            out.append(" \n \n")
        corpus.add("gen:space", str(d), "".join(out))
    for ws in SPACES + NOT_SPACES:
        corpus.add("gen:space", f"U+{ord(ws[0]):04X}", f"a{ws}b {ws} {ws}{ws}c{ws}\n{ws}.{ws}1{ws}")

    # Digits: runs of 1..40 in several numeral systems, next to letters, CJK, punctuation.
    for d in range(12):
        out = []
        for _ in range(200):
            digits = g.pick(DIGITS)
            run = "".join(g.pick(digits) for _ in range(r.randint(1, 40)))
            out.append(g.pick(["", " ", "x", "年", "-", ".", ",", "$", "(", "\n", "v", "0x", "ab"]) + run)
            if r.random() < 0.2:
                out.append(g.pick(OTHER_NUMBERS))
        corpus.add("gen:digits", str(d), "".join(out))
    corpus.add("gen:digits", "runs", " ".join("".join(str((i + j) % 10) for j in range(n)) for i in range(3) for n in range(1, 41)))
    corpus.add("gen:digits", "formats", "1,234,567.89 3.14159265358979323846 1e-10 2024-12-31T23:59:59Z "
               "192.168.0.1 +1 (555) 123-4567 0x1F2E3D4C v1.2.3-rc4 2024年12月31日 ¥1000 €12,50 ½ ² Ⅻ ①②③ 〇一二")

    # Special-token strings: alone, adjacent, inside words, around spaces, truncated, nested.
    contents = list(dict.fromkeys(added_tokens))
    if not contents:
        contents = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<|EOT|>"]
    named = [c for c in contents if "place▁holder" not in c]
    for d in range(0, len(contents), 40):
        corpus.add("gen:special", f"all#{d}", "".join(contents[d: d + 40]))
    for d in range(60):
        out = []
        for _ in range(120):
            tok = g.pick(named) if r.random() < 0.8 else g.pick(contents)
            kind = r.randrange(9)
            if kind == 0:
                out.append(tok)
            elif kind == 1:
                out.append("word" + tok + "word")
            elif kind == 2:
                out.append(" " + tok + " ")
            elif kind == 3:
                out.append("  " + tok + "\n\n")
            elif kind == 4:
                out.append(tok[: r.randint(1, len(tok) - 1)])  # truncated
            elif kind == 5:
                out.append(tok[r.randint(1, len(tok) - 1):])
            elif kind == 6:
                out.append(tok + tok)
            elif kind == 7:
                out.append(tok[:2] + tok + tok[2:])  # nested
            else:
                out.append(tok.replace("｜", "|").replace("▁", "_"))  # ASCII look-alike
            out.append(g.pick(["", " ", "\n", "hello", "中文", "1234", "<", ">", "｜", "▁"]))
        corpus.add("gen:special", f"mix#{d}", "".join(out))
    corpus.add("gen:special", "chat", "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hi there!\n"
               "<｜Assistant｜></think>Hello! How can I help?<｜end▁of▁sentence｜><｜User｜>"
               "Call a tool<｜Assistant｜><think>Let me think.</think>\n\n<｜DSML｜ calls>\n"
               "<｜DSML｜ invoke name=\"get_weather\">\n<｜DSML｜ parameter name=\"city\" string=\"true\">Paris"
               "</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls><｜end▁of▁sentence｜>")

    # ASCII punctuation followed by letters and contractions (the first alternative).
    out = []
    for p in ASCII_PUNCT:
        for w in ["a", "Word", "s", "ll", "t", "re", "ABC", "x1", "é", "中"]:
            out.append(p + w)
            out.append(" " + p + w)
            out.append(p + p + w)
    corpus.add("gen:punct", "pairs", " ".join(out) + " don't I'm we'll they're it's O'Neil rock'n'roll")
    for d in range(20):
        corpus.add("gen:punct", str(d), "".join(g.pick(ASCII_PUNCT + ["a", "b", "Z", " ", "\n", "é", "€", "©", "⁉", "。"])
                                                 for _ in range(2000)))

    # Long runs (the long-word BPE path and the whitespace scanner).
    longs = {
        "spaces": " " * 5000 + "x", "spaces_end": "x" + " " * 3000, "newlines": "\n" * 3000,
        "crlf": "\r\n" * 1500 + "a", "tabs": "\t" * 2000 + "a", "letters": "a" * 10000,
        "abab": "ab" * 5000, "word_repeat": "lorem" * 2000, "punct": "!" * 2000 + "?" * 2000,
        "digits": "1234567890" * 100, "cjk": "".join(g.cjk() for _ in range(3000)),
        "thai": "".join(g.word("thai", 1, 3) for _ in range(1500)),
        "emoji": "😀" * 1000 + "👨‍👩‍👧‍👦" * 200, "marks": "a" + "\u0301" * 3000,
        "base64": "".join(g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(8000)) + "==",
        "hangul": "".join(g.hangul() for _ in range(3000)), "nbsp": "\xa0" * 1000 + "a",
        "ideographic_space": "\u3000" * 1000, "dashes": "-" * 3000 + "=" * 3000,
    }
    for k, v in longs.items():
        corpus.add("gen:long", k, v)

    # Code-like text.
    snippets = ["if (x != y) { return a->b; }", "for i in range(10):\n\tprint(i)\n", "#include <vector>\n",
                "const f = (a, b) => a ?? b;", "SELECT * FROM t WHERE id = 42;", "x := y << 3 | z & 0xFF",
                "/** doc */", "fn main() -> Result<(), Box<dyn Error>> {", "    ", "\t\t", "$ ls -la ~/src\n",
                "<div class=\"a\">&nbsp;</div>", "{\"key\": [1, 2.5e-3, null, true]}", "https://example.com/a?b=c&d=e#f",
                "user@example.org", "C:\\Windows\\System32", "a_b_c = __init__", "arr[i][j] += 1;", "::std::move(x)",
                "```python\n", "| a | b |\n|---|---|\n", "$$\\frac{a}{b}$$", "x !== undefined", "i++; --j;"]
    for d in range(20):
        out = []
        indent = ""
        for _ in range(200):
            if r.random() < 0.3:
                indent = g.pick(["", "    ", "        ", "\t", "  ", "\t    "])
            out.append(indent + g.pick(snippets) + g.pick(["\n", "\n\n", " ", "\r\n", "  \n"]))
        corpus.add("gen:code", str(d), "".join(out))

    # Random code points of every plane (assigned or not), and short random documents.
    def any_cp():
        while True:
            c = r.choice([r.randrange(0x80), r.randrange(0x800), r.randrange(0x10000), r.randrange(0x110000)])
            if not (0xD800 <= c <= 0xDFFF):
                return chr(c)
    for d in range(40):
        corpus.add("gen:random_cp", str(d), "".join(any_cp() for _ in range(1500)))
    frags = [lambda: g.word(g.pick(scripts)), lambda: g.pick(SPACES), lambda: g.pick(EMOJI), lambda: g.pick(ASCII_PUNCT),
             lambda: g.pick(contents), lambda: "".join(g.pick(DIGITS[0]) for _ in range(r.randint(1, 7))), any_cp,
             lambda: g.pick(NOT_SPACES), lambda: g.pick(all_marks)]
    for d in range(1500):
        corpus.add("gen:short", str(d), "".join(g.pick(frags)() for _ in range(r.randint(1, 25))))

    # Every BMP code point (no surrogates) and a sample of the other planes, in order.
    bmp = [chr(c) for c in range(0x10000) if not (0xD800 <= c <= 0xDFFF)]
    for i in range(0, len(bmp), 2048):
        corpus.add("gen:bmp", f"U+{ord(bmp[i]):04X}", "".join(bmp[i: i + 2048]))
    for i, start in enumerate(range(0x10000, 0x110000, 0x10000)):
        step = 7 if start < 0x40000 else 97
        corpus.add("gen:planes", f"plane{i + 1}", "".join(chr(c) for c in range(start, start + 0x10000, step)))
    # Exactly the code points Unicode 15.1 and 16.0 assigned, around letters.
    new16 = list(range(0x10D40, 0x10D90)) + list(range(0x11380, 0x113E3)) + list(range(0x2EBF0, 0x2EC40)) + \
        list(range(0x1CC00, 0x1CC40)) + [0x897, 0x1B4E, 0x1B7F, 0x1C89, 0x2427, 0x2FFC, 0x31E4, 0x31EF, 0xA7CB, 0xA7DA]
    corpus.add("gen:planes", "unicode16", " ".join("a" + chr(c) + "b" + chr(c) + chr(c) for c in new16))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", action="append", default=[], help="tokenizer.json whose added tokens to use")
    ap.add_argument("--min-bytes", type=int, default=4_300_000)
    args = ap.parse_args()

    added = []
    for t in args.tokenizer:
        with open(t, encoding="utf-8") as f:
            added += [a["content"] for a in json.load(f).get("added_tokens", [])]

    corpus = Corpus()
    add_mo(corpus, 1_300_000)
    pyfiles = sorted_files(sorted(glob.glob("/usr/lib/python3.*")), exts=[".py"])
    pyfiles = [p for p in pyfiles if "/site-packages/" not in p and "/dist-packages/" not in p]
    # Spread the Python budget over the whole library rather than the first packages.
    spread = pyfiles[::7]
    add_files(corpus, "python", spread, 700_000)
    add_files(corpus, "headers", sorted_files(["/usr/include"], exts=[".h", ".hpp", ".hh", ".tcc"])[::5], 500_000)
    add_files(corpus, "cmake", sorted_files(sorted(glob.glob("/usr/share/cmake-*/Help")), exts=[".rst"])[::3], 350_000)
    add_files(corpus, "licenses", sorted_files(["/usr/share/common-licenses"]), 250_000)
    add_files(corpus, "copyright", sorted_files(["/usr/share/doc"], exts=["copyright"])[::4], 200_000)
    add_files(corpus, "certs", sorted_files(["/usr/share/ca-certificates"], exts=[".crt"])[::3], 120_000)
    js_roots = ["/usr/share/nodejs", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../data/downloaded/node_modules")]
    add_files(corpus, "js", sorted_files(js_roots, exts=[".js", ".md"])[::11], 250_000)
    generated(corpus, added)
    # Top up with the Python files not used yet if the machine had little of the rest.
    if corpus.total() < args.min_bytes:
        used = {n.split(":", 1)[1].split("#")[0] for n, _ in corpus.docs if n.startswith("python:")}
        rest = [p for p in pyfiles if p not in used]
        add_files(corpus, "python", rest, args.min_bytes - corpus.total())

    tmp = args.out + f".tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for name, text in corpus.docs:
            f.write(json.dumps({"name": name, "text": text}, ensure_ascii=False))
            f.write("\n")
    summary = {"docs": len(corpus.docs), "bytes": corpus.total(), "sources": corpus.sources}
    with open(tmp + ".summary", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    os.replace(tmp + ".summary", args.out + ".summary.json")
    os.replace(tmp, args.out)
    json.dump(summary, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
