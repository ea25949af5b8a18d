#!/usr/bin/env python3
"""Load benchmark of `dsv4 serve`: streams chat completions from 1, 4 and 16 concurrent clients
and prints throughput and the p50/p99 time to first token and inter-token latency. A benchmark:
it prints figures and asserts nothing (CTest runs it with --smoke only to check that it runs).

  bench/serve_load.py [-m MODEL_DIR | --preset tiny] [--url http://127.0.0.1:8080] [--requests N]
                      [--max-tokens N] [--concurrency 1,4,16] [--time-limit S] [--smoke]

Without --url it starts `dsv4 serve` itself ($DSV4_BINARY or build/dsv4) on a free port, with
--parallel set to the largest concurrency, on -m or a fresh synthetic model of --preset.
Each client sends its requests one after another; every request has its own prompt. Latencies
are measured by the client, from sending the request to each SSE chunk that carries text.
Uses only the standard library."""
import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))


def percentile(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(q / 100.0 * (len(xs) - 1)))))
    return xs[k]


def stream_one(host, port, body, deadline):
    """One streamed chat completion: (ttft, [inter-token gaps], tokens) or None on error."""
    conn = http.client.HTTPConnection(host, port, timeout=max(1.0, deadline - time.time()))
    t0 = time.time()
    conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        resp.read()
        conn.close()
        return None
    ttft, last, gaps, tokens = None, None, [], 0
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        if not chunk.get("choices"):
            continue
        delta = chunk["choices"][0].get("delta", {})
        if delta.get("content") or delta.get("reasoning_content"):
            now = time.time()
            if ttft is None:
                ttft = now - t0
            else:
                gaps.append(now - last)
            last = now
    conn.close()
    return (ttft if ttft is not None else time.time() - t0), gaps, tokens


def run_level(host, port, clients, per_client, max_tokens, time_limit):
    ttfts, gaps, tokens, errors = [], [], [0], [0]
    lock = threading.Lock()
    deadline = time.time() + time_limit

    def client(c):
        for r in range(per_client):
            if time.time() > deadline:
                return
            body = {"messages": [{"role": "user", "content": f"Client {c}, request {r}: tell me about item {c * 97 + r}."}],
                    "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": True,
                    "stream_options": {"include_usage": True}}
            try:
                res = stream_one(host, port, body, deadline + 60)
            except (OSError, http.client.HTTPException):
                res = None
            with lock:
                if res is None:
                    errors[0] += 1
                    continue
                ttfts.append(res[0])
                gaps.extend(res[1])
                tokens[0] += res[2]

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    return {"clients": clients, "requests": len(ttfts), "errors": errors[0], "tokens": tokens[0],
            "wall_s": wall, "tokens_per_s": tokens[0] / wall if wall > 0 else 0.0,
            "ttft_p50": percentile(ttfts, 50), "ttft_p99": percentile(ttfts, 99),
            "itl_p50": percentile(gaps, 50), "itl_p99": percentile(gaps, 99)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--url")
    ap.add_argument("--requests", type=int, default=4, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per concurrency level")
    ap.add_argument("-t", "--threads", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="a few tiny requests, to check that it runs")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    levels = [int(x) for x in a.concurrency.split(",")]
    if a.smoke:
        a.requests, a.max_tokens, a.time_limit = 1, 4, 60.0

    server = tmp = None
    try:
        if a.url:
            u = urllib.parse.urlparse(a.url)
            host, port = u.hostname, u.port or 80
        else:
            binary = os.environ.get("DSV4_BINARY", os.path.join(HERE, "..", "build", "dsv4"))
            model = a.model
            if not model:
                tmp = tempfile.mkdtemp(prefix="dsv4-load-")
                model = os.path.join(tmp, a.preset)
                tok = os.path.join(os.environ.get("DSV4_TEST_DATA", os.path.join(HERE, "..", "tests", "data", "downloaded")),
                                   "tokenizer-v41.json")
                subprocess.run([binary, "make-fixture", "--preset", a.preset, "--seed", "1", "--out", model, "-q",
                                "--tokenizer", tok], check=True)
            server = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "-q", "--alias", "bench",
                                       "--parallel", str(max(levels)), "--ctx-per-seq", str(256 + a.max_tokens),
                                       "-t", str(a.threads)], stdout=subprocess.PIPE)
            host, port = "127.0.0.1", int(server.stdout.readline())
        rows = [run_level(host, port, c, a.requests, a.max_tokens, a.time_limit) for c in levels]
    finally:
        if server:
            server.terminate()
            server.wait(timeout=60)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'clients':>7} {'requests':>8} {'errors':>6} {'tokens':>7} {'tok/s':>8} "
          f"{'TTFT p50':>9} {'TTFT p99':>9} {'ITL p50':>9} {'ITL p99':>9}")
    for r in rows:
        print(f"{r['clients']:>7} {r['requests']:>8} {r['errors']:>6} {r['tokens']:>7} {r['tokens_per_s']:>8.1f} "
              f"{r['ttft_p50'] * 1e3:>7.1f}ms {r['ttft_p99'] * 1e3:>7.1f}ms "
              f"{r['itl_p50'] * 1e3:>7.1f}ms {r['itl_p99'] * 1e3:>7.1f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
