"""The model subcommands of `python3 -m dsv4_oracle` (registered from __main__.py):

  logits   -m DIR --ids 0,5,9 [--mode prefill|decode|chunk:N] [--index-keys own|reference]
           [--attn-slots compact|reference] --out FILE.npy        float32 [T, vocab]
  generate -m DIR --ids ... -n N [same switches] [--json]          greedy continuation
  dump     -m DIR --ids ... [same switches] --out FILE.npz         named intermediates per layer
  engram-map --tokenizer FILE --out FILE.npy                      §8.2 compressed token map
  engram-hash -m DIR --ids ... [--chunk N] --out FILE.npz          §8 layout, token map, hashes

--ids takes comma-separated token ids, or @FILE for a file of ids separated by commas or
whitespace.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def _parse_ids(text):
    if text.startswith("@"):
        with open(text[1:], "r", encoding="utf-8") as f:
            text = f.read()
    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        raise SystemExit("--ids: no token ids given")
    try:
        return [int(p) for p in parts]
    except ValueError as e:
        raise SystemExit(f"--ids: {e}") from None


def _common(p, out_required):
    p.add_argument("-m", "--model", required=True, help="model directory (dsv4 make-fixture format)")
    p.add_argument("--ids", required=True, help="comma-separated token ids, or @FILE")
    p.add_argument("--mode", default="prefill",
                   help="how the ids are fed: prefill (one call at 0), decode (one token per "
                        "call) or chunk:N (calls of N tokens)")
    p.add_argument("--index-keys", choices=("own", "reference"), default="own",
                   help="own: each indexer scores its own kv source's keys; reference: the "
                        "reference's shared index_k slot (spec §16.2)")
    p.add_argument("--attn-slots", choices=("compact", "reference"), default="compact",
                   help="compact slot lists (spec §16.4) or the reference's per-mode lists")
    if out_required is not None:
        p.add_argument("--out", required=out_required, help="output file")


def register(subparsers):
    """Add the logits / generate / dump subcommands to an argparse subparsers object."""
    p = subparsers.add_parser("logits", help="teacher-forced logits of every position (.npy)")
    _common(p, True)
    p.set_defaults(func=cmd_logits)

    p = subparsers.add_parser("generate", help="greedy continuation")
    _common(p, False)
    p.add_argument("-n", "--n-new", type=int, required=True, help="tokens to generate")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=cmd_generate)

    p = subparsers.add_parser("dump", help="named intermediates of every layer (.npz)")
    _common(p, True)
    p.set_defaults(func=cmd_dump)

    p = subparsers.add_parser(
        "engram-map", help="§8.2 compressed token map of a tokenizer.json (.npy int32)")
    p.add_argument("--tokenizer", required=True, help="tokenizer.json")
    p.add_argument("--out", required=True, help="output .npy (int32 [n_tokens])")
    p.set_defaults(func=cmd_engram_map)

    p = subparsers.add_parser(
        "engram-hash", help="§8.1–8.3 Engram hashing of a token sequence (.npz)",
        description="Writes the layout (primes [L, max_ngram-1, heads], offsets, multipliers "
                    "[L, max_ngram]), the compressed token map and the row indices int64 "
                    "[S, L, (max_ngram-1)*heads] of each position; --chunk N feeds the ids in "
                    "calls of N tokens (the persistent cache of §8.3).")
    p.add_argument("-m", "--model", required=True, help="model directory (with tokenizer.json)")
    p.add_argument("--ids", required=True, help="comma-separated token ids, or @FILE")
    p.add_argument("--chunk", type=int, default=0, help="tokens per call (0 = one call)")
    p.add_argument("--out", required=True, help="output .npz")
    p.set_defaults(func=cmd_engram_hash)


def _model(args, n_positions, dump=False):
    """The Model, with RoPE tables long enough for n_positions (the config's max_seq_len at
    least, as the reference sizes them)."""
    from .config import load_config
    from .model import Model
    need = max(int(load_config(args.model).max_seq_len), int(n_positions))
    return Model(args.model, index_keys=args.index_keys, attn_slots=args.attn_slots, dump=dump,
                 max_positions=need)


def cmd_logits(args):
    from .model import run_logits
    ids = _parse_ids(args.ids)
    m = _model(args, len(ids))
    t0 = time.time()
    logits = run_logits(m, ids, args.mode)
    np.save(args.out, logits.astype(np.float32))
    print(f"wrote {args.out}: float32 {list(logits.shape)} ({time.time() - t0:.2f} s)",
          file=sys.stderr)
    return 0


def cmd_generate(args):
    from .model import generate
    ids = _parse_ids(args.ids)
    m = _model(args, len(ids) + args.n_new)
    out, _ = generate(m, ids, args.n_new, args.mode)
    if args.json:
        print(json.dumps({"prompt_ids": ids, "generated_ids": out, "mode": args.mode,
                          "index_keys": args.index_keys, "attn_slots": args.attn_slots}))
    else:
        print(",".join(str(i) for i in out))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"generated_ids": out}, f)
    return 0


def cmd_engram_map(args):
    from . import engram
    token_map, size = engram.engram_token_map(args.tokenizer)
    np.save(args.out, np.asarray(token_map, np.int32))
    print(f"wrote {args.out}: {token_map.size} tokens, {size} compressed ids", file=sys.stderr)
    return 0


def cmd_engram_hash(args):
    import os
    from . import engram
    from .config import load_config
    cfg = load_config(args.model)
    if not list(cfg.engram_layer_ids):
        raise SystemExit(f"{args.model}: the model has no Engram layers")
    token_map = engram.engram_token_map(os.path.join(args.model, "tokenizer.json"))
    h = engram.NgramHash(cfg, token_map)
    ids = _parse_ids(args.ids)
    step = args.chunk if args.chunk > 0 else len(ids)
    rows = np.concatenate([h(ids[s:s + step], s) for s in range(0, len(ids), step)], axis=0)
    np.savez(args.out, primes=h.primes, offsets=h.offsets, multipliers=h.multipliers,
             token_map=np.asarray(token_map[0], np.int32), rows=rows)
    print(f"wrote {args.out}: rows int64 {list(rows.shape)}", file=sys.stderr)
    return 0


def cmd_dump(args):
    """One .npz: with a single call (prefill) the names are as Model(dump=True) writes them
    (e.g. L2.attn_out, L6.candidates, logits); with several calls each name is prefixed with
    call{k}. (k = 0, 1, ...) and call{k}.start_pos holds its start position."""
    from .model import run_logits
    ids = _parse_ids(args.ids)
    m = _model(args, len(ids), dump=True)
    calls = []
    run_logits(m, ids, args.mode, on_call=lambda seq, s: calls.append((s, seq.dump)))
    out = {}
    if len(calls) == 1:
        out.update(calls[0][1])
    else:
        for k, (s, d) in enumerate(calls):
            out[f"call{k}.start_pos"] = np.array(s, np.int64)
            for name, v in d.items():
                out[f"call{k}.{name}"] = v
    np.savez(args.out, **{k: np.asarray(v) for k, v in out.items()})
    print(f"wrote {args.out}: {len(out)} arrays", file=sys.stderr)
    return 0
