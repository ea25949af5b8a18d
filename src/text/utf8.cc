#include "text/utf8.h"

#include <cstdint>

namespace dsv4 {

bool utf8_next(std::string_view s, std::size_t& pos, char32_t& out) {
  if (pos >= s.size()) return false;
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(s[i]); };
  const std::uint8_t b0 = byte(pos);
  if (b0 < 0x80) {
    out = b0;
    ++pos;
    return true;
  }
  // Lead byte -> sequence length and the allowed range of the second byte (Unicode Table 3-7),
  // which is what excludes overlongs, surrogates and values above U+10FFFF.
  std::size_t len;
  std::uint8_t lo = 0x80, hi = 0xBF;
  char32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return false;
  }
  if (s.size() - pos < len) return false;
  for (std::size_t i = 1; i < len; ++i) {
    const std::uint8_t b = byte(pos + i);
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return false;
    cp = (cp << 6) | (b & 0x3F);
  }
  out = cp;
  pos += len;
  return true;
}

bool utf8_valid(std::string_view s) {
  std::size_t pos = 0;
  char32_t c;
  while (pos < s.size()) {
    if (!utf8_next(s, pos, c)) return false;
  }
  return true;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace dsv4
