#pragma once
// Bringing a memory-mapped range into RAM before it is timed.
//
// The weights are mapped, not read, so the first pass over them after the page cache was
// evicted takes a page fault per 4 KiB and runs at disk speed; a benchmark that times that pass
// measures the disk, not the kernels. page_in asks the kernel to read the range ahead
// (madvise WILLNEED) and then touches one byte of every page, the pages split into contiguous
// per-thread ranges so the faults are taken in parallel. It changes no data and is only ever a
// speed measure: skipping it changes timings, never results.
#include <cstddef>
#include <cstdint>
#include <span>

#include "util/thread_pool.h"

namespace dsv4 {

struct PageInResult {
  std::uint64_t bytes = 0;  // bytes of the ranges (whole pages)
  double seconds = 0;
  std::uint64_t checksum = 0;  // sum of the touched bytes: keeps the reads from being optimised away
};

PageInResult page_in(std::span<const std::span<const std::uint8_t>> ranges, ThreadPool& pool);

}  // namespace dsv4
