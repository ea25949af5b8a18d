"""dsv4_oracle.safetensors and dsv4_oracle.config on fixtures written by `dsv4 make-fixture`,
checked against the spec's tensor inventory (§3.1) and the engine's own report (`dsv4 inspect`)."""

import json
import math
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import numpy as np

from dsv4_oracle import config as cf
from dsv4_oracle import safetensors as sf

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def dsv4_binary():
    """The engine binary: $DSV4_BINARY, else build/dsv4; built on demand (cmake --build of its
    build directory) when missing."""
    b = os.environ.get("DSV4_BINARY") or os.path.join(REPO, "build", "dsv4")
    build_dir = os.path.dirname(b)
    if not os.path.exists(b) and os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        subprocess.run(["cmake", "--build", build_dir, "--target", "dsv4"],
                       check=False, capture_output=True)
    return b if os.path.exists(b) else None


def expected_shapes(cfg, roles):
    """The shape of every tensor of a checkpoint, from the config (spec §3.1, [out, in])."""
    c = cfg
    d, q, hd, h = c.dim, c.q_lora_rank, c.head_dim, c.n_heads
    mix, hcd = (2 + c.hc_mult) * c.hc_mult, c.hc_mult * c.dim
    ceil32 = lambda v: -(-v // 32)
    out = {}

    def fp8(name, o, i):
        out[name + ".weight"] = (o, i)
        out[name + ".scale"] = (ceil32(o), ceil32(i))

    def fp4(name, o, i):
        out[name + ".weight"] = (o, i // 2)
        out[name + ".scale"] = (o, i // 32)

    for r in roles:
        p = r.prefix
        out[p + "attn.attn_sink"] = (h,)
        fp8(p + "attn.wq_a", q, d)
        out[p + "attn.q_norm.weight"] = (q,)
        fp8(p + "attn.wq_b", h * hd, q)
        fp8(p + "attn.wkv", hd, d)
        out[p + "attn.kv_norm.weight"] = (hd,)
        fp8(p + "attn.wo_a", c.o_groups * c.o_lora_rank, h * hd // c.o_groups)
        fp8(p + "attn.wo_b", d, c.o_groups * c.o_lora_rank)
        if r.kv_source:
            out[p + "attn.compressor.norm.weight"] = (hd,)
            out[p + "attn.compressor.wkv.weight"] = (hd, d)
            if r.ratio == 2:
                out[p + "attn.compressor.wgate.weight"] = (hd, d)
            out[p + "attn.indexer.wk.weight"] = (c.index_head_dim, hd)
            out[p + "attn.indexer.k_norm.weight"] = (c.index_head_dim,)
        if r.index_source:
            fp8(p + "attn.indexer.wq_b", c.index_n_heads * c.index_head_dim, q)
            out[p + "attn.indexer.weights_proj.weight"] = (c.index_n_heads, d)
        ne = c.dspark_n_routed_experts if r.is_mtp else c.n_routed_experts
        out[p + "ffn.gate.weight"] = (ne, d)
        out[p + "ffn.gate.bias"] = (ne,)
        out[p + "ffn.gate.bias_vl"] = (ne,)
        for e in range(ne):
            fp4(f"{p}ffn.experts.{e}.w1", c.moe_inter_dim, d)
            fp4(f"{p}ffn.experts.{e}.w3", c.moe_inter_dim, d)
            fp4(f"{p}ffn.experts.{e}.w2", d, c.moe_inter_dim)
        si = c.n_shared_experts * c.moe_inter_dim
        fp8(p + "ffn.shared_experts.w1", si, d)
        fp8(p + "ffn.shared_experts.w3", si, d)
        fp8(p + "ffn.shared_experts.w2", d, si)
        out[p + "attn_norm.weight"] = (d,)
        out[p + "ffn_norm.weight"] = (d,)
        for s in ("attn", "ffn"):
            out[f"{p}hc_{s}_fn"] = (mix, hcd)
            out[f"{p}hc_{s}_base"] = (mix,)
            out[f"{p}hc_{s}_scale"] = (3,)
        if r.engram_index >= 0:
            rows = c.engram_num_embeddings[r.engram_index]
            out[p + "engram.embed.weight"] = (rows, c.engram_head_dim)
            out[p + "engram.embed.scale"] = (rows, c.engram_head_dim // 32)
            n_cols = (c.engram_max_ngram_size - 1) * c.engram_n_heads
            fp8(p + "engram.wkv", d * (c.hc_mult + 1), n_cols * c.engram_head_dim)
            out[p + "engram.q_weight"] = (c.hc_mult, d)
            out[p + "engram.k_weight"] = (c.hc_mult, d)
    out["embed.weight"] = (c.vocab_size, d)
    out["head.weight"] = (c.vocab_size, d)
    out["norm.weight"] = (d,)
    return out


class FixtureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.binary = dsv4_binary()
        if cls.binary is None:
            raise unittest.SkipTest("dsv4 binary not found (set DSV4_BINARY or build build/dsv4)")
        cls.tmp = tempfile.mkdtemp(prefix="dsv4_oracle_io_")
        cls.model = os.path.join(cls.tmp, "tiny")
        subprocess.run([cls.binary, "make-fixture", "--preset", "tiny", "--seed", "7",
                        "--out", cls.model, "-q"], check=True, capture_output=True)
        rep = subprocess.run([cls.binary, "inspect", "-m", cls.model, "--json"], check=True,
                             capture_output=True)
        cls.report = json.loads(rep.stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_every_tensor_readable_with_spec_shapes(self):
        t = sf.load_model(self.model)
        inv = self.report["checkpoint"]
        self.assertEqual(len(t), inv["tensors"])
        self.assertEqual(sum(a.nbytes for a in t.values()), inv["bytes"])
        dtypes = sf.tensor_dtypes(self.model)
        by = {}
        for name, dt in dtypes.items():
            e = by.setdefault(dt, [0, 0])
            e[0] += 1
            e[1] += t[name].nbytes
        self.assertEqual({k: v for k, v in by.items()},
                         {k: [v["tensors"], v["bytes"]] for k, v in inv["by_dtype"].items()})
        cfg = cf.load_config(self.model)
        shapes = expected_shapes(cfg, cf.layer_roles(cfg))
        for name, want in shapes.items():
            self.assertIn(name, t)
            self.assertEqual(t[name].shape, want, name)
        raw = {"BF16": np.uint16, "F32": np.float32, "F8_E4M3": np.uint8, "F8_E8M0": np.uint8,
               "I8": np.uint8}
        for name, arr in t.items():
            self.assertEqual(arr.dtype, raw[dtypes[name]], name)
            self.assertFalse(arr.flags.writeable)
            arr.reshape(-1)[-1:].tolist()             # the last byte of every tensor is mapped
        self.assertTrue(np.all(np.isfinite(t["layers.0.hc_attn_fn"])))
        self.assertEqual(t["head.weight"].shape, (cfg.vocab_size, cfg.dim))

    def test_roles_match_engine(self):
        cfg = cf.load_config(self.model)
        self._compare_roles(cfg, self.report["layers"])

    def test_released_config_roles_match_engine_and_spec(self):
        path = os.path.join(self.tmp, "released.json")
        with open(path, "w") as f:
            json.dump(cf.DEFAULTS, f)
        rep = json.loads(subprocess.run([self.binary, "inspect", "--config", path, "--json"],
                                        check=True, capture_output=True).stdout)
        cfg = cf.load_config(path)
        self._compare_roles(cfg, rep["layers"])
        roles = cf.layer_roles(cfg)
        # spec §1.3 table
        self.assertEqual([r.kv_from for r in roles[3:8]], [2] * 5)
        self.assertEqual([r.topk_from for r in roles[21:24]], [20] * 3)
        self.assertEqual([r.topk_from for r in roles[25:28]], [24] * 3)
        self.assertEqual(roles[24].index_keys_from, 20)
        self.assertTrue(all(roles[i].uses_candidates for i in (24, 28, 32, 36)))
        self.assertFalse(any(roles[i].uses_candidates for i in (2, 8, 14, 20, 21)))
        self.assertEqual((roles[1].rope_base, roles[1].yarn), (10000.0, False))
        self.assertEqual((roles[2].rope_base, roles[2].yarn), (160000.0, True))
        self.assertEqual((roles[41].rope_base, roles[41].yarn, roles[41].is_mtp), (10000.0, False, True))
        self.assertEqual([r.engram_index for r in roles[:15] if r.engram_index >= 0], [0, 1])
        self.assertEqual([r.id for r in roles if r.dspark_target], [37, 38, 39])

    def _compare_roles(self, cfg, engine):
        roles = [r for r in cf.layer_roles(cfg)]
        self.assertEqual(len(engine), len(roles))
        for r, e in zip(roles, engine):
            for field in ("kv_source", "index_source", "owns_index_keys", "candidate_source",
                          "uses_candidates", "kv_from", "topk_from", "index_keys_from",
                          "dspark_target"):
                self.assertEqual(getattr(r, field), e[field], (r.id, field))
            self.assertEqual(r.ratio, e["compress_ratio"], r.id)
            self.assertEqual((r.rope_base, r.yarn), (e["rope"]["base"], e["rope"]["yarn"]), r.id)
            self.assertEqual(r.engram_index >= 0, e["engram"], r.id)


class ReaderChecksTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dsv4_oracle_st_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, header, data=b"", name="model.safetensors", raw_header=None):
        h = raw_header if raw_header is not None else json.dumps(header).encode()
        p = os.path.join(self.tmp, name)
        with open(p, "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + data)
        return p

    def test_reads_values(self):
        a = np.arange(6, dtype="<f4").reshape(2, 3)
        b = np.array([0x3F80, 0xC000], "<u2")
        self.write({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                    "b": {"dtype": "BF16", "shape": [2], "data_offsets": [24, 28]},
                    "__metadata__": {"format": "pt"}}, a.tobytes() + b.tobytes())
        t = sf.load_model(self.tmp)
        np.testing.assert_array_equal(t["a"], a)
        self.assertEqual(t["b"].dtype, np.uint16)
        self.assertEqual(t["b"].tolist(), [0x3F80, 0xC000])

    def expect_error(self, fragment, header=None, data=b"", raw_header=None):
        self.write(header, data, raw_header=raw_header)
        with self.assertRaises(ValueError) as ctx:
            sf.load_model(self.tmp)
        self.assertIn(fragment, str(ctx.exception))

    def test_errors_name_file_and_tensor(self):
        self.expect_error("'a'", {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}},
                          b"\0" * 8)
        self.expect_error("beyond", {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
                          b"\0" * 4)
        self.expect_error("overlap", {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                      "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}},
                          b"\0" * 8)
        self.expect_error("unknown dtype", {"a": {"dtype": "Q7", "shape": [1],
                                                  "data_offsets": [0, 1]}}, b"\0")
        self.expect_error("not valid", raw_header=b"{not json")
        self.expect_error("duplicate", raw_header=b'{"a": {"dtype": "U8", "shape": [1], '
                          b'"data_offsets": [0, 1]}, "a": {"dtype": "U8", "shape": [1], '
                          b'"data_offsets": [0, 1]}}', data=b"\0")
        p = os.path.join(self.tmp, "model.safetensors")
        with open(p, "wb") as f:
            f.write(struct.pack("<Q", 1000) + b"{}")
        with self.assertRaises(ValueError) as ctx:
            sf.load_model(self.tmp)
        self.assertIn("model.safetensors", str(ctx.exception))

    def test_index_checks(self):
        self.write({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\1",
                   name="s1.safetensors")
        idx = os.path.join(self.tmp, sf.INDEX_NAME)
        with open(idx, "w") as f:
            json.dump({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}}, f)
        with self.assertRaises(ValueError) as ctx:
            sf.load_model(self.tmp)
        self.assertIn("'b'", str(ctx.exception))
        with open(idx, "w") as f:
            json.dump({"weight_map": {}}, f)
        with open(idx, "w") as f:
            json.dump({"weight_map": {"a": "s2.safetensors"}}, f)
        with self.assertRaises(ValueError):
            sf.load_model(self.tmp)
        with open(idx, "w") as f:
            json.dump({"weight_map": {"a": "s1.safetensors"}}, f)
        self.assertEqual(sf.load_model(self.tmp)["a"].tolist(), [1])


class ConfigTest(unittest.TestCase):
    def test_defaults_are_the_release(self):
        c = cf.Config()
        self.assertEqual(c.total_layers, 43)
        self.assertEqual(len(c.compress_ratios), 43)
        self.assertEqual(c.compress_ratios[2], 2)
        self.assertEqual(c.compress_ratios[20], 1)
        self.assertEqual((c.max_seq_len, c.max_batch_size, c.gate_temp), (4096, 4, 1.0))
        self.assertEqual(c.norm_eps, 1e-20)

    def test_partial_file_and_unknown_keys(self):
        tmp = tempfile.mkdtemp(prefix="dsv4_oracle_cfg_")
        try:
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump({"dim": 64, "frobnicate": 1}, f)
            c = cf.load_config(tmp)
            self.assertEqual(c.dim, 64)
            self.assertEqual(c.n_heads, 64)
            self.assertEqual(c.unknown_keys, ["frobnicate"])
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump({"text_config": {}}, f)
            with self.assertRaises(ValueError):
                cf.load_config(tmp)
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
