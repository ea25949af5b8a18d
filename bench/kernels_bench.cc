// Google Benchmark micro-benchmarks of the fast kernels, with bytes/s (weight bytes read) and
// FLOP/s (2 per multiply-add) counters. Shapes are the real model's: the routed experts' FP4
// w1/w3 (2304 × 5120) and w2 (5120 × 2304), an FP8 projection (4096 × 5120) and the bf16 head
// slice. Mat-vec (m = 1, decode) is bandwidth-bound: compare bytes_per_second with the read
// bandwidth `dsv4 bench` measures; GEMM (m = 512, prefill) is arithmetic-bound: compare
// FLOP/s with the bf16 dot-product peak it reports.
//
// The mat-vec runs cycle through copies of the weight totalling more than any last-level cache
// (kColdBytes), so each call reads its weights from memory as the model's decode step does; a
// single 6 MB expert would otherwise be served from L3 and overstate the kernel.
//
//   ./build/kernels_bench [--benchmark_filter=FP4] [--threads N via DSV4_BENCH_THREADS]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/bf16_gemm.h"
#include "kernels/linear.h"
#include "kernels/machine_probe.h"
#include "numeric/bf16.h"
#include "numeric/e2m1.h"
#include "numeric/e4m3.h"

namespace {

using namespace dsv4;
using namespace dsv4::kernels;

struct Weight {
  std::vector<std::uint8_t> codes, scale;
  std::vector<BF16> bf;
  WeightRef ref;
  std::size_t bytes = 0;
};

Weight make(WeightFormat f, std::size_t n, std::size_t k) {
  std::mt19937 g(42);
  Weight w;
  if (f == WeightFormat::kBF16) {
    std::normal_distribution<float> d(0.0f, 0.02f);
    w.bf.resize(n * k);
    for (auto& v : w.bf) v = bf16_from_f32(d(g));
    w.ref = WeightRef::bf16(w.bf, n, k);
    w.bytes = n * k * 2;
    return w;
  }
  // Codes as a checkpoint holds them: Gaussian weights quantized per scale block with the
  // smallest power-of-two scale that fits the block's largest magnitude (E4M3: 448, E2M1: 6), so
  // they have the real mix of exponents, zeros and subnormals, which uniformly random bytes do not
  // (a quarter of those would be E4M3 zero/subnormal codes, and a kernel may treat those apart).
  const bool fp8 = f == WeightFormat::kFP8;
  const std::size_t group_rows = fp8 ? 32 : 1, groups = (n + group_rows - 1) / group_rows, kb = k / 32;
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> v(n * k);
  for (auto& x : v) x = d(g);
  w.codes.resize(fp8 ? n * k : n * k / 2);
  w.scale.resize(groups * kb);
  for (std::size_t q = 0; q < groups; ++q)
    for (std::size_t b = 0; b < kb; ++b) {
      const std::size_t r0 = q * group_rows, r1 = std::min(n, r0 + group_rows);
      float amax = 0;
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t c = 32 * b; c < 32 * b + 32; ++c) amax = std::max(amax, std::fabs(v[r * k + c]));
      const int e = static_cast<int>(std::ceil(std::log2(std::max(amax, 1e-30f) / (fp8 ? 448.0f : 6.0f))));
      w.scale[q * kb + b] = static_cast<std::uint8_t>(127 + e);
      const float inv = std::ldexp(1.0f, -e);
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t c = 32 * b; c < 32 * b + 32; c += 2) {
          const float x0 = v[r * k + c] * inv, x1 = v[r * k + c + 1] * inv;
          if (fp8) {
            w.codes[r * k + c] = e4m3_from_f32(x0);
            w.codes[r * k + c + 1] = e4m3_from_f32(x1);
          } else {
            w.codes[(r * k + c) / 2] = e2m1_pack(e2m1_from_f32(x0), e2m1_from_f32(x1));
          }
        }
    }
  w.ref = fp8 ? WeightRef::fp8(w.codes, w.scale, n, k) : WeightRef::fp4(w.codes, w.scale, n, k);
  w.bytes = w.codes.size() + w.scale.size();
  return w;
}

