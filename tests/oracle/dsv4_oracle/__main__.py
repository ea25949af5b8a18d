"""Command line of the oracle: ``python3 -m dsv4_oracle SUBCOMMAND ...``.

Each subcommand is registered by its own ``add_<name>_command(subparsers)`` function that sets
``func`` on its parser, so further subcommands (logits, generate, dump, ...) are added by writing
one more function and listing it in COMMANDS.

``op NAME IN.npy... OUT.npy...`` runs one operation on .npy inputs (the op-level goldens the C++
tests request). Inputs: float32 arrays are fp32 (bf16 values where the op expects bf16); uint16
arrays are read as bf16 bit patterns and widened; uint8 arrays are codes; a 0-d array is a scalar
argument. Outputs: one .npy per result, in the order the op returns them (``op --list`` shows
the arity of each op).
"""

import argparse
import sys

import numpy as np

from . import formats as fm
from . import ops
from . import strict as st


def _arr(x):
    x = np.asarray(x)
    if x.dtype == np.uint16:
        return fm.from_bf16_bits(x)
    return x


def _scalar(x):
    x = np.asarray(x)
    if x.ndim != 0:
        raise ValueError(f"expected a 0-d (scalar) .npy, got shape {x.shape}")
    return x.item()


class _RopeCfg:
    def __init__(self, dim, orig, factor, beta_fast, beta_slow):
        self.rope_head_dim = int(dim)
        self.original_seq_len = int(orig)
        self.rope_factor = float(factor)
        self.beta_fast = float(beta_fast)
        self.beta_slow = float(beta_slow)


def _rope_table(params):
    """params: float64 [8] = (rope_head_dim, base, yarn, n_pos, original_seq_len, rope_factor,
    beta_fast, beta_slow)."""
    p = np.asarray(params, dtype=np.float64).ravel()
    cfg = _RopeCfg(p[0], p[4], p[5], p[6], p[7])
    return ops.rope_table(cfg, float(p[1]), bool(p[2]), int(p[3]))


