#include "text/bpe.h"

#include <cstring>
#include <queue>

#include <nlohmann/json.hpp>

#include "text/byte_level.h"
#include "text/utf8.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using nlohmann::json;

std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

inline std::uint64_t load_tail(const char* p, std::size_t n) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, n);
  return v;
}

// Pieces up to this many symbols are merged by scanning a rank array (quadratic but with tiny
// constants); longer ones use a heap.
constexpr std::size_t kSmallWord = 64;

constexpr std::size_t kMaxArenaWords = std::size_t{1} << 22;

}  // namespace

// ---------------------------------------------------------------------------------------------
// WordCache

WordCache::WordCache(std::size_t max_entries) : max_entries_(max_entries < 16 ? 16 : max_entries) {
  std::size_t slots = 1;
  while (slots < max_entries_ * 2) slots <<= 1;
  slots_.assign(slots, Slot{0, 0});
  front_.resize(kFrontSlots);
}

void WordCache::pack(std::string_view key, std::uint64_t& k0, std::uint64_t& k1) {
  char buf[kFrontKey] = {};
  std::memcpy(buf, key.data(), key.size());
  std::memcpy(&k0, buf, 8);
  std::memcpy(&k1, buf + 8, 8);
}

// Puts a short piece into the front table, replacing whatever had its slot.
void WordCache::remember(std::string_view key, std::uint64_t hash, const std::int32_t* ids, std::size_t n) const {
  if (key.size() > kFrontKey || n > kFrontIds) return;
  Front& f = front_[(hash >> 40) & (kFrontSlots - 1)];
  pack(key, f.k0, f.k1);
  f.len = static_cast<std::uint8_t>(key.size());
  f.n = static_cast<std::uint8_t>(n);
  std::memcpy(f.ids, ids, n * sizeof(std::int32_t));
}

std::uint64_t WordCache::hash(std::string_view key) {
  const char* p = key.data();
  std::size_t n = key.size();
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0x9FB21C651E98DF25ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    h = (h ^ load_tail(p, n)) * 0x9FB21C651E98DF25ull;
    h ^= h >> 29;
  }
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

bool WordCache::find(std::string_view key, std::uint64_t hash, std::vector<std::int32_t>& out) const {
  if (key.size() <= kFrontKey) {
    const Front& f = front_[(hash >> 40) & (kFrontSlots - 1)];
    std::uint64_t k0, k1;
    pack(key, k0, k1);
    if (f.len == key.size() && f.k0 == k0 && f.k1 == k1) {
      out.insert(out.end(), f.ids, f.ids + f.n);
      return true;
    }
  }
  const std::size_t mask = slots_.size() - 1;
  const auto tag = static_cast<std::uint32_t>(hash >> 32);
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot s = slots_[i];
    if (s.at == 0) return false;
    if (s.tag != tag) continue;
    const std::uint32_t* e = arena_.data() + (s.at - 1);
    if (e[0] != key.size() || std::memcmp(e + 2, key.data(), key.size()) != 0) continue;
    const std::int32_t* ids = reinterpret_cast<const std::int32_t*>(e + 2 + (key.size() + 3) / 4);
    out.insert(out.end(), ids, ids + e[1]);
    remember(key, hash, ids, e[1]);
    return true;
  }
}

void WordCache::clear() {
  std::fill(slots_.begin(), slots_.end(), Slot{0, 0});
  std::fill(front_.begin(), front_.end(), Front{});
  arena_.clear();
  used_ = 0;
}

void WordCache::insert(std::string_view key, std::uint64_t hash, const std::int32_t* ids, std::size_t n) {
  if (key.empty() || key.size() > kMaxKeyBytes) return;
  const std::size_t words = 2 + (key.size() + 3) / 4 + n;
  // Bounded in entries and in memory (16 MiB of arena; long pieces fill it sooner).
  if (used_ >= max_entries_ || arena_.size() + words > kMaxArenaWords) clear();
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = hash & mask;
  while (slots_[i].at != 0) i = (i + 1) & mask;
  const std::size_t at = arena_.size();
  arena_.resize(at + words, 0);
  arena_[at] = static_cast<std::uint32_t>(key.size());
  arena_[at + 1] = static_cast<std::uint32_t>(n);
  std::memcpy(arena_.data() + at + 2, key.data(), key.size());
  std::memcpy(arena_.data() + at + 2 + (key.size() + 3) / 4, ids, n * sizeof(std::int32_t));
  slots_[i] = Slot{static_cast<std::uint32_t>(hash >> 32), static_cast<std::uint32_t>(at + 1)};
  ++used_;
  remember(key, hash, ids, n);
}

