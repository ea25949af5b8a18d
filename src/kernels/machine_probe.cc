#include "kernels/machine_probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "util/cpu_features.h"

namespace dsv4::kernels {
namespace {

using Clock = std::chrono::steady_clock;

// Sums 64-byte lines; the sum is kept so the reads cannot be optimised away.
std::uint64_t read_scalar(const std::uint64_t* p, std::size_t n) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    a += p[i] ^ p[i + 4];
    b += p[i + 1] ^ p[i + 5];
    c += p[i + 2] ^ p[i + 6];
    d += p[i + 3] ^ p[i + 7];
  }
  return a + b + c + d;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) std::uint64_t read_avx2(const std::uint64_t* p, std::size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  const auto* v = reinterpret_cast<const __m256i*>(p);
  for (std::size_t i = 0; i + 8 <= n / 4; i += 8) {
    a = _mm256_xor_si256(a, _mm256_xor_si256(_mm256_load_si256(v + i), _mm256_load_si256(v + i + 4)));
    b = _mm256_xor_si256(b, _mm256_xor_si256(_mm256_load_si256(v + i + 1), _mm256_load_si256(v + i + 5)));
    c = _mm256_xor_si256(c, _mm256_xor_si256(_mm256_load_si256(v + i + 2), _mm256_load_si256(v + i + 6)));
    d = _mm256_xor_si256(d, _mm256_xor_si256(_mm256_load_si256(v + i + 3), _mm256_load_si256(v + i + 7)));
  }
  const __m256i s = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
  alignas(32) std::uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), s);
  return out[0] ^ out[1] ^ out[2] ^ out[3];
}

// The AVX-512 sweep also prefetches a few KB ahead in software: on the 2-core development host
// that read ~3 % faster than plain loads, and a bandwidth ratio should be taken against the best
// rate the machine reaches, not against a sweep a tuned kernel can beat.
__attribute__((target("avx512f"))) std::uint64_t read_avx512(const std::uint64_t* p, std::size_t n) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  const auto* v = reinterpret_cast<const __m512i*>(p);
  constexpr std::size_t kAhead = 4096 / 64;  // in 64-byte vectors
  for (std::size_t i = 0; i + 4 <= n / 8; i += 4) {
    for (int l = 0; l < 4; ++l) _mm_prefetch(reinterpret_cast<const char*>(v + i + kAhead + l), _MM_HINT_T0);
    a = _mm512_xor_si512(a, _mm512_load_si512(v + i));
    b = _mm512_xor_si512(b, _mm512_load_si512(v + i + 1));
    c = _mm512_xor_si512(c, _mm512_load_si512(v + i + 2));
    d = _mm512_xor_si512(d, _mm512_load_si512(v + i + 3));
  }
  const __m512i s = _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d));
  alignas(64) std::uint64_t out[8];
  _mm512_store_si512(out, s);
  return out[0] ^ out[1] ^ out[2] ^ out[3] ^ out[4] ^ out[5] ^ out[6] ^ out[7];
}

__attribute__((target("avx512f"))) double fma_avx512(std::size_t iters) {
  __m512 acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k) * 1e-3f);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (std::size_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, a);
  __m512 s = acc[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, acc[k]);
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  return out[0] + out[15];
}

__attribute__((target("avx512f,avx512bf16"))) double dot_bf16_avx512(std::size_t iters) {
  __m512 acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  const __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3f80));  // 1.0
  const __m512bh y = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3380));  // 2^-24
  for (std::size_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], x, y);
  __m512 s = acc[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, acc[k]);
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) double fma_avx2(std::size_t iters) {
  __m256 acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm256_set1_ps(static_cast<float>(k) * 1e-3f);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (std::size_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) acc[k] = _mm256_fmadd_ps(acc[k], m, a);
  __m256 s = acc[0];
  for (int k = 1; k < 12; ++k) s = _mm256_add_ps(s, acc[k]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[7];
}
#endif

double fma_scalar(std::size_t iters) {
  float acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = static_cast<float>(k) * 1e-3f;
  for (std::size_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) acc[k] = acc[k] * 0.999999f + 1e-7f;
  double s = 0;
  for (float x : acc) s += x;
  return s;
}

std::atomic<double> g_sink{0};

// FLOP/s of `kernel` (flop_per_iter per iteration and thread) over all threads, best of 3.
template <typename F>
double rate(ThreadPool& pool, F kernel, double flop_per_iter, double seconds) {
  // Calibrate so that one run takes about `seconds / 3`.
  std::size_t iters = 1 << 16;
  while (true) {
    const auto t0 = Clock::now();
    g_sink = g_sink + kernel(iters);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dt > seconds / 30 || iters > (std::size_t(1) << 34)) {
      iters = static_cast<std::size_t>(static_cast<double>(iters) * (seconds / 3) / std::max(dt, 1e-9)) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = Clock::now();
    pool.parallel_for(pool.threads(), [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) g_sink = g_sink + kernel(iters);
    });
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, flop_per_iter * static_cast<double>(iters) * static_cast<double>(pool.threads()) / dt);
  }
  return best;
}

}  // namespace

