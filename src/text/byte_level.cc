#include "text/byte_level.h"

#include "text/utf8.h"

namespace dsv4 {
namespace {

// Bytes that are printable Latin-1 and keep their own code point.
constexpr bool self_mapped(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> to_char{};
  // Inverse over U+0000..U+0143 (the highest alphabet character); -1 = not in the alphabet.
  std::array<std::int16_t, 0x144> to_byte{};
  // UTF-8 of each byte's character, for byte_level_encode.
  std::array<std::string, 256> utf8{};

  Tables() {
    to_byte.fill(-1);
    char32_t next = 0x100;  // the 68 other bytes take U+0100.. in byte order
    for (unsigned b = 0; b < 256; ++b) {
      const char32_t c = self_mapped(b) ? static_cast<char32_t>(b) : next++;
      to_char[b] = c;
      to_byte[c] = static_cast<std::int16_t>(b);
      utf8_append(utf8[b], c);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_level_char(std::uint8_t b) { return tables().to_char[b]; }

std::optional<std::uint8_t> byte_level_byte(char32_t c) {
  const auto& t = tables();
  if (c >= t.to_byte.size() || t.to_byte[c] < 0) return std::nullopt;
  return static_cast<std::uint8_t>(t.to_byte[c]);
}

std::string byte_level_encode(std::string_view bytes) {
  const auto& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) out += t.utf8[static_cast<std::uint8_t>(ch)];
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  std::size_t pos = 0;
  while (pos < token.size()) {
    char32_t c;
    if (!utf8_next(token, pos, c)) return std::nullopt;
    const auto b = byte_level_byte(c);
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
  }
  return out;
}

std::string byte_level_decode(std::string_view token) {
  if (auto bytes = byte_level_to_bytes(token)) return std::move(*bytes);
  return std::string(token);
}

}  // namespace dsv4
