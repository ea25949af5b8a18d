#pragma once
// A fixed pool of worker threads with static, deterministic partitioning.
//
// parallel_for(n, fn) splits [0, n) into `threads()` contiguous ranges of near-equal size (the
// first n % t ranges one item longer) and runs fn(begin, end) on each, the calling thread taking
// the first range. Which thread computes which items never changes the result as long as every
// item is computed by the same code from the same inputs — which is how the model uses it (each
// output element of a linear layer, each attention query, each expert is one item) — so results
// are bit-identical for any thread count. No work stealing, no dynamic scheduling.
//
// One parallel_for at a time per pool (calls from inside fn run inline, serially).
//
// Waking a sleeping thread costs tens of microseconds (27 µs per parallel_for measured on the
// 2-core VM CI uses), and a decode step makes hundreds of calls, so idle workers and the waiting
// caller first spin briefly (kSpin) on atomic copies of the state before sleeping on the
// condition variables; the mutex-protected state stays the single source of truth.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "util/function_ref.h"

namespace dsv4 {

// Element-wise passes over fewer elements than this run on the calling thread: waking the pool
// costs more than they do (decode-sized rows), while prefill-sized ones are split by rows.
inline constexpr std::size_t kParallelElements = std::size_t{1} << 16;

class ThreadPool {
 public:
  // threads ≥ 1 (0 means std::thread::hardware_concurrency()).
  explicit ThreadPool(std::size_t threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  std::size_t threads() const { return workers_.size() + 1; }

  // A reference to the caller's callable (no copy, no allocation: parallel_for runs in the decode loop).
  using RangeFn = FunctionRef<void(std::size_t begin, std::size_t end)>;
  // Runs fn over [0, n) split as described above; rethrows the first exception a range threw
  // (after every range has finished).
  void parallel_for(std::size_t n, const RangeFn& fn);

 private:
  void worker(std::size_t index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const RangeFn* job_ = nullptr;
  std::size_t job_n_ = 0;
  std::size_t generation_ = 0;
  std::size_t pending_ = 0;
  // Lock-free copies of generation_ and pending_ for the spin phase (hints only).
  std::atomic<std::size_t> generation_hint_{0}, pending_hint_{0};
  bool stop_ = false;
  bool busy_ = false;
  std::exception_ptr error_;
};

// fn(0, n) on the calling thread when there is no pool, one thread, or one item; otherwise
// pool->parallel_for(n, fn). Kernels take an optional pool and call this rather than choosing
// themselves. Nothing is called for n == 0.
inline void parallel_for(ThreadPool* pool, std::size_t n, const ThreadPool::RangeFn& fn) {
  if (n == 0) return;
  if (pool != nullptr && pool->threads() > 1 && n > 1) pool->parallel_for(n, fn);
  else fn(0, n);
}

// [begin, end) of part `i` of `parts` near-equal contiguous ranges of [0, n).
inline std::pair<std::size_t, std::size_t> static_range(std::size_t n, std::size_t parts,
                                                        std::size_t i) {
  const std::size_t base = n / parts, extra = n % parts;
  const std::size_t begin = i * base + (i < extra ? i : extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

}  // namespace dsv4
