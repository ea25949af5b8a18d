"""Full model-level goldens on the `wide` preset: a 16-token prompt and 64 greedy tokens in both
index-key modes, each with its prefill ≡ decode ≡ chunked self-checks (wide_goldens.py). About
half an hour on 2 cores, so CTest labels it `slow` and the default suite skips it:

    ctest --test-dir build -L slow --output-on-failure

§16.2 changes a selection only once a query sees more than index_topk ratio-2 rows (see
test_model.py's test_reference_index_keys); on this preset index_topk is 512, far beyond the
(p+1)/2 ≤ 40 rows of these 80 positions, so the two modes must give identical tokens and logits
here (the tiny preset, where it does apply, is test_model.py's greedy test).
"""

import unittest

import numpy as np

from wide_goldens import golden_run, text_ids, wide_model_dir


class WideFull(unittest.TestCase):
    def test_greedy_64_both_index_key_modes(self):
        model_dir, tok = wide_model_dir(self)
        prompt = text_ids(tok, 16)
        own = golden_run(self, model_dir, prompt, 64, "own", chunk=7, tag="wide-own-64")
        ref = golden_run(self, model_dir, prompt, 64, "reference", chunk=7, tag="wide-ref-64")
        self.assertEqual(own[0], ref[0])
        self.assertTrue(np.array_equal(own[1], ref[1]))


if __name__ == "__main__":
    unittest.main()