constexpr std::size_t kColdBytes = std::size_t{512} << 20;

// `count` copies of `w` (same values, distinct memory), each WeightRef pointing into its own
// copy's buffers (a copied Weight's ref would still point into the original's).
std::vector<Weight> copies(const Weight& w, std::size_t count) {
  std::vector<Weight> v(count, w);
  for (Weight& c : v) {
    const std::size_t n = w.ref.rows, k = w.ref.cols;
    switch (w.ref.format) {
      case WeightFormat::kBF16: c.ref = WeightRef::bf16(c.bf, n, k); break;
      case WeightFormat::kFP8: c.ref = WeightRef::fp8(c.codes, c.scale, n, k); break;
      default: c.ref = WeightRef::fp4(c.codes, c.scale, n, k); break;
    }
  }
  return v;
}

// Enough copies of `w` to total at least kColdBytes.
std::vector<Weight> cold_copies(const Weight& w) {
  return copies(w, std::max<std::size_t>(1, (kColdBytes + w.bytes - 1) / w.bytes));
}

ThreadPool& pool() {
  static ThreadPool p(std::getenv("DSV4_BENCH_THREADS") ? std::strtoul(std::getenv("DSV4_BENCH_THREADS"), nullptr, 10) : 0);
  return p;
}

// The whole fast linear: act_quant (for FP8/FP4) + kernel + bf16 rounding. f32_input: an input
// that is not bf16-valued (the head's final-norm output), which takes f32_gemm instead of bf16_gemm.
void BM_Linear(benchmark::State& st, WeightFormat f, std::size_t n, std::size_t k, bool f32_input = false,
               bool quantize_input = true, bool resident = false) {
  const auto m = static_cast<std::size_t>(st.range(0));
  // Decode (m = 1) reads cold weights from memory; prefill is arithmetic-bound on one copy.
  // DSV4_BENCH_HOT=1 keeps one copy (cache-resident: the kernel's arithmetic rate alone);
  // `resident` shapes always do (they are sized to stay in a core's L2).
  const bool hot = resident || std::getenv("DSV4_BENCH_HOT") != nullptr;
  const std::vector<Weight> ws = m == 1 && !hot ? cold_copies(make(f, n, k)) : copies(make(f, n, k), 1);
  const Weight& w = ws[0];
  std::size_t next = 0;
  std::mt19937 g(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(m * k), out(m * n);
  for (auto& v : x) v = f32_input ? d(g) : round_bf16(d(g));
  LinearOptions opt;
  opt.mode = Numerics::kFast;
  opt.pool = &pool();
  opt.f32_output = f == WeightFormat::kBF16;
  opt.quantize_input = quantize_input;
  for (auto _ : st) {
    linear(x, m, ws[next].ref, out, opt);
    next = (next + 1) % ws.size();
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["bytes_per_second"] = benchmark::Counter(static_cast<double>(w.bytes), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k), benchmark::Counter::kIsIterationInvariantRate);
  if (m == 1 && !hot) {
    // The ratio to the read bandwidth, interleaved: cycles through the copies in kSegments
    // segments, each preceded by a read sweep of as many bytes (the next part of a kColdBytes
    // buffer, so both read cold memory), and the ratio of the two rates summed over all of it —
    // so that kernel and sweep sample the same moments of a host whose bandwidth drifts by ±30 %
    // within seconds. lo/hi: the lowest and highest ratio of a single cycle.
    constexpr std::size_t kSegments = 8;
    ReadSweep sweep(pool(), kColdBytes);
    const std::size_t per = (ws.size() + kSegments - 1) / kSegments;
    const int cycles = std::max(1, std::getenv("DSV4_BENCH_PAIRS") ? std::atoi(std::getenv("DSV4_BENCH_PAIRS")) : 6);
    double sweep_s = 0, sweep_bytes = 0, kernel_s = 0, kernel_bytes = 0, best = 0;
    std::vector<double> ratios;
    for (int c = 0; c < cycles; ++c) {
      double cs = 0, cb = 0, ks = 0, kb = 0;
      for (std::size_t s = 0; s * per < ws.size(); ++s) {
        const std::size_t n = std::min(per, ws.size() - s * per);
        const std::size_t bytes = n * w.bytes;
        const double st_s = sweep.sweep_seconds(s * (kColdBytes / kSegments), bytes);
        cs += st_s;
        cb += static_cast<double>(bytes / (64 * 1024) * (64 * 1024));
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i = s * per; i < s * per + n; ++i) linear(x, m, ws[i].ref, out, opt);
        ks += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        kb += static_cast<double>(bytes);
      }
      ratios.push_back(kb / ks / (cb / cs));
      best = std::max(best, cb / cs);
      sweep_s += cs, sweep_bytes += cb, kernel_s += ks, kernel_bytes += kb;
    }
    std::sort(ratios.begin(), ratios.end());
    st.counters["read_bw"] = best;
    st.counters["of_read_bw"] = kernel_bytes / kernel_s / (sweep_bytes / sweep_s);
    st.counters["of_read_bw_lo"] = ratios.front();
    st.counters["of_read_bw_hi"] = ratios.back();
  }
  st.counters["threads"] = static_cast<double>(pool().threads());
  st.SetLabel(isa_name(best_isa()));
}

