#pragma once
// The byte-level BPE model of a tokenizer.json ("model": {"type": "BPE"}), applied to one
// pre-tokenized piece at a time, with the result of the `tokenizers` library:
//
//   symbols = one vocabulary id per byte of the piece (the id of the byte's ByteLevel character;
//             a byte whose character is not in the vocabulary is dropped, as the library does
//             when there is no unk_token);
//   repeat:   among adjacent pairs that have a merge, merge the one of lowest merge rank, the
//             leftmost on ties, into the id of the concatenated token; stop when none is left.
//
// (The library keeps a priority queue of (rank, position) with lazy invalidation; a stale entry
// can never pass its check because the span a position covers only grows, so it merges exactly
// the current minimum (rank, position) pair each step, which is what this does.)
//
// Merges are looked up by id pair in an open-addressing hash table; short pieces are merged with
// a linear scan over an array of pair ranks, long ones with a heap. WordCache memoizes whole
// pieces, which is where most of the speed on real text comes from.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dsv4 {

// Piece -> ids memo. Not thread-safe: one per thread (Tokenizer keeps a pool). Bounded: when
// full it is emptied and refills with what the text uses next. Slots are 8 bytes (a hash tag and
// an offset into one arena holding key and ids), so a quarter of a million pieces fit in a few
// MB; pieces longer than kMaxKeyBytes are not kept. In front of it sits a small direct-mapped
// table of short pieces (key and ids inline, 256 KiB, so it stays in the L2 cache) that serves
// the frequent words without touching the big table.
class WordCache {
 public:
  static constexpr std::size_t kMaxKeyBytes = 1024;
  explicit WordCache(std::size_t max_entries = std::size_t{1} << 18);

  // Appends the memoized ids of `key` to `out` and returns true, or returns false.
  bool find(std::string_view key, std::uint64_t hash, std::vector<std::int32_t>& out) const;
  // Records ids for key (key.size() <= kMaxKeyBytes).
  void insert(std::string_view key, std::uint64_t hash, const std::int32_t* ids, std::size_t n);
  std::size_t size() const { return used_; }

  static std::uint64_t hash(std::string_view key);

 private:
  struct Slot {
    std::uint32_t tag;  // high half of the hash
    std::uint32_t at;   // arena offset of the entry + 1; 0: empty slot
  };
  static constexpr std::size_t kFrontKey = 16, kFrontIds = 11, kFrontSlots = 4096;
  struct alignas(64) Front {
    std::uint64_t k0 = 0, k1 = 0;  // the key, zero-padded
    std::uint8_t len = 0, n = 0;   // len 0: empty
    std::int32_t ids[kFrontIds];
  };
  static void pack(std::string_view key, std::uint64_t& k0, std::uint64_t& k1);
  void remember(std::string_view key, std::uint64_t hash, const std::int32_t* ids, std::size_t n) const;
  mutable std::vector<Front> front_;
  // Entry layout in the arena: u32 key bytes, u32 id count, the key padded to 4 bytes, the ids.
  void clear();
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> arena_;
  std::size_t max_entries_, used_ = 0;
};

class BpeModel {
 public:
  // `model` is tokenizer.json's "model" object and `id_to_token` its vocabulary by id (model.vocab
  // only, ByteLevel-alphabet strings; they must outlive the model, which keeps views of them). Reads model.merges (strings "a b" or pairs ["a", "b"]);
  // throws dsv4::Error naming `source` and the entry for a malformed merge, one whose parts or
  // concatenation are not in the vocabulary, and for BPE options this model does not implement
  // (dropout, unk_token, byte_fallback, subword prefixes/suffixes, ignore_merges).
  BpeModel(const nlohmann::json& model, std::span<const std::string> id_to_token, const std::string& source);

  // Appends the ids of `piece` (raw bytes, non-empty) to `out`. `cache` may be null.
  void encode(std::string_view piece, std::vector<std::int32_t>& out, WordCache* cache) const;

  std::size_t merge_count() const { return merges_; }
  std::int32_t byte_id(std::uint8_t b) const { return byte_id_[b]; }
  // The id of a model.vocab string (ByteLevel alphabet), or -1.
  std::int32_t vocab_id(std::string_view token) const {
    auto it = vocab_.find(token);
    return it == vocab_.end() ? -1 : it->second;
  }

 private:
  struct Merge {
    std::uint32_t rank;  // UINT32_MAX: no merge
    std::int32_t id;
  };
  struct Entry {
    std::uint64_t key;  // (left << 32) | right; kEmpty when unused
    Merge m;
  };
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  Merge find(std::int32_t left, std::int32_t right) const {
    const std::uint64_t key = (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right);
    std::size_t i = (key * 0x9E3779B97F4A7C15ull) >> shift_;
    while (true) {
      const Entry& e = table_[i];
      if (e.key == key) return e.m;
      if (e.key == kEmpty) return {UINT32_MAX, -1};
      i = (i + 1) & mask_;
    }
  }
  void add_merge(std::int32_t left, std::int32_t right, Merge m);
  void merge_small(std::int32_t* sym, std::size_t n, std::vector<std::int32_t>& out) const;
  void merge_large(const std::int32_t* sym, std::size_t n, std::vector<std::int32_t>& out) const;

  std::int32_t byte_id_[256];
  std::unordered_map<std::string_view, std::int32_t> vocab_;  // views into the caller's id_to_token
  std::vector<Entry> table_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t merges_ = 0;
};

}  // namespace dsv4
