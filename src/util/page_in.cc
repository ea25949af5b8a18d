#include "util/page_in.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

namespace dsv4 {

PageInResult page_in(std::span<const std::span<const std::uint8_t>> ranges, ThreadPool& pool) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // The pages of all ranges are numbered consecutively and split over the threads.
  struct Range {
    const std::uint8_t* base;
    std::size_t pages;
  };
  std::vector<Range> rs;
  std::size_t total_pages = 0;
  PageInResult r;
  for (auto s : ranges) {
    if (s.empty()) continue;
    const auto begin = reinterpret_cast<std::uintptr_t>(s.data()) & ~(page - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(s.data() + s.size());
    const std::size_t pages = (end - begin + page - 1) / page;
    // Advice only: a failure (e.g. an odd file system) leaves the touch sweep to do the work.
    ::madvise(reinterpret_cast<void*>(begin), pages * page, MADV_WILLNEED);
    rs.push_back({s.data(), (s.size() + page - 1) / page});
    total_pages += rs.back().pages;
    r.bytes += pages * page;
  }
  std::atomic<std::uint64_t> sum{0};
  pool.parallel_for(total_pages, [&](std::size_t b, std::size_t e) {
    std::uint64_t local = 0;
    std::size_t first = 0;  // global page index of rs[k]'s first page
    for (const Range& rg : rs) {
      const std::size_t lo = std::max(b, first), hi = std::min(e, first + rg.pages);
      for (std::size_t p = lo; p < hi; ++p) local += rg.base[(p - first) * page];
      first += rg.pages;
    }
    sum += local;
  });
  r.checksum = sum.load();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dsv4
