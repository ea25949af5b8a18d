// page_in touches every page of every range exactly once, whatever the thread count.
#include "util/page_in.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace dsv4 {
namespace {

TEST(PageIn, TouchesOneBytePerPageOfEveryRangeOnAnyThreadCount) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  // Three ranges of odd lengths; byte value = 1 + (page number mod 7) at each page start, 0 elsewhere,
  // so the checksum tells exactly which page starts were read.
  std::vector<std::vector<std::uint8_t>> bufs = {std::vector<std::uint8_t>(5 * page + 3),
                                                 std::vector<std::uint8_t>(1),
                                                 std::vector<std::uint8_t>(17 * page)};
  std::uint64_t want = 0;
  std::vector<std::span<const std::uint8_t>> ranges;
  for (auto& b : bufs) {
    for (std::size_t off = 0, p = 0; off < b.size(); off += page, ++p) {
      b[off] = static_cast<std::uint8_t>(1 + p % 7);
      want += b[off];
    }
    ranges.emplace_back(b.data(), b.size());
  }
  ranges.emplace_back();  // an empty range is skipped
  for (std::size_t threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    const PageInResult r = page_in(ranges, pool);
    EXPECT_EQ(r.checksum, want) << threads << " threads";
    EXPECT_GE(r.bytes, (5 * page + 3) + 1 + 17 * page);
  }
}

}  // namespace
}  // namespace dsv4
