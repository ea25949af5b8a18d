#pragma once
// Per-thread scratch memory for the temporaries of a forward pass.
//
// A decode step used to make about 1800 heap allocations (std::vector temporaries in the
// kernels and the model graph). The contract is that the steady-state decode loop makes
// none: every temporary comes from this thread's arena instead, a bump allocator over chunks
// that are kept for the life of the thread. A ScratchFrame marks the arena's top when it is
// made and gives everything above the mark back when it ends, so frames nest like the calls
// that own them (LIFO). After the first step of a given shape the chunks are large enough and
// nothing reaches the heap again; a larger call (a longer prefill chunk) grows them once.
//
// Invariants:
//  - a span from a frame lives until that frame ends; it never escapes the frame's scope;
//  - a frame is made and ended on the same thread (each thread has its own arena), so a
//    parallel_for body that wants scratch makes its own frame inside the body;
//  - only trivially copyable, trivially destructible element types (floats, ints, bf16 codes).
// Under AddressSanitizer every allocation is followed by a poisoned red zone and released memory
// is poisoned again, so overruns and uses after a frame ended are still reported.
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace dsv4 {

class ScratchArena {
 public:
  struct Mark {
    std::size_t chunk = 0, offset = 0;
  };

  // This thread's arena.
  static ScratchArena& local();

  Mark mark() const { return {chunk_, offset_}; }
  // Gives back everything allocated since `m` (which must come from this arena's mark()).
  void release(Mark m);
  // `bytes` bytes aligned to 64, uninitialised.
  void* allocate(std::size_t bytes);

  // Bytes held in chunks, and how many chunks were ever obtained from the heap (tests: the
  // second count stops growing once the arena has warmed up).
  std::size_t reserved_bytes() const;
  std::size_t heap_allocations() const { return heap_allocations_; }

  ScratchArena() = default;
  ~ScratchArena();
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> raw;
    std::byte* base = nullptr;  // raw, aligned to 64
    std::size_t size = 0;
  };
  static Chunk make_chunk(std::size_t size);
  std::vector<Chunk> chunks_;
  std::size_t chunk_ = 0, offset_ = 0;  // the top: chunk index and offset within it
  std::size_t heap_allocations_ = 0;
};

// A scope's share of this thread's arena (see above).
class ScratchFrame {
 public:
  ScratchFrame() : arena_(ScratchArena::local()), mark_(arena_.mark()) {}
  ~ScratchFrame() { arena_.release(mark_); }
  ScratchFrame(const ScratchFrame&) = delete;
  ScratchFrame& operator=(const ScratchFrame&) = delete;

  // n elements set to zero (what a std::vector<T>(n) gave).
  template <class T>
  std::span<T> zeros(std::size_t n) {
    std::span<T> s = uninit<T>(n);
    if (n) std::memset(static_cast<void*>(s.data()), 0, n * sizeof(T));
    return s;
  }
  // n elements set to v.
  template <class T>
  std::span<T> filled(std::size_t n, T v) {
    std::span<T> s = uninit<T>(n);
    for (T& x : s) x = v;
    return s;
  }
  // n elements with unspecified contents, for buffers every element of which is written first.
  template <class T>
  std::span<T> uninit(std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "scratch holds plain values only");
    static_assert(alignof(T) <= 64);
    return {static_cast<T*>(arena_.allocate(n * sizeof(T))), n};
  }
  // A copy of `src`.
  template <class T>
  std::span<T> copy(std::span<const T> src) {
    std::span<T> s = uninit<T>(src.size());
    if (!src.empty()) std::memcpy(static_cast<void*>(s.data()), src.data(), src.size() * sizeof(T));
    return s;
  }

 private:
  ScratchArena& arena_;
  ScratchArena::Mark mark_;
};

}  // namespace dsv4
