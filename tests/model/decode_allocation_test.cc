// The "no heap allocation in the steady-state decode loop", checked by counting every
// operator new of the process (all threads, the pool's workers included) while decode steps
// run: after warm-up steps of the same shape, a batch decode step in fast numerics makes none.
// The counting operator new replaces the global one for this whole test binary; it only counts.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "../common/tiny_fixture.h"
#include "model/model.h"

namespace {
std::atomic<long> g_allocations{0};

void* counted_alloc(std::size_t n, std::size_t align = 0) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace dsv4 {
namespace {

namespace fs = std::filesystem;

class DecodeAllocationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = test::write_tiny_fixture("dsv4_decode_alloc_test", 3, "tokenizer.json"); }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string dir_;
};
std::string DecodeAllocationTest::dir_;

// Two sequences at different positions decode together on two threads; the tiny preset has
// every kind of layer (window only, ratio-2 and ratio-1 compressors, indexer sources and
// re-indexers, the candidate source and its users, Engram layers).
TEST_F(DecodeAllocationTest, SteadyStateBatchDecodeStepMakesNoHeapAllocation) {
  ModelOptions o;
  o.forward.numerics = kernels::Numerics::kFast;
  o.threads = 2;
  auto m = Model::load(dir_, o);
  const std::size_t V = static_cast<std::size_t>(m->config().vocab_size);
  auto a = m->new_sequence(256), b = m->new_sequence(256);
  std::vector<std::int64_t> pa(70), pb(45);
  for (std::size_t i = 0; i < pa.size(); ++i) pa[i] = static_cast<std::int64_t>((i * 7919 + 13) % 120000);
  for (std::size_t i = 0; i < pb.size(); ++i) pb[i] = static_cast<std::int64_t>((i * 104729 + 5) % 120000);
  m->forward_last(*a, pa);
  m->forward_last(*b, pb);
  std::int64_t next[2] = {11, 22};
  std::vector<float> logits(2 * V);
  auto step = [&] {
    const BatchItem items[2] = {{a.get(), std::span<const std::int64_t>(&next[0], 1)},
                                {b.get(), std::span<const std::int64_t>(&next[1], 1)}};
    m->forward_batch_into(items, logits);
    for (int i = 0; i < 2; ++i) {  // greedy, so that the steps feed real model outputs
      std::size_t best = 0;
      for (std::size_t v = 1; v < V; ++v)
        if (logits[i * V + v] > logits[i * V + best]) best = v;
      next[i] = static_cast<std::int64_t>(best);
    }
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: arenas and reusable buffers reach their size
  const long before = g_allocations.load();
  for (int i = 0; i < 12; ++i) step();  // positions 73..84 and 48..59: compressor groups close, top-k grows
  const long made = g_allocations.load() - before;
  EXPECT_EQ(made, 0) << "heap allocations in 12 steady-state decode steps";
  // The counter itself works (a test that cannot fail is no test).
  const long c0 = g_allocations.load();
  auto* probe = new std::vector<int>(1000);
  delete probe;
  EXPECT_GE(g_allocations.load() - c0, 2);
}

}  // namespace
}  // namespace dsv4
