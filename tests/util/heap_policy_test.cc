// keep_freed_memory (src/util/heap_policy.h): after it, a large block comes from the heap rather
// than a private mapping, and freeing it leaves the memory in the heap for the next step.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "util/heap_policy.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dsv4 {
namespace {

#if defined(__GLIBC__)
TEST(HeapPolicy, LargeBlocksStayInTheHeapAfterFree) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer replaces the allocator (mallopt and mallinfo2 are not glibc's)";
#endif
  ASSERT_TRUE(keep_freed_memory());
  constexpr std::size_t kBytes = std::size_t{96} << 20;  // above glibc's largest mmap threshold
  const struct mallinfo2 before = mallinfo2();
  void* p = std::malloc(kBytes);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, kBytes);
  const struct mallinfo2 held = mallinfo2();
  EXPECT_EQ(held.hblkhd, before.hblkhd) << "the block was mapped on its own";
  EXPECT_GE(held.arena, before.arena + kBytes);
  std::free(p);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(after.arena, before.arena + kBytes) << "the heap gave the freed block back";
  EXPECT_GE(after.fordblks, kBytes);  // kept as free heap memory, ready for reuse
}
#endif

}  // namespace
}  // namespace dsv4
