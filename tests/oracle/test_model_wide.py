"""The oracle on the `wide` preset (released widths) within CI's time: an 8-token prompt and 8
greedy tokens, with prefill ≡ prefill+decode ≡ chunked prefill checked bit for bit (see
wide_goldens.py), then the C++ engine against it. The full goldens (64 tokens, both index-key modes) are slow_model_wide.py,
CTest label `slow`.

Run: cd tests/oracle && /usr/bin/python3 -m unittest -v test_model_wide
"""

import unittest

from wide_goldens import engine_check, golden_run, text_ids, wide_model_dir


class WideShort(unittest.TestCase):
    def test_greedy_8_and_call_pattern_invariance(self):
        model_dir, tok = wide_model_dir(self)
        prompt = text_ids(tok, 8)
        gen, logits = golden_run(self, model_dir, prompt, 8, "own", chunk=5, tag="wide-own-8")
        # The C++ engine in strict numerics, bit for bit (tests/oracle/test_engine.py does the
        # same on the tiny preset with every switch).
        engine_check(self, model_dir, prompt, gen, logits, "own", "wide-own-8", chunk=3)


if __name__ == "__main__":
    unittest.main()
