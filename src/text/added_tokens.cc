#include "text/added_tokens.h"

#include <unicode/uchar.h>

#include <nlohmann/json.hpp>

#include "text/utf8.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using nlohmann::json;

// Rust regex's Unicode \w: Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control.
bool is_word_char(char32_t c) {
  const auto u = static_cast<UChar32>(c);
  const std::uint32_t gc = U_MASK(u_charType(u));
  return u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || (gc & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0 ||
         u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL);
}
bool is_space(char32_t c) { return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE); }

// The code point that ends at `end` (end > 0, valid UTF-8).
char32_t last_char(std::string_view s, std::size_t end, std::size_t& begin) {
  begin = end - 1;
  while (begin > 0 && (static_cast<std::uint8_t>(s[begin]) & 0xC0) == 0x80) --begin;
  std::size_t p = begin;
  char32_t c = 0xFFFD;
  if (!utf8_next(s, p, c)) c = 0xFFFD;
  return c;
}
char32_t first_char(std::string_view s, std::size_t begin, std::size_t& end) {
  end = begin;
  char32_t c = 0xFFFD;
  if (!utf8_next(s, end, c)) {
    end = begin + 1;
    c = 0xFFFD;
  }
  return c;
}

// `\s*$`: where the whitespace at the end of s[0, end) starts.
std::size_t trailing_space_start(std::string_view s, std::size_t end) {
  while (end > 0) {
    std::size_t b;
    if (!is_space(last_char(s, end, b))) break;
    end = b;
  }
  return end;
}
// `^\s*`: where the whitespace at the start of s[begin, ...) ends.
std::size_t leading_space_end(std::string_view s, std::size_t begin) {
  while (begin < s.size()) {
    std::size_t e;
    if (!is_space(first_char(s, begin, e))) break;
    begin = e;
  }
  return begin;
}

bool flag(const json& e, const char* name) {
  auto it = e.find(name);
  return it != e.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

std::vector<AddedToken> added_tokens_from_json(const json& doc, const std::string& source) {
  std::vector<AddedToken> out;
  auto it = doc.find("added_tokens");
  if (it == doc.end() || it->is_null()) return out;
  if (!it->is_array()) fail("{}: added_tokens must be an array", source);
  for (const json& e : *it) {
    AddedToken t;
    t.content = e.at("content").get<std::string>();
    t.id = e.at("id").get<std::int32_t>();
    t.special = flag(e, "special");
    t.single_word = flag(e, "single_word");
    t.lstrip = flag(e, "lstrip");
    t.rstrip = flag(e, "rstrip");
    // The library's default for a missing "normalized" is true (AddedToken::default).
    auto n = e.find("normalized");
    t.normalized = n == e.end() || n->is_null() || (n->is_boolean() && n->get<bool>());
    if (!utf8_valid(t.content)) fail("{}: added token {} is not valid UTF-8", source, t.id);
    out.push_back(std::move(t));
  }
  return out;
}

void AddedTokenMatcher::Trie::add(std::string_view key, std::int32_t token) {
  std::int32_t node = 0;
  for (char ch : key) {
    const auto b = static_cast<std::uint8_t>(ch);
    std::int32_t next = -1;
    for (const auto& [kb, child] : nodes_[node].kids)
      if (kb == b) next = child;
    if (next < 0) {
      next = static_cast<std::int32_t>(nodes_.size());
      nodes_[node].kids.emplace_back(b, next);
      nodes_.emplace_back();
    }
    node = next;
  }
  if (nodes_[node].token < 0) nodes_[node].token = token;  // equal contents: the first wins
  first_[static_cast<std::uint8_t>(key[0])] = true;
}

bool AddedTokenMatcher::Trie::next(std::string_view text, std::size_t from, std::size_t& begin, std::size_t& end,
                                   std::int32_t& token) const {
  if (empty()) return false;
  const auto* s = reinterpret_cast<const std::uint8_t*>(text.data());
  for (std::size_t p = from; p < text.size(); ++p) {
    if (!first_[s[p]]) continue;
    std::int32_t node = 0, best = -1;
    std::size_t best_end = 0;
    for (std::size_t q = p; q < text.size(); ++q) {
      std::int32_t next = -1;
      for (const auto& [kb, child] : nodes_[node].kids)
        if (kb == s[q]) {
          next = child;
          break;
        }
      if (next < 0) break;
      node = next;
      if (nodes_[node].token >= 0) {
        best = nodes_[node].token;
        best_end = q + 1;
      }
    }
    if (best >= 0) {
      begin = p;
      end = best_end;
      token = best;
      return true;
    }
  }
  return false;
}

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;  // the library ignores empty tokens
    (tokens_[i].normalized ? normalized_ : raw_).add(tokens_[i].content, static_cast<std::int32_t>(i));
  }
}

// AddedVocabulary::find_matches on `text`, appending segments shifted by `offset`.
void AddedTokenMatcher::find_matches(std::string_view text, const Trie& trie, bool special_as_text,
                                     std::size_t offset, std::vector<TextSegment>& out) const {
  std::size_t cursor = 0, from = 0, begin, end;
  std::int32_t index;
  while (from < text.size() && trie.next(text, from, begin, end, index)) {
    from = end;  // the scan continues after this match whether it is kept or not
    const AddedToken& tok = tokens_[index];
    if (special_as_text && tok.special) continue;
    if (tok.single_word) {
      std::size_t b;
      const bool word_before = begin > 0 && is_word_char(last_char(text, begin, b));
      const bool word_after = end < text.size() && is_word_char(first_char(text, end, b));
      if (word_before || word_after) continue;
    }
    if (tok.lstrip) begin = std::max(trailing_space_start(text, begin), cursor);
    if (tok.rstrip) end = leading_space_end(text, end);
    if (cursor < begin) out.push_back(TextSegment{offset + cursor, offset + begin, -1});
    out.push_back(TextSegment{offset + begin, offset + end, tok.id});
    cursor = end;
  }
  if (cursor < text.size()) out.push_back(TextSegment{offset + cursor, offset + text.size(), -1});
}

void AddedTokenMatcher::split(std::string_view text, bool special_as_text, std::vector<TextSegment>& out) const {
  if (text.empty()) return;
  if (normalized_.empty()) {
    find_matches(text, raw_, special_as_text, 0, out);
    return;
  }
  std::vector<TextSegment> first;
  find_matches(text, raw_, special_as_text, 0, first);
  for (const TextSegment& s : first) {
    if (s.id >= 0) out.push_back(s);
    else find_matches(text.substr(s.begin, s.end - s.begin), normalized_, special_as_text, s.begin, out);
  }
}

}  // namespace dsv4
