"""End-to-end tests of `dsv4 run`, `dsv4 chat`, `dsv4 perplexity` (and a `bench` smoke run)
through pipes and a pseudo-terminal, on the built-in default model (the tiny synthetic preset,
written on first use into $DSV4_CACHE_DIR with the tokenizer of $DSV4_TOKENIZER_DIR).

What is checked: the default model is used and announced as random; a seed reproduces a sampled
run on 1 and 2 threads and another seed does not; a stop string ends the text exactly before its
first occurrence in the unstopped greedy text, streamed or not; chat and JSON output fields;
log-probabilities; chat commands through a pipe; chat state reuse (the second turn prefills only
its new tokens and generates what one fresh prefill of the whole history generates); Ctrl-C in a
terminal interrupts a reply and returns to the prompt; clear errors for bad flags, missing
models, empty prompts and prompts longer than the context.
"""

import json
import os
import pty
import re
import select
import signal
import subprocess
import tempfile
import time
import unittest

BINARY = os.environ.get("DSV4_BINARY") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "dsv4")


def dsv4(*args, stdin=None, check=True, timeout=300, env=None):
    r = subprocess.run([BINARY, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                       env=None if env is None else {**os.environ, **env})
    if check and r.returncode != 0:
        raise AssertionError(f"dsv4 {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
    return r


def run_json(*args):
    return json.loads(dsv4("run", "-q", "--json", *args).stdout)


class Run(unittest.TestCase):
    def test_default_model_is_announced_as_random(self):
        r = dsv4("run", "-p", "Hello", "-n", "4", "--seed", "1")
        self.assertIn("built-in default model", r.stderr)
        self.assertIn("random", r.stderr)
        self.assertRegex(r.stderr, r"loaded .*parameters.*threads.*SIMD")
        self.assertRegex(r.stderr, r"time to first token [0-9.]+ s; prefill \d+ tokens .*tokens/s.*decode 4 tokens")
        self.assertTrue(r.stdout.strip())

    def test_seed_reproduces_on_any_thread_count(self):
        args = ("-p", "Once upon a time", "-n", "12", "--temp", "1.0", "--top-p", "0.98", "--top-k", "0",
                "--min-p", "0")
        a = run_json(*args, "--seed", "7", "-t", "1")
        b = run_json(*args, "--seed", "7", "-t", "2")
        c = run_json(*args, "--seed", "8", "-t", "2")
        self.assertEqual(a["generated_ids"], b["generated_ids"])
        self.assertEqual(a["text"], b["text"])
        self.assertNotEqual(a["generated_ids"], c["generated_ids"])
        self.assertEqual(a["seed"], 7)

    def test_temperature_zero_is_greedy_and_equals_the_ids_path(self):
        a = run_json("-p", "The sky is", "-n", "8", "--temp", "0")
        ids = ",".join(map(str, a["prompt_ids"]))
        b = run_json("--ids", ids, "-n", "8", "--temp", "0")
        self.assertEqual(a["generated_ids"], b["generated_ids"])
        self.assertEqual(a["prompt_ids"][0], 0)  # BOS first for a raw prompt

    def test_stop_string_never_leaks(self):
        full = run_json("-p", "Numbers:", "-n", "20", "--temp", "0", "--ignore-eos")["text"]
        self.assertGreater(len(full), 12)
        for start, length in ((3, 2), (len(full) // 2, 3), (len(full) - 4, 2)):
            stop = full[start:start + length]
            if not stop.strip() or "\ufffd" in stop:
                continue
            want = full[:full.find(stop)]
            with self.subTest(stop=stop):
                got = run_json("-p", "Numbers:", "-n", "20", "--temp", "0", "--ignore-eos", "--stop", stop)
                self.assertEqual(got["text"], want)
                self.assertEqual(got["finish_reason"], "stop")
                streamed = dsv4("run", "-q", "-p", "Numbers:", "-n", "20", "--temp", "0", "--ignore-eos",
                                "--stop", stop).stdout
                self.assertEqual(streamed.rstrip("\n"), want.rstrip("\n"))
                self.assertNotIn(stop, streamed)

    def test_json_fields_chat_and_logprobs(self):
        j = run_json("-p", "Hi", "--chat", "-n", "6", "--temp", "0", "--logprobs", "3")
        for k in ("text", "content", "reasoning_content", "tool_calls", "prompt_ids", "generated_ids",
                  "finish_reason", "seed", "timings", "usage", "logprobs"):
            self.assertIn(k, j)
        self.assertEqual(j["usage"]["completion_tokens"], len(j["generated_ids"]))
        self.assertEqual(j["usage"]["prompt_tokens"], len(j["prompt_ids"]))
        # Thinking is the default: the prompt ends in <think>, so the reply starts as reasoning.
        self.assertEqual(j["reasoning_content"] + j["content"] != "", True)
        self.assertEqual(len(j["logprobs"]), len(j["generated_ids"]))
        for lp, gid in zip(j["logprobs"], j["generated_ids"]):
            self.assertEqual(lp["id"], gid)
            tops = [t["logprob"] for t in lp["top_logprobs"]]
            self.assertEqual(len(tops), 3)
            self.assertEqual(tops, sorted(tops, reverse=True))
            self.assertEqual(lp["logprob"], tops[0])  # greedy: the chosen one is the most likely
        off = run_json("-p", "Hi", "--chat", "--think", "off", "-n", "6", "--temp", "0")
        self.assertEqual(off["reasoning_content"], "")
        self.assertTrue(off["content"])

    def test_errors_are_clear(self):
        cases = [
            (("run", "-p", "x", "--temp", "abc"), "temp"),
            (("run", "-m", "/nonexistent/model", "-p", "x"), "nonexistent"),
            (("run",), "exactly one prompt"),
            (("run", "-p", "x", "--top-p", "0"), "top_p"),
            (("run", "-p", "word " * 50, "-c", "16"), "does not fit the context"),
            (("run", "--ids", "0,999999999", "-n", "2"), "out"),
            (("run", "-p", "x", "--think", "high"), "--chat"),
            (("perplexity", "--ids", "5"), "at least 2 tokens"),
            (("perplexity", "--ids", "0,1,2,3", "-c", "2", "--stride", "3"), "stride"),
            (("chat", "--frobnicate"), "frobnicate"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                r = dsv4(*args, check=False, timeout=120)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(needle, r.stderr + r.stdout)
                self.assertNotIn("internal error", r.stderr)


class Perplexity(unittest.TestCase):
    def test_prints_perplexity_of_a_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("the quick brown fox jumps over the lazy dog " * 8)
        try:
            r = dsv4("perplexity", "-f", f.name, "-c", "32")
            self.assertRegex(r.stdout, r"perplexity [0-9.]+ \(mean NLL [0-9.]+ nats over \d+ tokens, \d+ windows")
            j = json.loads(dsv4("perplexity", "-q", "-f", f.name, "-c", "32", "--json").stdout)
            self.assertGreater(j["windows"], 1)
            self.assertGreater(j["perplexity"], 1.0)
        finally:
            os.unlink(f.name)


class Bench(unittest.TestCase):
    """A smoke run only: speed is reported, never asserted."""

    def test_smoke_prints_its_figures(self):
        r = dsv4("bench", "--smoke", "-q")
        self.assertRegex(r.stdout, r"read bandwidth [0-9.]+ GB/s")
        self.assertRegex(r.stdout, r"prefill: \d+ tokens .* of the (bf16 dot|fp32 FMA) peak")
        self.assertRegex(r.stdout, r"decode: .* of the read bandwidth")
        self.assertRegex(r.stdout, r"weights: .* mapped, paged in .* before timing")
        self.assertRegex(r.stdout, r"warm-up: the first prefill of this shape took [0-9.]+ s .*not counted")
        j = json.loads(dsv4("bench", "--smoke", "-q", "--json", "--batch", "2").stdout)
        for k in ("machine", "weights", "prefill", "decode"):
            self.assertIn(k, j)
        self.assertTrue(j["weights"]["paged_in"])
        self.assertGreater(j["weights"]["mapped_bytes"], 0)
        cold = json.loads(dsv4("bench", "--smoke", "-q", "--json", "--cold").stdout)
        self.assertFalse(cold["weights"]["paged_in"])
        self.assertGreater(j["warmup"]["prefill_seconds"], 0)
        first = json.loads(dsv4("bench", "--smoke", "-q", "--json", "--no-warmup").stdout)
        self.assertIsNone(first["warmup"])
        self.assertNotIn("warm-up", dsv4("bench", "--smoke", "-q", "--no-warmup").stdout)
        self.assertGreater(j["machine"]["read_bandwidth_gbps_best"], 0)
        self.assertGreater(j["decode"]["ratio_to_bandwidth"], 0)
        # Prefill is measured against the peak of the instruction the kernels accumulate with:
        # with their FMA form forced that is the fp32 FMA (as it is on a CPU without a bf16 dot).
        self.assertIn(j["prefill"]["peak"], ("bf16 dot", "fp32 FMA"))
        fma = json.loads(dsv4("bench", "--smoke", "-q", "--json", env={"DSV4_BF16_DOT": "fma"}).stdout)
        self.assertEqual(fma["prefill"]["peak"], "fp32 FMA")
        self.assertAlmostEqual(fma["prefill"]["ratio_to_peak"],
                               fma["prefill"]["gflops"] / fma["machine"]["fp32_fma_peak_gflops"], places=9)

    def test_context_scaling_smoke(self):
        # --smoke caps the contexts at 64 tokens; --chunk 16 makes the prefill run in chunks.
        r = dsv4("bench", "--smoke", "-q", "--ctx", "24,64", "--chunk", "16")
        self.assertRegex(r.stdout, r"context scaling .*chunks of 16")
        self.assertRegex(r.stdout, r"context\s+24\s+64")
        self.assertRegex(r.stdout, r"\n  indexer\s+[0-9.]+\s+[0-9.]+")
        j = json.loads(dsv4("bench", "--smoke", "-q", "--json", "--ctx", "40").stdout)
        self.assertEqual([c["context"] for c in j["context_scaling"]], [40])
        self.assertGreater(j["context_scaling"][0]["decode_ms_per_token"], 0)
        # Zero is refused by the run (exit 1); negative or non-numeric counts by the flag parser
        # (CLI11's exit code), which names the text as given rather than a wrapped 2^64 − 5.
        for args, flag, rc in ((["--ctx", "0"], "--ctx", 1), (["--ctx=-3"], "--ctx", None), (["-p", "-5"], "-p", None),
                               (["-n", "-1"], "--n-gen", None), (["--batch", "two"], "--batch", None),
                               (["--chunk", "0"], "--chunk", 1)):
            bad = subprocess.run([BINARY, "bench", "--smoke", "-q", *args], capture_output=True, text=True, timeout=60)
            if rc is None:
                self.assertNotIn(bad.returncode, (0, 1, 2), args)
            else:
                self.assertEqual(bad.returncode, rc, args)
            self.assertIn(flag, bad.stderr)
            self.assertNotIn("internal error", bad.stderr)
            self.assertNotIn("18446744073709551", bad.stderr)


class ChatPipe(unittest.TestCase):
    def test_commands_and_state_reuse(self):
        with tempfile.TemporaryDirectory() as tmp:
            saved = os.path.join(tmp, "t.json")
            script = "\n".join(["Hello there", "/stats", "What next?", "/stats", f"/save {saved}",
                                "/think off", "/think", "/bogus", "/reset", "/stats", f"/load {saved}",
                                "/stats", "/quit", "never read"]) + "\n"
            r = dsv4("chat", "-q", "-n", "6", "--temp", "0", stdin=script)
            out = r.stdout
            self.assertIn("[reasoning]", out)  # reasoning shown apart from the answer
            stats = re.findall(r"turns (\d+), cached tokens (\d+) of context (\d+)", out)
            self.assertEqual([s[0] for s in stats], ["1", "2", "0", "0"])
            prefilled = [int(x) for x in re.findall(r"last turn: prefilled (\d+) tokens", out)]
            self.assertEqual(len(prefilled), 2)
            self.assertLess(prefilled[1], prefilled[0])  # only the new turn
            self.assertIn("thinking: off", out)
            self.assertIn("/think needs a level", r.stderr)
            self.assertIn("unknown command /bogus", r.stderr)
            self.assertIn("conversation reset", out)
            self.assertIn("loaded 4 messages", out)
            with open(saved) as f:
                t = json.load(f)
            self.assertEqual([m["role"] for m in t["messages"]], ["user", "assistant", "user", "assistant"])
            turns = t["turns"]
            self.assertEqual(len(turns[1]["prefill_ids"]), prefilled[1])
            # The cache before turn 2's generation, prefilled at once, generates the same reply.
            t0 = turns[0]
            fed = t0["prefill_ids"] + t0["generated_ids"][:-1] + turns[1]["prefill_ids"]
            self.assertEqual(t["history_ids"][:len(fed)], fed)
            fresh = run_json("--ids", ",".join(map(str, fed)), "-n", "6", "--temp", "0", "--mode", "prefill")
            self.assertEqual(fresh["generated_ids"], turns[1]["generated_ids"])


class ChatTerminal(unittest.TestCase):
    """dsv4 chat on a pseudo-terminal: loading progress, prompt, dimmed reasoning, Ctrl-C
    interrupts a reply."""

    def read_until(self, fd, pattern, timeout=120):
        buf = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
                if re.search(pattern, buf):
                    return buf
        self.fail(f"did not see {pattern!r}; got {buf[-400:]!r}")

    def test_ctrl_c_interrupts_the_reply_and_returns_to_the_prompt(self):
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(BINARY, [BINARY, "chat", "-n", "100000", "--ignore-eos", "-c", "2048"])
        try:
            # Loading shows its progress bar on a terminal, then the summary line, then the prompt.
            self.read_until(fd, rb"loading: [\s\S]*loaded [^\n]*parameters[\s\S]*> ")
            os.write(fd, b"Tell me a long story\r")
            self.read_until(fd, rb"\x1b\[2m.{8,}", timeout=120)  # the dimmed reasoning is streaming
            os.write(fd, b"\x03")  # Ctrl-C through the terminal: SIGINT to the foreground job
            self.read_until(fd, rb"\[interrupted\][\s\S]*> ")
            os.write(fd, b"/stats\r")
            self.read_until(fd, rb"finish cancelled")
            os.write(fd, b"/quit\r")
            _, status = os.waitpid(pid, 0)
            pid = 0
            self.assertTrue(os.WIFEXITED(status))
            self.assertEqual(os.WEXITSTATUS(status), 0)
        finally:
            if pid:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(fd)


if __name__ == "__main__":
    unittest.main()
