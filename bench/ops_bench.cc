// Google Benchmark micro-benchmarks of the fast kernels other than the linears (those are in
// kernels_bench): sparse attention, the indexer's scores, RMSNorm, RoPE, the hyper-connections
// (mixes with their Sinkhorn, pre, post), top-k and act_quant, on the released model's shapes
// (dim 5120, 64 heads of 512, window 128 + 512 selected rows, 32 index heads of 128, hc 4).
// Each reports bytes/s (bytes the kernel must read and write) and FLOP/s, for comparison with
// the read bandwidth and the fp32 FMA peak `dsv4 bench` measures; Arg is the number of tokens
// (1: a decode step; 64 or 512: a prefill chunk).
//
//   ./build/ops_bench [--benchmark_filter=SparseAttention] (threads: DSV4_BENCH_THREADS)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/attention_fast.h"
#include "kernels/bf16_gemm.h"
#include "kernels/hyper_connections.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/topk.h"
#include "numeric/bf16.h"
#include "util/thread_pool.h"

namespace {

using namespace dsv4;
using namespace dsv4::kernels;

constexpr std::size_t kDim = 5120, kHeads = 64, kHeadDim = 512, kWindow = 128, kTopk = 512;
constexpr std::size_t kIndexHeads = 32, kIndexDim = 128, kRopeDim = 64, kHc = 4;

ThreadPool& pool() {
  static ThreadPool p(std::getenv("DSV4_BENCH_THREADS") ? std::strtoul(std::getenv("DSV4_BENCH_THREADS"), nullptr, 10) : 0);
  return p;
}

// bf16-valued normal samples (the activations of the model are bf16).
std::vector<float> normal(std::size_t n, unsigned seed, float sd = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = round_bf16(d(g));
  return v;
}

// bf16 values as the caches store them (bit patterns).
std::vector<std::uint16_t> bf16_bits(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = bf16_from_f32(v[i]).bits;
  return out;
}

void counters(benchmark::State& st, double bytes, double flops) {
  st.counters["bytes_per_second"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = static_cast<double>(pool().threads());
}

// Each query attends the 128 window rows and 512 rows selected from a compressed cache of 4096
// (its slot list has no empty slot): per (query, head, slot) a 512-dim dot and a 512-dim FMA row.
void BM_SparseAttention(benchmark::State& st) {
  const auto S = static_cast<std::size_t>(st.range(0));
  constexpr std::size_t kCompressed = 4096, kSlots = kWindow + kTopk;
  const std::vector<float> q = normal(S * kHeads * kHeadDim, 1), win = normal(kWindow * kHeadDim, 2),
                           cache = normal(kCompressed * kHeadDim, 3), sink = normal(kHeads, 4);
  std::vector<std::int32_t> idx(S * kSlots);
  std::mt19937 g(5);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t j = 0; j < kSlots; ++j)
      idx[s * kSlots + j] = static_cast<std::int32_t>(j < kWindow ? j : kWindow + g() % kCompressed);
  const std::vector<std::uint16_t> win_bits = bf16_bits(win), cache_bits = bf16_bits(cache);
  const KvRows kv{win_bits.data(), kWindow, cache_bits.data(), kCompressed};
  std::vector<float> out(S * kHeads * kHeadDim);
  const FastAttnShape shape{S, kHeads, kHeadDim, kSlots};
  for (auto _ : st) {
    sparse_attn_fast(q, kv, sink, idx, 0.044f, shape, out, &pool());
    benchmark::DoNotOptimize(out.data());
  }
  // Rows are read once per (query, group of 4 heads); count them once per query.
  const double rows = static_cast<double>(S * kSlots * kHeadDim * 2);
  counters(st, rows + 2.0 * static_cast<double>(q.size() * 4), 4.0 * static_cast<double>(S * kHeads * kSlots * kHeadDim));
  st.SetLabel(simd_path_name(best_simd_path()));
}
BENCHMARK(BM_SparseAttention)->Arg(1)->Arg(64)->UseRealTime();

// The indexer's scores of S queries over 8192 compressed keys (a 32K context at ratio 4).
void BM_IndexScores(benchmark::State& st) {
  const auto S = static_cast<std::size_t>(st.range(0));
  constexpr std::size_t kKeys = 8192;
  const std::vector<float> q = normal(S * kIndexHeads * kIndexDim, 1), w = normal(S * kIndexHeads, 2),
                           K = normal(kKeys * kIndexDim, 3);
  const std::vector<std::int64_t> visible(S, static_cast<std::int64_t>(kKeys));
  std::vector<float> I(S * kKeys);
  const IndexScoreShape shape{S, kIndexHeads, kIndexDim, kKeys};
  const std::vector<std::uint16_t> K_bits = bf16_bits(K);
  for (auto _ : st) {
    index_scores_fast(q, w, K_bits, visible, {}, shape, I, &pool());
    benchmark::DoNotOptimize(I.data());
  }
  counters(st, 2.0 * static_cast<double>(K.size()) + 4.0 * static_cast<double>(I.size()),
           2.0 * static_cast<double>(S * kIndexHeads * kIndexDim * kKeys));
  st.SetLabel(simd_path_name(best_simd_path()));
}
BENCHMARK(BM_IndexScores)->Arg(1)->Arg(64)->UseRealTime();

void BM_RmsNorm(benchmark::State& st) {
  const auto T = static_cast<std::size_t>(st.range(0));
  const std::vector<float> x = normal(T * kDim, 1), w = normal(kDim, 2);
  std::vector<float> out(x.size());
  for (auto _ : st) {
    rmsnorm(x, w, 1e-20, out, T, &pool());
    benchmark::DoNotOptimize(out.data());
  }
  counters(st, 8.0 * static_cast<double>(x.size()), 4.0 * static_cast<double>(x.size()));
}
BENCHMARK(BM_RmsNorm)->Arg(1)->Arg(512)->UseRealTime();

// RoPE on the 64 rope dims of every query head (q [T, 64, 512]).
void BM_Rope(benchmark::State& st) {
  const auto T = static_cast<std::size_t>(st.range(0));
  const RopeTable table = rope_table(RopeParams{}, T);
  std::vector<std::int64_t> pos(T);
  for (std::size_t t = 0; t < T; ++t) pos[t] = static_cast<std::int64_t>(t);
  std::vector<float> x = normal(T * kHeads * kHeadDim, 1);
  for (auto _ : st) {
    apply_rope(x, kHeads, kHeadDim, table, pos);
    benchmark::DoNotOptimize(x.data());
  }
  const double rotated = static_cast<double>(T * kHeads * kRopeDim);
  counters(st, 8.0 * rotated, 3.0 * rotated);
}
BENCHMARK(BM_Rope)->Arg(1)->Arg(512)->UseRealTime();

// The hyper-connections of one block in fast numerics: the mixes (RMS factor, 24 dots of
// 4 × 5120 per token, then the Sinkhorn), the pre-mix to one stream and the post-mix back to four.
struct Hc {
  std::size_t T;
  std::vector<float> x, fn, scale, base, pre, post, comb, y, out;
  explicit Hc(std::size_t tokens)
      : T(tokens),
        x(normal(T * kHc * kDim, 1)),
        fn(normal((2 + kHc) * kHc * kHc * kDim, 2, 0.01f)),
        scale(normal(3, 3)),
        base(normal((2 + kHc) * kHc, 4)),
        pre(T * kHc),
        post(T * kHc),
        comb(T * kHc * kHc),
        y(normal(T * kDim, 5)),
        out(T * kHc * kDim) {}
};

void BM_HcMixes(benchmark::State& st) {
  Hc h(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) {
    hc_mixes_fast(h.x, h.fn, h.scale, h.base, 1e-20, h.T, kDim, HcParams{}, h.pre, h.post, h.comb, &pool());
    benchmark::DoNotOptimize(h.comb.data());
  }
  counters(st, 4.0 * static_cast<double>(h.x.size() + h.fn.size()),
           2.0 * static_cast<double>(h.T * ((2 + kHc) * kHc + 1) * kHc * kDim));
}
BENCHMARK(BM_HcMixes)->Arg(1)->Arg(64)->UseRealTime();

void BM_HcPreAndPost(benchmark::State& st) {
  Hc h(static_cast<std::size_t>(st.range(0)));
  hc_mixes_fast(h.x, h.fn, h.scale, h.base, 1e-20, h.T, kDim, HcParams{}, h.pre, h.post, h.comb, &pool());
  std::vector<float> one(h.T * kDim);
  for (auto _ : st) {
    hc_pre_fast(h.x, h.pre, h.T, kHc, kDim, one, &pool());
    hc_post_fast(h.y, h.x, h.post, h.comb, h.T, kHc, kDim, h.out, &pool());
    benchmark::DoNotOptimize(h.out.data());
  }
  // pre reads 4 streams, writes one; post reads one + 4, writes 4.
  counters(st, 4.0 * static_cast<double>(h.T * kDim * (4 + 1 + 1 + 4 + 4)),
           2.0 * static_cast<double>(h.T * kDim * (kHc + kHc * (kHc + 1))));
}
BENCHMARK(BM_HcPreAndPost)->Arg(1)->Arg(64)->UseRealTime();

// Top 512 of 8192 scores per query (the indexer's selection), ties to the lowest index.
void BM_TopK(benchmark::State& st) {
  const auto S = static_cast<std::size_t>(st.range(0));
  constexpr std::size_t kN = 8192;
  const std::vector<float> v = normal(S * kN, 1);
  std::vector<std::int64_t> out(S * kTopk);
  for (auto _ : st) {
    topk_lowest_index(v, S, kN, kTopk, out);
    benchmark::DoNotOptimize(out.data());
  }
  counters(st, 4.0 * static_cast<double>(v.size()), static_cast<double>(v.size()));
}
BENCHMARK(BM_TopK)->Arg(1)->Arg(64)->UseRealTime();

// act_quant of the activations of an FP8/FP4 linear (1 × 32 blocks, E4M3 × E8M0), kept as the
// dequantized bf16 values the kernels take.
void BM_ActQuant(benchmark::State& st) {
  const auto T = static_cast<std::size_t>(st.range(0));
  const std::vector<float> x = normal(T * kDim, 1);
  Bf16Acts a;
  for (auto _ : st) {
    quantized_acts(x, T, kDim, a, &pool());
    benchmark::DoNotOptimize(&a);
  }
  counters(st, 6.0 * static_cast<double>(x.size()), 3.0 * static_cast<double>(x.size()));
}
BENCHMARK(BM_ActQuant)->Arg(1)->Arg(512)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
