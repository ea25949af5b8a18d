// The per-thread scratch arena (util/scratch_arena.h) that the forward pass's temporaries come from.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "util/scratch_arena.h"

namespace dsv4 {
namespace {

// The arena itself: frames nest, memory is reused after a frame ends, and a warm arena stops
// going to the heap.
TEST(ScratchArena, FramesNestAndReuseMemoryOnceWarm) {
  ScratchArena& ar = ScratchArena::local();
  auto round = [&] {
    ScratchFrame f1;
    auto a = f1.zeros<float>(1000);
    {
      ScratchFrame f2;
      auto b = f2.filled<int>(3u << 20, 7);  // bigger than the first chunk
      EXPECT_EQ(b[(3u << 20) - 1], 7);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    }
    auto c = f1.copy<float>(std::span<const float>(a));
    EXPECT_EQ(c[999], 0.0f);
    EXPECT_NE(a.data(), c.data());
    return a.data();
  };
  const float* first = round();
  const std::size_t chunks = ar.heap_allocations();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(round(), first);  // the same memory every time
  EXPECT_EQ(ar.heap_allocations(), chunks);
}

// Each thread has its own arena: a frame on another thread never sees or moves this one's top.
TEST(ScratchArena, ThreadsHaveTheirOwnArenas) {
  ScratchFrame f;
  auto mine = f.filled<int>(100, 1);
  const int* other = nullptr;
  std::thread t([&] {
    ScratchFrame g;
    auto theirs = g.filled<int>(100, 2);
    other = theirs.data();
  });
  t.join();
  EXPECT_NE(other, mine.data());
  for (int v : mine) EXPECT_EQ(v, 1);
}

}  // namespace
}  // namespace dsv4
