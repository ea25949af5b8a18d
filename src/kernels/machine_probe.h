#pragma once
// Measures this machine's limits in the same run as a benchmark, because on a shared host they
// drift (2-thread read bandwidth seen between ~33 and ~74 GB/s): the memory read bandwidth
// (a STREAM-like read sweep over a buffer far larger than the caches) and the arithmetic peaks
// (fp32 FMA, and bf16 dot products where AVX512_BF16 exists), each with the given thread count.
// Benchmarks divide what they achieve by these to report ratios; nothing here is asserted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "util/thread_pool.h"

namespace dsv4::kernels {

struct BandwidthResult {
  double best_gbps = 0;     // 1e9 bytes/s, the best sweep
  double median_gbps = 0;
  std::vector<double> sweeps_gbps;
  std::size_t buffer_bytes = 0;
};

struct PeakResult {
  double fp32_fma_gflops = 0;   // 2 FLOP per multiply-add
  double bf16_dot_gflops = 0;   // 0 where the CPU has no bf16 dot product
  std::string isa;              // the instructions used: "avx512", "avx2", "scalar"
};

// A read-sweep buffer kept for single sweeps on demand: a benchmark that alternates one sweep with
// one pass of its own kernel sees both at the same moment of a drifting host, and the ratio of the
// two is steadier than either figure alone (used by kernels_bench's mat-vecs).
class ReadSweep {
 public:
  // `bytes` rounded down to 64 KiB (at least 64 KiB), first touched by the threads that sweep it.
  ReadSweep(ThreadPool& pool, std::size_t bytes);
  ~ReadSweep();
  ReadSweep(const ReadSweep&) = delete;
  ReadSweep& operator=(const ReadSweep&) = delete;
  // One sweep over the buffer split over the pool's threads, in 1e9 bytes/s.
  double sweep_gbps();
  // Seconds for one sweep over bytes [offset, offset + bytes) of the buffer, both rounded down to
  // 64 KiB (at least one 64 KiB block, inside the buffer): for interleaving finer than the buffer.
  double sweep_seconds(std::size_t offset, std::size_t bytes);
  std::size_t bytes() const { return bytes_; }

 private:
  ThreadPool& pool_;
  std::size_t bytes_;
  std::uint64_t* buf_;
};

// Reads `bytes` (rounded to 64 KiB) `repeats` times split over the pool's threads.
BandwidthResult measure_read_bandwidth(ThreadPool& pool, std::size_t bytes = std::size_t(1) << 30, int repeats = 5);
// Runs independent FMA chains (and bf16 dot products) in registers on every thread.
PeakResult measure_peak(ThreadPool& pool, double seconds = 0.2);

}  // namespace dsv4::kernels
