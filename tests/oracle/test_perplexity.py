"""`dsv4 perplexity` against the oracle on the tiny preset: the text is tokenized by the engine
(BOS first), scored in windows of 40 tokens with stride 20 in strict numerics, and every scored
token's NLL must equal −log_softmax of the oracle's own teacher-forced logits for the same window
(float64 from the bit-identical float32 logits; the tolerance 1e-9 nats covers only the two
programs' different summation orders of the softmax denominator). Also checks the windowing:
every token but the first scored exactly once, each with at least ctx − stride tokens of context.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fixtures  # noqa: E402
from dsv4_oracle import model as M  # noqa: E402
from test_model import TEXT, _binary, _tokenizer  # noqa: E402

CTX, STRIDE = 40, 20


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


class Perplexity(unittest.TestCase):
    def test_windows_match_the_oracle(self):
        binary, tok = _binary(), _tokenizer()
        root = os.environ.get("DSV4_FIXTURE_DIR") or os.path.join(HERE, "..", "..", "build", "fixtures")
        model_dir = fixtures.ensure_fixture("tiny", root, tok, seed=1, binary=binary)
        with tempfile.TemporaryDirectory(prefix="dsv4_ppl_") as tmp:
            text = os.path.join(tmp, "text.txt")
            with open(text, "w", encoding="utf-8") as f:
                f.write(" ".join(TEXT.split()[:100]))
            r = subprocess.run([binary, "perplexity", "-m", model_dir, "-f", text, "-c", str(CTX),
                                "--stride", str(STRIDE), "--numerics", "strict", "--json",
                                "--per-token", "-q"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = json.loads(r.stdout)
        ids = got["ids"]
        self.assertEqual(ids[0], 0)  # BOS
        self.assertGreater(len(ids), 2 * CTX)  # several windows
        n = len(ids)
        oracle = M.Model(model_dir)
        want = np.full(n, np.nan)
        scored_to, begin, windows = 1, 0, 0
        while scored_to < n:
            end = min(begin + CTX, n)
            seq = oracle.new_sequence(end - begin)
            lp = log_softmax(oracle.forward(seq, ids[begin:end], 0))
            for t in range(max(scored_to, begin + 1), end):
                self.assertTrue(np.isnan(want[t]), f"token {t} scored twice")
                self.assertGreaterEqual(t - begin, min(t, CTX - STRIDE), "too little context")
                want[t] = -lp[t - begin - 1, ids[t]]
            scored_to, begin, windows = end, begin + STRIDE, windows + 1
        self.assertFalse(np.isnan(want[1:]).any())
        self.assertEqual(got["windows"], windows)
        self.assertEqual(got["scored_tokens"], n - 1)
        per = np.asarray(got["per_token_nll"])
        np.testing.assert_allclose(per, want[1:], rtol=0, atol=1e-9)
        self.assertAlmostEqual(got["mean_nll"], float(want[1:].mean()), delta=1e-9)
        self.assertAlmostEqual(got["perplexity"], float(np.exp(want[1:].mean())),
                               delta=1e-9 * got["perplexity"])


if __name__ == "__main__":
    unittest.main()
