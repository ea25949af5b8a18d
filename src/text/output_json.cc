#include "text/output_json.h"

#include <cstdint>

#include <nlohmann/json.hpp>

#include "text/utf8.h"

namespace dsv4 {

namespace {

// Length of the maximal ill-formed subpart at s[i] (which is not a well-formed character): the
// lead byte plus the continuation bytes that still fit it, or 1 for a byte that is no lead.
// One U+FFFD replaces each such subpart, the rule of String::from_utf8_lossy and WHATWG.
std::size_t ill_formed_length(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<std::uint8_t>(s[i]);
  std::size_t need;
  std::uint8_t lo = 0x80, hi = 0xBF;
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
    return 1;
  }
  std::size_t n = 1;
  while (n < need && i + n < s.size()) {
    const auto b = static_cast<std::uint8_t>(s[i + n]);
    if (n == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
    ++n;
  }
  return n;
}

}  // namespace

void append_json_string_body(std::string& out, std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    std::size_t next = i;
    char32_t cp;
    if (utf8_next(bytes, next, cp)) {
      out.append(bytes.substr(i, next - i));
      i = next;
    } else {
      out += "\xEF\xBF\xBD";
      i += ill_formed_length(bytes, i);
    }
  }
}

std::string json_quote(std::string_view bytes) {
  std::string out = "\"";
  append_json_string_body(out, bytes);
  out += '"';
  return out;
}

bool is_json_text(std::string_view text) {
  // nlohmann's lexer takes a NUL byte for the end of the input ("2\0junk" would pass). A raw NUL
  // is never valid JSON, inside a string or out, so reject it first.
  if (text.find('\0') != std::string_view::npos) return false;
  return nlohmann::json::accept(text.begin(), text.end());
}

std::string_view trim_json_space(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r";
  const std::size_t b = text.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  const std::size_t e = text.find_last_not_of(kSpace);
  return text.substr(b, e - b + 1);
}

bool append_json_typed_value(std::string& out, std::string_view raw) {
  const std::string_view trimmed = trim_json_space(raw);
  if (!trimmed.empty() && is_json_text(trimmed)) {
    out.append(trimmed);
    return true;
  }
  out += json_quote(raw);
  return false;
}

}  // namespace dsv4
