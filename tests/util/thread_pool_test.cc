// ThreadPool (src/util/thread_pool.h): every item of [0, n) runs exactly once, in the static
// ranges the header promises, across many back-to-back calls (the spin hand-off) and calls after
// the workers have gone to sleep (the condition-variable hand-off); errors reach the caller;
// a nested call runs inline.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <mutex>
#include <thread>
#include <vector>

#include "util/thread_pool.h"

namespace dsv4 {
namespace {

void check_cover(ThreadPool& pool, std::size_t n) {
  std::vector<std::atomic<int>> hits(n);
  std::atomic<std::size_t> calls{0};
  pool.parallel_for(n, [&](std::size_t b, std::size_t e) {
    ++calls;
    for (std::size_t i = b; i < e; ++i) ++hits[i];
  });
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i << " of " << n;
  ASSERT_LE(calls.load(), pool.threads());
}

TEST(ThreadPool, EveryItemOnceOverManyBackToBackCalls) {
  for (std::size_t threads : {1u, 2u, 3u}) {
    ThreadPool pool(threads);
    for (int rep = 0; rep < 2000; ++rep) check_cover(pool, static_cast<std::size_t>(rep % 37));
  }
}

TEST(ThreadPool, CallsAfterTheWorkersSleptStillRun) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 5; ++rep) {
    // Longer than the spin phase, so the workers are asleep on the condition variable.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    check_cover(pool, 10);
  }
}

TEST(ThreadPool, StaticRangesAreTheDocumentedOnes) {
  ThreadPool pool(3);
  std::vector<std::pair<std::size_t, std::size_t>> seen;
  std::mutex mu;
  pool.parallel_for(11, [&](std::size_t b, std::size_t e) {
    std::lock_guard<std::mutex> lock(mu);
    seen.emplace_back(b, e);
  });
  std::sort(seen.begin(), seen.end());
  const std::vector<std::pair<std::size_t, std::size_t>> want{{0, 4}, {4, 8}, {8, 11}};
  EXPECT_EQ(seen, want);
}

TEST(ThreadPool, ExceptionReachesTheCallerAndThePoolKeepsWorking) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(4, [](std::size_t b, std::size_t) {
    if (b != 0) throw std::runtime_error("worker range failed");
  }), std::runtime_error);
  check_cover(pool, 9);
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.parallel_for(2, [&](std::size_t, std::size_t) {
    pool.parallel_for(5, [&](std::size_t b, std::size_t e) { inner += static_cast<int>(e - b); });
  });
  EXPECT_EQ(inner.load(), 10);
}

}  // namespace
}  // namespace dsv4