BENCHMARK_CAPTURE(BM_Linear, FP4_expert_w1_2304x5120, WeightFormat::kFP4, 2304, 5120)->Arg(1)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, FP4_expert_w2_5120x2304, WeightFormat::kFP4, 5120, 2304)->Arg(1)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, FP8_proj_4096x5120, WeightFormat::kFP8, 4096, 5120)->Arg(1)->Arg(16)->Arg(64)->Arg(512)->UseRealTime();
// The attention projections of a V4.1 layer (wq_b: short rows, K = 1280; wo_a: one of 8 groups).
BENCHMARK_CAPTURE(BM_Linear, FP8_wq_b_32768x1280, WeightFormat::kFP8, 32768, 1280)->Arg(1)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, FP8_wo_a_group_1024x4096, WeightFormat::kFP8, 1024, 4096)->Arg(1)->UseRealTime();
// Prefill's wo_a einsum: bf16 activations (not quantized) against the dequantized FP8 group.
BENCHMARK_CAPTURE(BM_Linear, FP8_wo_a_group_bf16_input_1024x4096, WeightFormat::kFP8, 1024, 4096, false, false)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, FP8_wq_a_1280x5120, WeightFormat::kFP8, 1280, 5120)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, FP8_wo_b_5120x8192, WeightFormat::kFP8, 5120, 8192)->Arg(1)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, BF16_head_slice_8192x5120, WeightFormat::kBF16, 8192, 5120)->Arg(1)->Arg(512)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, BF16_head_slice_f32_input_8192x5120, WeightFormat::kBF16, 8192, 5120, true)->Arg(1)->Arg(4)->UseRealTime();
// The mat-vecs' arithmetic rate alone: ~640 KB of weights per thread, which stay in a core's L2
// (the shapes above, even "hot", stream from L3, whose per-core rate is well below DRAM's on some
// server parts). bytes_per_second above the read bandwidth is the margin the cold kernel has.
BENCHMARK_CAPTURE(BM_Linear, FP4_l2_resident_512x5120, WeightFormat::kFP4, 512, 5120, false, true, true)->Arg(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, FP8_l2_resident_256x5120, WeightFormat::kFP8, 256, 5120, false, true, true)->Arg(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_Linear, BF16_l2_resident_128x5120, WeightFormat::kBF16, 128, 5120, false, true, true)->Arg(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
