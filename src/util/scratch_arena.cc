#include "util/scratch_arena.h"

#include <algorithm>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define DSV4_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define DSV4_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define DSV4_POISON(p, n) ((void)(p), (void)(n))
#define DSV4_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace dsv4 {
namespace {

constexpr std::size_t kAlign = 64;
// The first chunk; later ones at least double the total, so a thread that needs B bytes of
// scratch at its peak gets there in O(log B) heap allocations.
constexpr std::size_t kFirstChunk = std::size_t{1} << 20;
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kRedZone = kAlign;  // left poisoned after each allocation
#else
constexpr std::size_t kRedZone = 0;
#endif

std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

ScratchArena& ScratchArena::local() {
  thread_local ScratchArena arena;
  return arena;
}

ScratchArena::Chunk ScratchArena::make_chunk(std::size_t size) {
  Chunk c;
  c.raw = std::make_unique_for_overwrite<std::byte[]>(size + kAlign);
  const auto addr = reinterpret_cast<std::uintptr_t>(c.raw.get());
  c.base = c.raw.get() + (kAlign - addr % kAlign) % kAlign;
  c.size = size;
  DSV4_POISON(c.base, c.size);
  return c;
}

ScratchArena::~ScratchArena() {
  for (Chunk& c : chunks_) DSV4_UNPOISON(c.base, c.size);
}

void* ScratchArena::allocate(std::size_t bytes) {
  const std::size_t need = round_up(std::max<std::size_t>(bytes, 1)) + kRedZone;
  if (chunks_.empty()) {
    chunks_.push_back(make_chunk(std::max(kFirstChunk, need)));
    ++heap_allocations_;
    chunk_ = 0;
    offset_ = 0;
  }
  if (offset_ + need > chunks_[chunk_].size) {
    // Move to the next chunk. Chunks above the top are unused (frames are LIFO), so one that
    // is too small is replaced by a larger one.
    const std::size_t next = chunk_ + 1;
    if (next == chunks_.size() || chunks_[next].size < need) {
      std::size_t total = 0;
      for (std::size_t i = 0; i < next; ++i) total += chunks_[i].size;
      Chunk c = make_chunk(std::max(need, total));
      ++heap_allocations_;
      if (next == chunks_.size()) chunks_.push_back(std::move(c));
      else {
        DSV4_UNPOISON(chunks_[next].base, chunks_[next].size);
        chunks_[next] = std::move(c);
      }
    }
    chunk_ = next;
    offset_ = 0;
  }
  std::byte* p = chunks_[chunk_].base + offset_;
  offset_ += need;
  DSV4_UNPOISON(p, bytes);
  return p;
}

void ScratchArena::release(Mark m) {
  if (chunks_.empty()) return;
  // Poison what is given back: the tail of the mark's chunk and every chunk above it that was used.
  for (std::size_t i = m.chunk; i <= chunk_ && i < chunks_.size(); ++i) {
    const std::size_t from = i == m.chunk ? m.offset : 0;
    const std::size_t to = i == chunk_ ? offset_ : chunks_[i].size;
    if (to > from) DSV4_POISON(chunks_[i].base + from, to - from);
  }
  chunk_ = m.chunk;
  offset_ = m.offset;
}

std::size_t ScratchArena::reserved_bytes() const {
  std::size_t n = 0;
  for (const Chunk& c : chunks_) n += c.size;
  return n;
}

}  // namespace dsv4
