"""Shared synthetic model directories for the slow golden tests: `dsv4 make-fixture` is run once
per (preset, seed, tokenizer, fixture generator) and the directory is reused while all four are
unchanged, because the wide preset takes minutes and 6 GiB to write.

    /usr/bin/python3 tests/oracle/fixtures.py --preset wide --root build/fixtures \\
        --tokenizer tests/data/downloaded/tokenizer-v41.json [--binary build/dsv4]

prints the model directory. The stamp file records what the directory was made from; the weights
are a pure function of the seed, the preset and the generator's sources (src/io/fixture*.cc), so
equal stamps mean equal bytes.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GENERATOR_SOURCES = ["src/io/fixture.cc", "src/io/fixture.h", "src/io/fixture_presets.cc",
                     "src/io/safetensors_writer.cc", "src/io/config.cc"]
STAMP = ".dsv4-fixture-stamp.json"


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stamp(preset, seed, tokenizer):
    return {
        "preset": preset,
        "seed": int(seed),
        "tokenizer_sha256": _sha256(tokenizer) if tokenizer else None,
        "generator_sha256": {p: _sha256(os.path.join(REPO, p)) for p in GENERATOR_SOURCES},
    }


def ensure_fixture(preset, root, tokenizer=None, seed=1, binary=None, quiet=True):
    """Returns root/<preset>-s<seed>, writing it with `dsv4 make-fixture` unless its stamp
    matches."""
    binary = binary or os.environ.get("DSV4_BINARY") or os.path.join(REPO, "build", "dsv4")
    out = os.path.join(root, f"{preset}-s{seed}")
    want = _stamp(preset, seed, tokenizer)
    try:
        with open(os.path.join(out, STAMP), "r", encoding="utf-8") as f:
            if json.load(f) == want:
                return out
    except (OSError, ValueError):
        pass
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(root, exist_ok=True)
    cmd = [binary, "make-fixture", "--preset", preset, "--seed", str(seed), "--out", out]
    if tokenizer:
        cmd += ["--tokenizer", tokenizer]
    if quiet:
        cmd.append("-q")
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, STAMP), "w", encoding="utf-8") as f:
        json.dump(want, f, indent=1)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", required=True)
    p.add_argument("--root", required=True, help="directory that holds the fixtures")
    p.add_argument("--tokenizer", help="tokenizer.json to ship with the model")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--binary", help="the dsv4 binary (default $DSV4_BINARY or build/dsv4)")
    a = p.parse_args(argv)
    print(ensure_fixture(a.preset, a.root, a.tokenizer, a.seed, a.binary, quiet=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