// ---------------------------------------------------------------------------------------------
// BpeModel

BpeModel::BpeModel(const json& model, std::span<const std::string> id_to_token, const std::string& source) {
  // Options this implementation does not have; each would change the ids if active.
  const auto is_null_or = [&](const char* key, const json& ok) {
    auto it = model.find(key);
    return it == model.end() || it->is_null() || *it == ok;
  };
  if (!is_null_or("dropout", json(0.0)) && !is_null_or("dropout", json(0)))
    fail("{}: model.dropout is {}; BPE dropout is not supported (it makes encoding random)", source,
         show(model["dropout"]));
  if (!is_null_or("continuing_subword_prefix", json("")))
    fail("{}: model.continuing_subword_prefix is {}; only null is supported", source,
         show(model["continuing_subword_prefix"]));
  if (!is_null_or("end_of_word_suffix", json("")))
    fail("{}: model.end_of_word_suffix is {}; only null is supported", source, show(model["end_of_word_suffix"]));
  if (!is_null_or("byte_fallback", json(false)))
    fail("{}: model.byte_fallback is {}; only false is supported", source, show(model["byte_fallback"]));
  if (!is_null_or("ignore_merges", json(false)))
    fail("{}: model.ignore_merges is {}; only false is supported", source, show(model["ignore_merges"]));

  std::unordered_map<std::string_view, std::int32_t>& vocab = vocab_;
  vocab.reserve(id_to_token.size());
  for (std::size_t i = 0; i < id_to_token.size(); ++i) vocab.emplace(id_to_token[i], static_cast<std::int32_t>(i));

  bool all_bytes = true;
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8_append(ch, byte_level_char(static_cast<std::uint8_t>(b)));
    auto it = vocab.find(ch);
    byte_id_[b] = it == vocab.end() ? -1 : it->second;
    all_bytes = all_bytes && it != vocab.end();
  }
  // An unk_token only matters for a byte whose character is missing from the vocabulary.
  if (!is_null_or("unk_token", json()) && !all_bytes)
    fail("{}: model.unk_token is {} and the vocabulary lacks some of the 256 ByteLevel characters; unknown-token "
         "handling is not supported",
         source, show(model["unk_token"]));

  const auto merges_it = model.find("merges");
  if (merges_it == model.end()) fail("{}: missing model.merges", source);
  const json& merges = *merges_it;
  if (!merges.is_array()) fail("{}: model.merges must be an array, got {}", source, show(merges));

  std::size_t slots = 16;
  while (slots < merges.size() * 2 + 16) slots <<= 1;
  table_.assign(slots, Entry{kEmpty, {UINT32_MAX, -1}});
  mask_ = slots - 1;
  shift_ = 64;
  for (std::size_t s = slots; s > 1; s >>= 1) --shift_;

  for (std::size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string_view a, b;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos)
        fail("{}: model.merges[{}] is {}; a merge must be \"left right\" (two tokens and one space)", source, i,
             show(m));
      a = std::string_view(s).substr(0, sp);
      b = std::string_view(s).substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get_ref<const std::string&>();
      b = m[1].get_ref<const std::string&>();
    } else {
      fail("{}: model.merges[{}] is {}; a merge must be a string \"left right\" or a pair [\"left\", \"right\"]",
           source, i, show(m));
    }
    const auto ia = vocab.find(a), ib = vocab.find(b);
    if (ia == vocab.end() || ib == vocab.end())
      fail("{}: model.merges[{}] {}: {} is not in model.vocab", source, i, show(m),
           json(std::string(ia == vocab.end() ? a : b)).dump());
    std::string joined;
    joined.reserve(a.size() + b.size());
    joined.append(a).append(b);
    const auto ij = vocab.find(joined);
    if (ij == vocab.end())
      fail("{}: model.merges[{}] {}: the merged token {} is not in model.vocab", source, i, show(m), json(joined).dump());
    // A repeated pair keeps its last rank, as the library's HashMap collect does.
    add_merge(ia->second, ib->second, Merge{static_cast<std::uint32_t>(i), ij->second});
  }
  merges_ = merges.size();
}

void BpeModel::add_merge(std::int32_t left, std::int32_t right, Merge m) {
  const std::uint64_t key = (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right);
  std::size_t i = (key * 0x9E3779B97F4A7C15ull) >> shift_;
  while (table_[i].key != kEmpty && table_[i].key != key) i = (i + 1) & mask_;
  table_[i] = Entry{key, m};
}

