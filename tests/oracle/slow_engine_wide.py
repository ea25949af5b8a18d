"""The C++ engine against the full wide goldens that slow_model_wide.py writes to
$DSV4_GOLDEN_DIR (64 greedy tokens after a 16-token prompt, both index-key modes): the same
continuation and bit-identical teacher-forced logits. CTest label `slow`, run after
slow_model_wide (about 25 minutes on 2 cores):

    ctest --test-dir build -L slow --output-on-failure
"""

import os
import unittest

import numpy as np

from wide_goldens import engine_check, wide_model_dir


class WideEngine(unittest.TestCase):
    def test_engine_matches_the_64_token_goldens(self):
        model_dir, _ = wide_model_dir(self)
        gdir = os.environ.get("DSV4_GOLDEN_DIR") or ""
        for ik, tag in (("own", "wide-own-64"), ("reference", "wide-ref-64")):
            path = os.path.join(gdir, tag + ".npz")
            if not os.path.exists(path):
                self.fail(f"{path} is missing: run slow_model_wide first (ctest -L slow)")
            g = np.load(path)
            engine_check(self, model_dir, list(g["prompt"]), list(g["generated"]), g["logits"], ik,
                         tag, chunk=7)


if __name__ == "__main__":
    unittest.main()
