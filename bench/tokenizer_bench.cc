// Tokenizer throughput on the comparison corpus (tests/text/make_tokenizer_corpus.py), in MB/s
// of UTF-8 input (10^6 bytes per second, the "MB/s" counter):
//   BM_EncodeCorpus     every document encoded on its own, in turn (the single-document speed;
//                       with threads:N the documents are shared out between N threads)
//   BM_Pretokenize      the pre-tokenizer alone
//   BM_DecodeCorpus     decode() of every document's ids
//   BM_StreamDecode     the same ids through StreamDetokenizer one id at a time
//   BM_Load             Tokenizer::from_file
// bench/tokenizer_vs_hf.sh runs this against the Hugging Face library on the same corpus.
// Environment: DSV4_TOKENIZER (default tests/data/downloaded/tokenizer.json) and
// DSV4_TOKENIZER_CORPUS (default tests/data/downloaded/tokenizer_corpus.jsonl).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/pretokenizer.h"
#include "text/stream_detokenizer.h"
#include "text/tokenizer.h"

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string tokenizer_path() {
  return env_or("DSV4_TOKENIZER", std::string(DSV4_SOURCE_DIR) + "/tests/data/downloaded/tokenizer.json");
}

const dsv4::Tokenizer& tokenizer() {
  static const dsv4::Tokenizer t = dsv4::Tokenizer::from_file(tokenizer_path());
  return t;
}

struct Corpus {
  std::vector<std::string> docs;
  std::vector<std::vector<std::int32_t>> ids;
  std::size_t bytes = 0;
};

const Corpus& corpus() {
  static const Corpus c = [] {
    Corpus c;
    const std::string path =
        env_or("DSV4_TOKENIZER_CORPUS", std::string(DSV4_SOURCE_DIR) + "/tests/data/downloaded/tokenizer_corpus.jsonl");
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "tokenizer_bench: cannot read %s; build it with python3 tests/text/make_tokenizer_corpus.py "
                           "--out %s (bench/tokenizer_vs_hf.sh does)\n", path.c_str(), path.c_str());
      std::exit(1);
    }
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      c.docs.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
      c.bytes += c.docs.back().size();
    }
    for (const std::string& d : c.docs) c.ids.push_back(tokenizer().encode(d));
    return c;
  }();
  return c;
}

void set_rate(benchmark::State& state, std::size_t bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes_per_iteration));
  state.counters["MB/s"] =
      benchmark::Counter(static_cast<double>(bytes_per_iteration) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_EncodeCorpus(benchmark::State& state) {
  const Corpus& c = corpus();
  const dsv4::Tokenizer& t = tokenizer();
  std::size_t bytes = 0, tokens = 0;
  for (std::size_t d = state.thread_index(); d < c.docs.size(); d += state.threads()) bytes += c.docs[d].size();
  std::vector<std::int32_t> out;
  for (auto _ : state) {
    for (std::size_t d = state.thread_index(); d < c.docs.size(); d += state.threads()) {
      out.clear();
      t.encode_append(c.docs[d], out);
      tokens += out.size();
    }
  }
  benchmark::DoNotOptimize(tokens);
  set_rate(state, bytes);
}
BENCHMARK(BM_EncodeCorpus)->Unit(benchmark::kMillisecond)->UseRealTime()->Threads(1)->Threads(2);

void BM_Pretokenize(benchmark::State& state) {
  const Corpus& c = corpus();
  std::vector<std::uint32_t> ends;
  for (auto _ : state) {
    for (const std::string& d : c.docs) {
      ends.clear();
      dsv4::pretokenize(d, ends);
    }
    benchmark::DoNotOptimize(ends.data());
  }
  set_rate(state, c.bytes);
}
BENCHMARK(BM_Pretokenize)->Unit(benchmark::kMillisecond);

void BM_DecodeCorpus(benchmark::State& state) {
  const Corpus& c = corpus();
  for (auto _ : state)
    for (const auto& ids : c.ids) benchmark::DoNotOptimize(tokenizer().decode(ids));
  set_rate(state, c.bytes);
}
BENCHMARK(BM_DecodeCorpus)->Unit(benchmark::kMillisecond);

void BM_StreamDecode(benchmark::State& state) {
  const Corpus& c = corpus();
  for (auto _ : state) {
    for (const auto& ids : c.ids) {
      dsv4::StreamDetokenizer s(tokenizer());
      for (std::int32_t id : ids) benchmark::DoNotOptimize(s.push(id));
      benchmark::DoNotOptimize(s.finish());
    }
  }
  set_rate(state, c.bytes);
}
BENCHMARK(BM_StreamDecode)->Unit(benchmark::kMillisecond);

void BM_Load(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(dsv4::Tokenizer::from_file(tokenizer_path()));
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