constexpr std::size_t kSweepBlock = 64 * 1024;

ReadSweep::ReadSweep(ThreadPool& pool, std::size_t bytes)
    : pool_(pool), bytes_(std::max(kSweepBlock, bytes / kSweepBlock * kSweepBlock)),
      buf_(static_cast<std::uint64_t*>(std::aligned_alloc(64, bytes_))) {
  if (buf_ == nullptr) throw std::bad_alloc();
  // First touch in the same partition as the sweeps (pages land near the threads reading them).
  pool_.parallel_for(bytes_ / kSweepBlock, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b * (kSweepBlock / 8); i < e * (kSweepBlock / 8); ++i) buf_[i] = i * 0x9E3779B97F4A7C15ull;
  });
}

ReadSweep::~ReadSweep() { std::free(buf_); }

double ReadSweep::sweep_seconds(std::size_t offset, std::size_t bytes) {
  const std::size_t blocks = bytes_ / kSweepBlock;
  const std::size_t b0 = std::min(offset / kSweepBlock, blocks - 1);
  const std::size_t n = std::clamp<std::size_t>(bytes / kSweepBlock, 1, blocks - b0);
  const bool avx512 = cpu_features().avx512f, avx2 = cpu_features().avx2;
  std::atomic<std::uint64_t> sum{0};
  const auto t0 = Clock::now();
  pool_.parallel_for(n, [&](std::size_t b, std::size_t e) {
    const std::uint64_t* p = buf_ + (b0 + b) * (kSweepBlock / 8);
    const std::size_t words = (e - b) * (kSweepBlock / 8);
#if defined(__x86_64__)
    sum += avx512 ? read_avx512(p, words) : avx2 ? read_avx2(p, words) : read_scalar(p, words);
#else
    (void)avx512, (void)avx2;
    sum += read_scalar(p, words);
#endif
  });
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  g_sink = g_sink + static_cast<double>(sum.load() & 1);
  return dt;
}

double ReadSweep::sweep_gbps() { return static_cast<double>(bytes_) / sweep_seconds(0, bytes_) / 1e9; }

BandwidthResult measure_read_bandwidth(ThreadPool& pool, std::size_t bytes, int repeats) {
  ReadSweep sweep(pool, bytes);
  BandwidthResult r;
  r.buffer_bytes = sweep.bytes();
  for (int k = 0; k < repeats; ++k) r.sweeps_gbps.push_back(sweep.sweep_gbps());
  std::vector<double> s = r.sweeps_gbps;
  std::sort(s.begin(), s.end());
  r.best_gbps = s.back();
  r.median_gbps = s[s.size() / 2];
  return r;
}

PeakResult measure_peak(ThreadPool& pool, double seconds) {
  PeakResult p;
  const CpuFeatures& f = cpu_features();
#if defined(__x86_64__)
  if (f.avx512f) {
    p.isa = "avx512";
    p.fp32_fma_gflops = rate(pool, fma_avx512, 12 * 16 * 2, seconds) / 1e9;
    if (f.avx512_bf16) p.bf16_dot_gflops = rate(pool, dot_bf16_avx512, 12 * 32 * 2, seconds) / 1e9;
    return p;
  }
  if (f.avx2 && f.fma) {
    p.isa = "avx2";
    p.fp32_fma_gflops = rate(pool, fma_avx2, 12 * 8 * 2, seconds) / 1e9;
    return p;
  }
#endif
  (void)f;
  p.isa = "scalar";
  p.fp32_fma_gflops = rate(pool, fma_scalar, 12 * 2, seconds) / 1e9;
  return p;
}

}  // namespace dsv4::kernels
