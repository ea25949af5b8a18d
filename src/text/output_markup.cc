#include "text/output_markup.h"

#include <algorithm>
#include <cstdint>

namespace dsv4 {

const DsmlTags& dsml_tags(ChatProfile version) {
  // Spec §7.1: every space after "｜DSML｜" is real in V4.1; V4 had none and said "tool_calls".
  static const DsmlTags v41{"<｜DSML｜ calls>",  "</｜DSML｜ calls>",     "<｜DSML｜ invoke",
                            "</｜DSML｜ invoke>", "<｜DSML｜ parameter", "</｜DSML｜ parameter>"};
  static const DsmlTags v4{"<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>", "<｜DSML｜invoke",
                           "</｜DSML｜invoke>",    "<｜DSML｜parameter",    "</｜DSML｜parameter>"};
  return version == ChatProfile::V41 ? v41 : v4;
}

std::vector<std::string_view> all_markup(ChatProfile version) {
  const DsmlTags& t = dsml_tags(version);
  return {kThinkOpen,    kThinkClose,    kEndOfSentence, t.calls_open, t.calls_close,
          t.invoke_open, t.invoke_close, t.param_open,   t.param_close};
}

namespace {

bool is_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

}  // namespace

std::optional<std::vector<DsmlAttribute>> parse_dsml_attributes(std::string_view text) {
  std::vector<DsmlAttribute> out;
  std::size_t i = 0;
  for (;;) {
    const std::size_t space_begin = i;
    while (i < text.size() && is_markup_space(text[i])) ++i;
    if (i == text.size()) return out;
    if (i == space_begin) return std::nullopt;  // attributes must be separated by whitespace
    const std::size_t key_begin = i;
    while (i < text.size() && is_key_char(text[i])) ++i;
    if (i == key_begin || i + 1 >= text.size() || text[i] != '=' || text[i + 1] != '"')
      return std::nullopt;
    const std::string_view key = text.substr(key_begin, i - key_begin);
    i += 2;
    const std::size_t close = text.find('"', i);
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view value = text.substr(i, close - i);
    i = close + 1;
    for (const DsmlAttribute& a : out)
      if (a.key == key) return std::nullopt;
    out.push_back({key, value});
  }
}

std::optional<MarkerHit> find_first_marker(std::string_view text,
                                           std::span<const std::string_view> markers,
                                           std::size_t from) {
  // Visit only the positions holding the first byte of some marker ('<' for all of ours) and try
  // the markers there. The cost is linear in the bytes scanned, whatever the markers; a search
  // per marker would rescan the whole text for an absent marker at every step.
  char firsts[16];
  std::size_t nfirst = 0;
  for (std::string_view m : markers)
    if (std::string_view(firsts, nfirst).find(m[0]) == std::string_view::npos && nfirst < 16)
      firsts[nfirst++] = m[0];
  const std::string_view first_bytes(firsts, nfirst);
  for (std::size_t p = text.find_first_of(first_bytes, from); p != std::string_view::npos;
       p = text.find_first_of(first_bytes, p + 1)) {
    const std::string_view at = text.substr(p);
    for (std::size_t m = 0; m < markers.size(); ++m)
      if (at.starts_with(markers[m])) return MarkerHit{p, m};
  }
  return std::nullopt;
}

std::size_t partial_marker_suffix(std::string_view text,
                                  std::span<const std::string_view> markers) {
  std::size_t best = 0;
  for (std::string_view m : markers) {
    for (std::size_t len = std::min(m.size() - 1, text.size()); len > best; --len) {
      if (text.substr(text.size() - len) == m.substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

std::size_t incomplete_utf8_suffix(std::string_view text) {
  // Look back at most 3 bytes for the lead byte of the last sequence.
  const std::size_t n = text.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b0 = static_cast<std::uint8_t>(text[n - back]);
    if (b0 >= 0x80 && b0 <= 0xBF) continue;  // a continuation byte: keep looking for the lead
    std::size_t need;
    std::uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode Table 3-7)
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      need = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      need = 3;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      need = 4;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    } else {
      return 0;  // ASCII or a byte that never starts a sequence
    }
    if (back >= need) return 0;  // the sequence is complete (or over-long garbage): nothing held
    for (std::size_t i = 1; i < back; ++i) {
      const auto b = static_cast<std::uint8_t>(text[n - back + i]);
      if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
    }
    return back;
  }
  return 0;
}

}  // namespace dsv4
