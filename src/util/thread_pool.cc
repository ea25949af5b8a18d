// See thread_pool.h.
#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <exception>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dsv4 {

namespace {

// How long a thread polls before it sleeps: long enough to bridge the serial work between two
// parallel_for calls of a forward step, short enough not to hold a core when the pool is idle.
constexpr std::chrono::microseconds kSpin{50};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls done() until it holds or kSpin has passed; true if it held.
template <class Done>
bool spin_until(Done&& done) {
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start > kSpin) return false;
  }
}

}  // namespace

ThreadPool::ThreadPool(std::size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads - 1);
  for (std::size_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker(std::size_t index) {
  std::size_t seen = 0;
  for (;;) {
    const RangeFn* job;
    std::size_t n;
    spin_until([&] { return generation_hint_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    const auto [b, e] = static_range(n, threads(), index);
    std::exception_ptr err;
    if (b < e) {
      try {
        (*job)(b, e);
      } catch (...) {
        err = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (err && !error_) error_ = err;
      pending_hint_.store(--pending_, std::memory_order_release);
      if (pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(std::size_t n, const RangeFn& fn) {
  if (n == 0) return;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (workers_.empty() || busy_ || n == 1) {
      lock.unlock();
      fn(0, n);  // serial: one thread, a nested call, or a single item
      return;
    }
    busy_ = true;
    job_ = &fn;
    job_n_ = n;
    pending_ = workers_.size();
    pending_hint_.store(pending_, std::memory_order_relaxed);
    error_ = nullptr;
    ++generation_;
    generation_hint_.store(generation_, std::memory_order_release);
  }
  start_cv_.notify_all();
  std::exception_ptr err;
  const auto [b, e] = static_range(n, threads(), 0);
  try {
    if (b < e) fn(b, e);
  } catch (...) {
    err = std::current_exception();
  }
  spin_until([&] { return pending_hint_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  busy_ = false;
  job_ = nullptr;
  if (!err) err = error_;
  error_ = nullptr;
  lock.unlock();
  if (err) std::rethrow_exception(err);
}

}  // namespace dsv4
