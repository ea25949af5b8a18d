#!/usr/bin/env bash
# Tokenizer speed against the Hugging Face `tokenizers` library (its Node binding, the official
# Rust code) on the same corpus and the same number of threads.
#
#   bash bench/tokenizer_vs_hf.sh [BUILD_DIR] [TOKENIZER_JSON]
#
# BUILD_DIR (default build) must hold tokenizer_bench. The corpus is the one of the comparison
# test (tests/text/make_tokenizer_corpus.py), built if missing. Reported, in MB/s of UTF-8 input:
#   1 thread : ours encoding one document at a time, the library's encode() one document at a
#              time (each awaited before the next, RAYON_NUM_THREADS=1, UV_THREADPOOL_SIZE=1), and
#              its encodeBatch() of the whole corpus on one thread (no per-call overhead);
#   2 threads: ours with the documents shared between 2 threads, the library's encodeBatch() on
#              2 threads.
# Both sides warm up first (their word caches are filled), then take the best of several runs.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
data="${DSV4_TEST_DATA:-tests/data/downloaded}"
tok="${2:-$data/tokenizer.json}"
corpus="$data/tokenizer_corpus.jsonl"
[ -x "$build/tokenizer_bench" ] || { echo "tokenizer_vs_hf.sh: $build/tokenizer_bench is missing (cmake --build $build --target tokenizer_bench)" >&2; exit 1; }
[ -s "$tok" ] || { echo "tokenizer_vs_hf.sh: $tok is missing: run bash tests/data/fetch_test_data.sh" >&2; exit 1; }
if [ ! -s "$corpus" ]; then
  python3 tests/text/make_tokenizer_corpus.py --out "$corpus" --tokenizer "$data/tokenizer.json" \
    --tokenizer "$data/tokenizer-v41.json" >/dev/null
fi

ours_json="$(DSV4_TOKENIZER="$tok" DSV4_TOKENIZER_CORPUS="$corpus" "$build/tokenizer_bench" \
  --benchmark_filter='BM_EncodeCorpus' --benchmark_repetitions=3 --benchmark_report_aggregates_only=false \
  --benchmark_format=json 2>/dev/null)"
hf1="$(RAYON_NUM_THREADS=1 UV_THREADPOOL_SIZE=1 node tests/text/tokenizer_reference.js bench --tokenizer "$tok" --corpus "$corpus" --repeat 3)"
hf2="$(RAYON_NUM_THREADS=2 UV_THREADPOOL_SIZE=2 node tests/text/tokenizer_reference.js bench --tokenizer "$tok" --corpus "$corpus" --repeat 3)"

OURS="$ours_json" HF1="$hf1" HF2="$hf2" CORPUS="$corpus" node -e '
const ours = JSON.parse(process.env.OURS).benchmarks.filter((b) => b.run_type === "iteration");
const best = (threads) => Math.max(...ours.filter((b) => b.threads === threads).map((b) => b["MB/s"]));
const hf1 = JSON.parse(process.env.HF1), hf2 = JSON.parse(process.env.HF2);
const o1 = best(1), o2 = best(2);
const f = (x) => x.toFixed(2).padStart(8);
console.log(`corpus: ${process.env.CORPUS}, ${hf1.bytes} bytes, ${hf1.docs} documents, ${hf1.tokens} tokens; tokenizers ${hf1.tokenizers_version}`);
console.log(`1 thread : ours ${f(o1)} MB/s | tokenizers encode() per document ${f(hf1.single_doc_mb_per_s)} MB/s, encodeBatch ${f(hf1.batch_mb_per_s)} MB/s | ratio ${(o1 / hf1.single_doc_mb_per_s).toFixed(1)}x (vs batch ${(o1 / hf1.batch_mb_per_s).toFixed(1)}x)`);
console.log(`2 threads: ours ${f(o2)} MB/s | tokenizers encodeBatch ${f(hf2.batch_mb_per_s)} MB/s | ratio ${(o2 / hf2.batch_mb_per_s).toFixed(1)}x`);
'
