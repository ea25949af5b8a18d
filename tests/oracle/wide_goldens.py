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


__all__ = ["wide_model_dir", "golden_run", "text_ids"]