# name -> (function of the loaded inputs, number of inputs, number of outputs, help)
OPS = {
    "round_bf16": (lambda x: fm.round_bf16(_arr(x)), 1, 1, "fp32 -> bf16-valued fp32"),
    "bf16_bits": (lambda x: fm.bf16_bits(_arr(x)), 1, 1, "fp32 -> uint16 bf16 bits"),
    "e4m3_encode": (lambda x: fm.e4m3_encode(_arr(x)), 1, 1, "fp32 -> E4M3 codes"),
    "e4m3_decode": (lambda c: fm.e4m3_decode(c), 1, 1, "E4M3 codes -> fp32"),
    "e2m1_encode": (lambda x: fm.e2m1_encode(_arr(x)), 1, 1, "fp32 -> E2M1 codes"),
    "e2m1_decode": (lambda c: fm.e2m1_decode(c), 1, 1, "E2M1 codes -> fp32"),
    "e8m0_decode": (lambda c: fm.e8m0_decode(c), 1, 1, "E8M0 codes -> fp32"),
    "e8m0_encode_pow2": (lambda x: fm.e8m0_encode_pow2(_arr(x)), 1, 1, "power of two -> E8M0"),
    "unpack_fp4": (lambda p: fm.unpack_fp4(p), 1, 1, "packed FP4 bytes -> codes"),
    "pow2_ceil_scale": (lambda x: fm.pow2_ceil_scale(_arr(x)), 1, 1, "§2.2 on bits"),
    "act_quant": (lambda x: fm.act_quant(_arr(x)), 1, 2, "bf16 -> (E4M3 codes, E8M0 codes)"),
    "act_quant_qdq": (lambda x: fm.act_quant_qdq(_arr(x)), 1, 1, "FP8 QDQ, 1x32 ue8m0"),
    "fp4_qdq_e8m0_b32": (lambda x: fm.fp4_qdq_e8m0_b32(_arr(x)), 1, 1, "FP4 QDQ, E8M0, block 32"),
    "fp4_qdq_e4m3_b16": (lambda x: fm.fp4_qdq_e4m3_b16(_arr(x)), 1, 1, "FP4 QDQ, E4M3, block 16"),
    "sdot": (lambda a, b: st.sdot(_arr(a), _arr(b)), 2, 1, "strict a[..,K] . b[N,K]^T"),
    "ssum": (lambda x, ax: st.ssum(_arr(x), int(_scalar(ax))), 2, 1, "strict sum (x, axis)"),
    "smean": (lambda x, ax: st.smean(_arr(x), int(_scalar(ax))), 2, 1, "strict mean (x, axis)"),
    "sexp": (lambda x: st.sexp(_arr(x)), 1, 1, "strict exp"),
    "ssigmoid": (lambda x: st.ssigmoid(_arr(x)), 1, 1, "strict sigmoid"),
    "ssoftplus": (lambda x: st.ssoftplus(_arr(x)), 1, 1, "strict softplus"),
    "ssilu": (lambda x: st.ssilu(_arr(x)), 1, 1, "strict silu"),
    "srsqrt": (lambda x: st.srsqrt(_arr(x)), 1, 1, "strict rsqrt"),
    "slog1p": (lambda x: st.slog1p(_arr(x)), 1, 1, "strict log1p"),
    "ssqrt": (lambda x: st.ssqrt(_arr(x)), 1, 1, "strict sqrt"),
    "scos": (lambda x: st.scos(_arr(x)), 1, 1, "strict cos"),
    "ssin": (lambda x: st.ssin(_arr(x)), 1, 1, "strict sin"),
    "spow": (lambda x, y: st.spow(_arr(x), _arr(y)), 2, 1, "strict pow (x, y)"),
    "serf": (lambda x: st.serf(_arr(x)), 1, 1, "strict erf"),
    "linear_fp8": (lambda x, w, s: ops.linear_fp8(_arr(x), w, s), 3, 1, "(x, codes, scale)"),
    "linear_fp4": (lambda x, w, s: ops.linear_fp4(_arr(x), w, s), 3, 1, "(x, packed, scale)"),
    "linear_bf16": (lambda x, w: ops.linear_bf16(_arr(x), _arr(w)), 2, 1, "(x, w)"),
    "linear_f32": (lambda x, w: ops.linear_f32(_arr(x), _arr(w)), 2, 1, "(x, w)"),
    "rmsnorm": (lambda x, w, e: ops.rmsnorm(_arr(x), _arr(w), _scalar(e)), 3, 1, "(x, w, eps)"),
    "rope_table": (_rope_table, 1, 2,
                   "params f64[8] (dim, base, yarn, n_pos, orig, factor, beta_fast, beta_slow)"),
    "rope_freqs": (lambda p: (lambda v: ops.rope_freqs(
        _RopeCfg(v[0], v[4], v[5], v[6], v[7]), float(v[1]), bool(v[2])))(
        np.asarray(p, dtype=np.float64).ravel()), 1, 1,
        "params f64[8] as rope_table (n_pos unused) -> freq f32[dim/2]"),
    "apply_rope": (lambda x, c, s: ops.apply_rope(_arr(x), c, s), 3, 1, "(x, cos, sin)"),
    "apply_rope_inverse": (lambda x, c, s: ops.apply_rope(_arr(x), c, s, inverse=True), 3, 1,
                           "(x, cos, sin), conjugate rotation"),
    "sparse_attn": (lambda q, kv, sink, idx, sc: ops.sparse_attn(_arr(q), _arr(kv), sink, idx,
                                                                 _scalar(sc)), 5, 1,
                    "(q, kv, sink, idx, scale)"),
    "hc_split_sinkhorn": (lambda m, sc, b, hc, it, e: ops.hc_split_sinkhorn(
        m, sc, b, int(_scalar(hc)), int(_scalar(it)), _scalar(e)), 6, 3,
        "(mixes, scale, base, hc, iters, eps) -> (pre, post, comb)"),
    "hc_mixes": (lambda X, fn, sc, b, ne, he, it: ops.hc_mixes(
        _arr(X), fn, sc, b, _scalar(ne), _scalar(he), int(_scalar(it))), 7, 3,
        "(X, fn, scale, base, norm_eps, hc_eps, iters) -> (pre, post, comb)"),
    "hc_pre": (lambda X, pre: ops.hc_pre(_arr(X), pre), 2, 1, "(X, pre)"),
    "hc_post": (lambda y, R, post, comb: ops.hc_post(_arr(y), _arr(R), post, comb), 4, 1,
                "(y, R, post, comb)"),
    "topk_lowest_index": (lambda v, k: ops.topk_lowest_index(_arr(v), int(_scalar(k))), 2, 1,
                          "(values, k)"),
    "select_candidate_blocks": (lambda I, c, tb, bs: ops.select_candidate_blocks(
        _arr(I), c, int(_scalar(tb)), int(_scalar(bs))), 4, 1, "(I, c, topk_blocks, bs)"),
}


def _run_op(args):
    if args.list:
        for name, (_, n_in, n_out, doc) in sorted(OPS.items()):
            print(f"{name:24s} {n_in} in, {n_out} out  {doc}")
        return 0
    if args.name not in OPS:
        print(f"unknown op {args.name!r}; known: {', '.join(sorted(OPS))}", file=sys.stderr)
        return 2
    fn, n_in, n_out, _ = OPS[args.name]
    if len(args.files) != n_in + n_out:
        print(f"op {args.name} takes {n_in} input and {n_out} output .npy files, "
              f"got {len(args.files)} paths", file=sys.stderr)
        return 2
    inputs = [np.load(p, allow_pickle=False) for p in args.files[:n_in]]
    result = fn(*inputs)
    results = result if isinstance(result, tuple) else (result,)
    for path, r in zip(args.files[n_in:], results):
        np.save(path, np.ascontiguousarray(r), allow_pickle=False)
    return 0


def add_op_command(sub):
    p = sub.add_parser("op", help="run one operation on .npy files",
                       description="op NAME IN.npy... OUT.npy... (see --list)")
    p.add_argument("name", nargs="?", help="operation name")
    p.add_argument("files", nargs="*", help="input .npy files, then output .npy files")
    p.add_argument("--list", action="store_true", help="list the operations and their arity")
    p.set_defaults(func=_run_op)


# Each entry adds one subcommand; model commands (logits, generate, dump) go here.
COMMANDS = [add_op_command]


# ---- model subcommands: logits, generate, dump (owned by dsv4_oracle/model_cli.py) ----------
def add_model_commands(sub):
    from . import model_cli
    model_cli.register(sub)


COMMANDS.append(add_model_commands)
# ---- end of the model subcommands -------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m dsv4_oracle",
                                     description="dsv4 reference oracle (Python + NumPy)")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
