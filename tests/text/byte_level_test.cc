// The GPT-2 ByteLevel alphabet (byte_level.h) and the strict UTF-8 rules it relies on. The
// expected characters come from the construction rule (printable Latin-1 maps to itself, the
// other 68 bytes go to U+0100.. in byte order); the whole-vocabulary comparison against the
// `tokenizers` library is in engram_token_map_test.cc.
#include "text/byte_level.h"

#include <gtest/gtest.h>

#include <set>

#include "text/utf8.h"

namespace dsv4 {
namespace {

TEST(ByteLevel, AlphabetIsABijectionOnto256Characters) {
  std::set<char32_t> chars;
  for (unsigned b = 0; b < 256; ++b) {
    const char32_t c = byte_level_char(static_cast<std::uint8_t>(b));
    chars.insert(c);
    ASSERT_EQ(byte_level_byte(c), std::optional<std::uint8_t>(static_cast<std::uint8_t>(b))) << b;
  }
  EXPECT_EQ(chars.size(), 256u);
  EXPECT_EQ(*chars.rbegin(), U'\u0143');  // 68 shifted bytes: U+0100 .. U+0143
}

TEST(ByteLevel, KnownCharacters) {
  EXPECT_EQ(byte_level_char(' '), U'\u0120');   // Ġ
  EXPECT_EQ(byte_level_char('\n'), U'\u010A');  // Ċ
  EXPECT_EQ(byte_level_char('\t'), U'\u0109');  // ĉ
  EXPECT_EQ(byte_level_char(0x00), U'\u0100');
  EXPECT_EQ(byte_level_char(0x7F), U'\u0121');  // DEL follows the 33 bytes 0x00..0x20
  EXPECT_EQ(byte_level_char(0xA0), U'\u0142');  // NBSP
  EXPECT_EQ(byte_level_char(0xAD), U'\u0143');  // soft hyphen, the last shifted byte
  EXPECT_EQ(byte_level_char('A'), U'A');
  EXPECT_EQ(byte_level_char(0xE9), U'\u00E9');  // é keeps its code point
  EXPECT_FALSE(byte_level_byte(U'\u0144').has_value());
  EXPECT_FALSE(byte_level_byte(U' ').has_value());   // a real space is not in the alphabet
  EXPECT_FALSE(byte_level_byte(U'\uFF5C').has_value());
}

TEST(ByteLevel, EncodeDecodeRoundTripsEveryByte) {
  std::string all;
  for (unsigned b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string enc = byte_level_encode(all);
  EXPECT_TRUE(utf8_valid(enc));
  EXPECT_EQ(byte_level_decode(enc), all);
  EXPECT_EQ(byte_level_to_bytes(enc), std::optional<std::string>(all));
}

TEST(ByteLevel, DecodeOfVocabularyStyleTokens) {
  EXPECT_EQ(byte_level_decode("\xC4\xA0the"), " the");          // "Ġthe"
  EXPECT_EQ(byte_level_decode("\xC4\x8A\xC4\x8A"), "\n\n");      // "ĊĊ"
  // "ä¸Ń" is the byte-level spelling of 中 (E4 B8 AD).
  EXPECT_EQ(byte_level_decode("\xC3\xA4\xC2\xB8\xC5\x83"), "\xE4\xB8\xAD");
  // Half of a character: the bytes are returned as they are (not valid UTF-8).
  EXPECT_EQ(byte_level_decode("\xC3\xA4\xC2\xB8"), "\xE4\xB8");
}

TEST(ByteLevel, TokensOutsideTheAlphabetPassThrough) {
  // Added tokens such as <｜User｜> contain U+FF5C, which is not an alphabet character, so the
  // whole token keeps its own bytes (the `tokenizers` ByteLevel decoder does the same).
  const std::string user = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>";
  EXPECT_EQ(byte_level_decode(user), user);
  EXPECT_FALSE(byte_level_to_bytes(user).has_value());
  // A plain ASCII added token is all alphabet characters and decodes to itself.
  EXPECT_EQ(byte_level_decode("<|EOT|>"), "<|EOT|>");
  // "Ġ" next to a non-alphabet space: no partial mapping, the token is kept whole.
  EXPECT_EQ(byte_level_decode("\xC4\xA0 x"), "\xC4\xA0 x");
  // Invalid UTF-8 in the token itself is kept as well.
  EXPECT_EQ(byte_level_decode("a\xFF"), "a\xFF");
  EXPECT_EQ(byte_level_decode(""), "");
}

TEST(Utf8, StrictValidation) {
  EXPECT_TRUE(utf8_valid(""));
  EXPECT_TRUE(utf8_valid("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"));
  EXPECT_TRUE(utf8_valid("\xEF\xBF\xBD"));      // U+FFFD itself is valid
  EXPECT_TRUE(utf8_valid("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_FALSE(utf8_valid("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(utf8_valid("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(utf8_valid("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(utf8_valid("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(utf8_valid("\xE4\xB8"));          // truncated
  EXPECT_FALSE(utf8_valid("\x80"));              // lone continuation
  EXPECT_FALSE(utf8_valid("\xF8\x88\x80\x80\x80"));
}

TEST(Utf8, AppendEncodesEveryLength) {
  std::string s;
  for (char32_t c : {U'\u0041', U'\u00E9', U'\u4E2D', U'\U0001F600'}) utf8_append(s, c);
  EXPECT_EQ(s, "A\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
  std::size_t pos = 0;
  char32_t c = 0;
  std::u32string back;
  while (utf8_next(s, pos, c)) back.push_back(c);
  EXPECT_EQ(back, U"A\u00E9\u4E2D\U0001F600");
  EXPECT_EQ(pos, s.size());
}

}  // namespace
}  // namespace dsv4