void BpeModel::merge_small(std::int32_t* sym, std::size_t n, std::vector<std::int32_t>& out) const {
  // pair[i] is the merge of (sym[i], sym[i+1]).
  Merge pair[kSmallWord];
  for (std::size_t i = 0; i + 1 < n; ++i) pair[i] = find(sym[i], sym[i + 1]);
  while (n > 1) {
    std::size_t best = 0;
    std::uint32_t best_rank = pair[0].rank;
    for (std::size_t i = 1; i + 1 < n; ++i)
      if (pair[i].rank < best_rank) {
        best_rank = pair[i].rank;
        best = i;
      }
    if (best_rank == UINT32_MAX) break;
    sym[best] = pair[best].id;
    // Remove sym[best + 1] and pair[best]; pair[best] is then recomputed with the new right.
    for (std::size_t i = best + 1; i + 1 < n; ++i) sym[i] = sym[i + 1];
    for (std::size_t i = best + 1; i + 2 < n; ++i) pair[i] = pair[i + 1];
    --n;
    if (best > 0) pair[best - 1] = find(sym[best - 1], sym[best]);
    if (best + 1 < n) pair[best] = find(sym[best], sym[best + 1]);
  }
  out.insert(out.end(), sym, sym + n);
}

void BpeModel::merge_large(const std::int32_t* ids, std::size_t n, std::vector<std::int32_t>& out) const {
  struct Sym {
    std::int32_t id;
    std::int32_t prev, next;  // -1 at the ends
    bool alive;
  };
  struct Cand {
    std::uint32_t rank;
    std::uint32_t pos;
    std::int32_t id;
    bool operator<(const Cand& o) const {  // priority_queue is a max-heap: invert
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::vector<Sym> sym(n);
  for (std::size_t i = 0; i < n; ++i)
    sym[i] = Sym{ids[i], static_cast<std::int32_t>(i) - 1, i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1, true};
  std::vector<Cand> init;
  init.reserve(n);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const Merge m = find(sym[i].id, sym[i + 1].id);
    if (m.rank != UINT32_MAX) init.push_back(Cand{m.rank, static_cast<std::uint32_t>(i), m.id});
  }
  std::priority_queue<Cand> heap(std::less<Cand>(), std::move(init));
  while (!heap.empty()) {
    const Cand top = heap.top();
    heap.pop();
    Sym& left = sym[top.pos];
    if (!left.alive || left.next < 0) continue;
    Sym& right = sym[left.next];
    const Merge now = find(left.id, right.id);
    if (now.rank == UINT32_MAX || now.id != top.id) continue;  // a stale entry
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = static_cast<std::int32_t>(top.pos);
    if (left.prev >= 0) {
      const Merge m = find(sym[left.prev].id, left.id);
      if (m.rank != UINT32_MAX) heap.push(Cand{m.rank, static_cast<std::uint32_t>(left.prev), m.id});
    }
    if (left.next >= 0) {
      const Merge m = find(left.id, sym[left.next].id);
      if (m.rank != UINT32_MAX) heap.push(Cand{m.rank, top.pos, m.id});
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (sym[i].alive) out.push_back(sym[i].id);
}

void BpeModel::encode(std::string_view piece, std::vector<std::int32_t>& out, WordCache* cache) const {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(piece.data());
  const std::size_t n = piece.size();
  if (n == 1) {
    if (byte_id_[bytes[0]] >= 0) out.push_back(byte_id_[bytes[0]]);
    return;
  }
  const bool cacheable = cache != nullptr && n <= WordCache::kMaxKeyBytes;
  std::uint64_t h = 0;
  if (cacheable) {
    h = WordCache::hash(piece);
    if (cache->find(piece, h, out)) return;
  }
  const std::size_t start = out.size();
  if (n <= kSmallWord) {
    std::int32_t sym[kSmallWord];
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (byte_id_[bytes[i]] >= 0) sym[k++] = byte_id_[bytes[i]];
    if (k > 0) merge_small(sym, k, out);
  } else {
    std::vector<std::int32_t> sym;
    sym.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      if (byte_id_[bytes[i]] >= 0) sym.push_back(byte_id_[bytes[i]]);
    if (!sym.empty()) merge_large(sym.data(), sym.size(), out);
  }
  if (cacheable) cache->insert(piece, h, out.data() + start, out.size() - start);
}

}  // namespace dsv4
