#pragma once
// The character classes the DeepSeek pre-tokenizer regexes test (\p{L}, \p{M}, \p{N}, \p{P},
// \p{S}, \s, [\r\n] and the CJK/kana ranges), as one byte of flags per code point.
//
// Pinned Unicode version: 16.0. That is the version of the tables of the regex engine inside the
// Hugging Face `tokenizers` library 0.23.2 (measured: tests/text/unicode_classes_test.cc probes
// every one of the 1,112,064 scalar values through the library and compares). The properties
// come from ICU (General_Category, White_Space), Debian 12's ICU 72.1 being Unicode 15.0; the
// 5,812 code points that Unicode 15.1 and 16.0 assigned are added from a table (their general
// category group, from the Unicode 16.0 Character Database), and a code point that a newer ICU
// reports as assigned after 16.0 is treated as unassigned. So the classes are Unicode 16.0's
// whatever ICU is linked, and equal the reference's for every code point.
#include <cstdint>
#include <string>

namespace dsv4 {

// Flags of unicode_class(). General_Category groups are disjoint, so at most one of L/M/N/P/S
// is set; White_Space characters are in none of them except via their own category (Zs, Cc...).
enum UnicodeClassFlag : std::uint8_t {
  kClassLetter = 1,       // \p{L}: Lu Ll Lt Lm Lo
  kClassMark = 2,         // \p{M}: Mn Mc Me
  kClassNumber = 4,       // \p{N}: Nd Nl No
  kClassPunct = 8,        // \p{P}: Pc Pd Ps Pe Pi Pf Po
  kClassSymbol = 16,      // \p{S}: Sm Sc Sk So
  kClassSpace = 32,       // \s: White_Space
  kClassCrLf = 64,        // [\r\n]
  kClassCjk = 128,        // [一-龥぀-ゟ゠-ヿ]: U+4E00..U+9FA5, U+3040..U+30FF
};

// The lookup table behind unicode_class(), exposed so the scanners can inline the lookup.
// Two levels: blocks of 128 code points, identical blocks shared.
struct UnicodeClassTable {
  const std::uint16_t* block_of;  // [0x110000 / 128]: block number of each 128-code-point range
  const std::uint8_t* flags;      // [blocks * 128]
  std::uint8_t ascii[128];        // the first block, for the ASCII fast path
};

// Built once (thread-safe static initialisation) from ICU and the 16.0 supplement.
const UnicodeClassTable& unicode_class_table();

// Flags of code point c (0 for c > U+10FFFF and for surrogates).
inline std::uint8_t unicode_class(const UnicodeClassTable& t, char32_t c) {
  if (c < 0x80) return t.ascii[c];
  if (c > 0x10FFFF) return 0;
  return t.flags[(static_cast<std::uint32_t>(t.block_of[c >> 7]) << 7) | (c & 0x7F)];
}
inline std::uint8_t unicode_class(char32_t c) { return unicode_class(unicode_class_table(), c); }

// "16.0": the Unicode version the classes follow.
std::string pretokenizer_unicode_version();
// The Unicode version of the ICU linked at build time (U_UNICODE_VERSION; "15.0" for ICU 72).
std::string icu_unicode_version();

}  // namespace dsv4
