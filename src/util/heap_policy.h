#pragma once
// How the process heap treats the large, short-lived buffers of a forward pass.
//
// A prefill step allocates activation buffers of tens of MB (q and the attention output of 512
// tokens × 64 heads × 512 dims are 64 MB each). glibc serves blocks that large with fresh mmap()s
// and unmaps them on free, so every step page-faults and zeroes that memory again: about a sixth
// of a 512-token prefill on the `wide` preset went to page faults and first-touch zeroing.
// keep_freed_memory() makes the heap keep what it frees (no mmap for large blocks, no trimming),
// so after the first step the buffers come back already mapped. The cost is that the process's
// resident size stays at its high-water mark — what a long-running inference process wants.
namespace dsv4 {

// Call once, early in main(), before threads start. Returns false where the C library does not
// support it (then nothing changes).
bool keep_freed_memory();

}  // namespace dsv4
