"""Model-level goldens on the `wide` preset (the released widths: dim 5120, 64 heads × 512,
window 128, index top-k 512, 16 experts of 2304, Engram, DSpark), shared by the CI check
(test_model_wide.py) and the full, slow run (slow_model_wide.py).

A golden run: greedy continuation of a prompt (the prompt in one prefill, then one token per
call), with the logits of every position processed, then the self-checks that make the goldens
trustworthy on this preset: one prefill of the whole sequence and a chunked prefill must give
the same float32 logits bit for bit, and the greedy tokens must be the argmax of those logits.
The goldens are written to $DSV4_GOLDEN_DIR (when set) for the engine's comparisons.
"""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fixtures  # noqa: E402
from dsv4_oracle import model as M  # noqa: E402
from test_model import _binary, _tokenizer, text_ids  # noqa: E402


def wide_model_dir(test):
    """The shared wide fixture (written once, reused while its stamp matches), with the V4.1
    tokenizer so that every generated id has an Engram compressed id."""
    binary, tok = _binary(), _tokenizer()
    tok41 = os.path.join(os.path.dirname(tok), "tokenizer-v41.json")
    for p in (binary, tok41):
        if not os.path.exists(p):
            test.fail(f"{p} is missing (build dsv4; run tests/data/fetch_test_data.sh)")
    root = os.environ.get("DSV4_FIXTURE_DIR") or os.path.join(HERE, "..", "..", "build",
                                                                "fixtures")
    return fixtures.ensure_fixture("wide", root, tok41, seed=1, binary=binary), tok


def golden_run(test, model_dir, prompt, n_new, index_keys, chunk, tag):
    """Runs the greedy continuation and its self-checks; returns (generated ids, logits) and
    reports timings on stderr."""
    t0 = time.time()
    m = M.Model(model_dir, index_keys=index_keys)
    gen, logits = M.generate(m, prompt, n_new)
    t_gen = time.time() - t0
    full = list(prompt) + gen[:-1]                       # every position whose logits we have
    test.assertEqual(logits.shape, (len(full), 129280))
    test.assertTrue(np.isfinite(logits).all())
    std = float(logits.std())
    test.assertTrue(0.05 < std < 100, f"degenerate logits (std {std})")
    argmax = [int(np.argmax(r)) for r in logits[len(prompt) - 1:]]
    test.assertEqual(argmax, gen)

    t1 = time.time()
    pre = M.run_logits(m, full, "prefill")
    t_pre = time.time() - t1
    bad = np.nonzero(~np.all(pre == logits, axis=1))[0]
    test.assertTrue(np.array_equal(pre, logits),
                    f"{tag}: one prefill differs from prefill+decode at positions {bad[:10]}")
    t2 = time.time()
    chk = M.run_logits(m, full, f"chunk:{chunk}")
    t_chk = time.time() - t2
    bad = np.nonzero(~np.all(chk == logits, axis=1))[0]
    test.assertTrue(np.array_equal(chk, logits),
                    f"{tag}: chunk:{chunk} differs from prefill+decode at positions {bad[:10]}")

    out_dir = os.environ.get("DSV4_GOLDEN_DIR")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        np.savez(os.path.join(out_dir, f"{tag}.npz"), prompt=np.asarray(prompt, np.int64),
                 generated=np.asarray(gen, np.int64), logits=logits)
    print(f"\n  {tag}: {len(prompt)}-token prompt, {n_new} greedy tokens {gen[:10]}…; "
          f"generate {t_gen:.0f}s, prefill of {len(full)} {t_pre:.0f}s, chunk:{chunk} "
          f"{t_chk:.0f}s; logit std {std:.3f}", file=sys.stderr)
    return gen, logits


def engine_check(test, model_dir, prompt, gen, logits, index_keys, tag, chunk=5, threads=2):
    """The engine (dsv4, strict numerics) against a golden run: the same greedy continuation
    (`dsv4 run`) and, teacher-forced over prompt + generated, bit-identical logits in a chunked
    prefill (`dsv4 logits --mode chunk:N`)."""
    import json
    import subprocess
    import tempfile
    from test_model import _binary
    binary = _binary()
    ids = ",".join(str(i) for i in prompt)
    t0 = time.time()
    r = subprocess.run([binary, "run", "-m", model_dir, "--ids", ids, "-n", str(len(gen)), "--temp",
                        "0", "--index-keys", index_keys, "--numerics", "strict", "-t", str(threads), "--json"],
                       capture_output=True, text=True)
    test.assertEqual(r.returncode, 0, r.stderr)
    test.assertEqual(json.loads(r.stdout)["generated_ids"], [int(g) for g in gen], f"{tag}: greedy ids")
    t1 = time.time()
    full = list(prompt) + [int(g) for g in gen[:-1]]
    with tempfile.TemporaryDirectory(prefix="dsv4_wide_") as d:
        out = os.path.join(d, "logits.npy")
        r = subprocess.run([binary, "logits", "-m", model_dir, "--ids", ",".join(map(str, full)),
                            "--mode", f"chunk:{chunk}", "--index-keys", index_keys, "-t",
                            str(threads), "--out", out], capture_output=True, text=True)
        test.assertEqual(r.returncode, 0, r.stderr)
        got = np.load(out)
    want = np.asarray(logits, np.float32)
    bad = np.nonzero(~np.all(got == want, axis=1))[0]
    test.assertTrue(np.array_equal(got.view(np.uint32), want.view(np.uint32)),
                    f"{tag}: engine logits differ from the oracle's at positions {bad[:10]}")
    print(f"\n  {tag}: engine identical to the oracle (greedy {t1 - t0:.0f}s, "
          f"chunk:{chunk} teacher-forced {time.time() - t1:.0f}s)", file=sys.stderr)


__all__ = ["wide_model_dir", "golden_run", "engine_check", "text_ids"]
