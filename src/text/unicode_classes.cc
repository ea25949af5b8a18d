#include "text/unicode_classes.h"

#include <unicode/uchar.h>
#include <unicode/uversion.h>

#include <array>
#include <cstring>
#include <map>
#include <vector>

namespace dsv4 {
namespace {

constexpr const char* kPinnedUnicode = "16.0";
constexpr std::uint8_t kPinnedMajor = 16, kPinnedMinor = 0;

struct Assigned {
  char32_t first, last;
  std::uint8_t flag;
};

// The code points assigned in Unicode 15.1 and 16.0 (DerivedAge.txt) that fall in one of the
// five category groups, with that group (DerivedGeneralCategory.txt, Unicode 16.0). None of them
// is White_Space or in the CJK ranges. ICU 72 (Unicode 15.0) reports all of them as unassigned;
// a newer ICU agrees with this table. Cross-checked twice: against the regex engine of the
// `tokenizers` library (unicode_classes_test.cc) and against Node's ICU 78 (Unicode 17.0).
constexpr std::uint8_t L = kClassLetter, M = kClassMark, N = kClassNumber, P = kClassPunct, S = kClassSymbol;
constexpr Assigned kUnicode16Additions[] = {
    {0x0897, 0x0897, M}, {0x1B4E, 0x1B4F, P}, {0x1B7F, 0x1B7F, P}, {0x1C89, 0x1C8A, L},
    {0x2427, 0x2429, S}, {0x2FFC, 0x2FFF, S}, {0x31E4, 0x31E5, S}, {0x31EF, 0x31EF, S},
    {0xA7CB, 0xA7CD, L}, {0xA7DA, 0xA7DC, L}, {0x105C0, 0x105F3, L}, {0x10D40, 0x10D49, N},
    {0x10D4A, 0x10D65, L}, {0x10D69, 0x10D6D, M}, {0x10D6E, 0x10D6E, P}, {0x10D6F, 0x10D85, L},
    {0x10D8E, 0x10D8F, S}, {0x10EC2, 0x10EC4, L}, {0x10EFC, 0x10EFC, M}, {0x11380, 0x11389, L},
    {0x1138B, 0x1138B, L}, {0x1138E, 0x1138E, L}, {0x11390, 0x113B5, L}, {0x113B7, 0x113B7, L},
    {0x113B8, 0x113C0, M}, {0x113C2, 0x113C2, M}, {0x113C5, 0x113C5, M}, {0x113C7, 0x113CA, M},
    {0x113CC, 0x113D0, M}, {0x113D1, 0x113D1, L}, {0x113D2, 0x113D2, M}, {0x113D3, 0x113D3, L},
    {0x113D4, 0x113D5, P}, {0x113D7, 0x113D8, P}, {0x113E1, 0x113E2, M}, {0x116D0, 0x116E3, N},
    {0x11BC0, 0x11BE0, L}, {0x11BE1, 0x11BE1, P}, {0x11BF0, 0x11BF9, N}, {0x11F5A, 0x11F5A, M},
    {0x13460, 0x143FA, L}, {0x16100, 0x1611D, L}, {0x1611E, 0x1612F, M}, {0x16130, 0x16139, N},
    {0x16D40, 0x16D6C, L}, {0x16D6D, 0x16D6F, P}, {0x16D70, 0x16D79, N}, {0x18CFF, 0x18CFF, L},
    {0x1CC00, 0x1CCEF, S}, {0x1CCF0, 0x1CCF9, N}, {0x1CD00, 0x1CEB3, S}, {0x1E5D0, 0x1E5ED, L},
    {0x1E5EE, 0x1E5EF, M}, {0x1E5F0, 0x1E5F0, L}, {0x1E5F1, 0x1E5FA, N}, {0x1E5FF, 0x1E5FF, P},
    {0x1F8B2, 0x1F8BB, S}, {0x1F8C0, 0x1F8C1, S}, {0x1FA89, 0x1FA89, S}, {0x1FA8F, 0x1FA8F, S},
    {0x1FABE, 0x1FABE, S}, {0x1FAC6, 0x1FAC6, S}, {0x1FADC, 0x1FADC, S}, {0x1FADF, 0x1FADF, S},
    {0x1FAE9, 0x1FAE9, S}, {0x1FBCB, 0x1FBEF, S}, {0x2EBF0, 0x2EE5D, L},
};

// True if ICU says c was assigned in a Unicode version after the pinned one.
bool newer_than_pinned(char32_t c) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  return age[0] > kPinnedMajor || (age[0] == kPinnedMajor && age[1] > kPinnedMinor);
}

std::uint8_t icu_flags(char32_t c) {
  if (c >= 0xD800 && c <= 0xDFFF) return 0;  // surrogates never occur in valid UTF-8
  std::uint8_t f = 0;
  if (newer_than_pinned(c)) {
    // Unassigned in 16.0: category Cn, and not White_Space (no White_Space character was
    // added after 16.0 either; ICU would still report it, but the reference would not).
  } else {
    const std::uint32_t gc = U_MASK(u_charType(static_cast<UChar32>(c)));
    if (gc & U_GC_L_MASK) f |= kClassLetter;
    if (gc & U_GC_M_MASK) f |= kClassMark;
    if (gc & U_GC_N_MASK) f |= kClassNumber;
    if (gc & U_GC_P_MASK) f |= kClassPunct;
    if (gc & U_GC_S_MASK) f |= kClassSymbol;
    if (u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE)) f |= kClassSpace;
  }
  if (c == U'\r' || c == U'\n') f |= kClassCrLf;
  if ((c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x30FF)) f |= kClassCjk;
  return f;
}

class Table {
 public:
  Table() {
    std::vector<std::uint8_t> all(0x110000);
    for (char32_t c = 0; c < 0x110000; ++c) all[c] = icu_flags(c);
    for (const Assigned& a : kUnicode16Additions)
      for (char32_t c = a.first; c <= a.last; ++c)
        if ((all[c] & (L | M | N | P | S)) == 0) all[c] |= a.flag;  // an older ICU: unassigned

    // Share identical 128-code-point blocks (most of the planes are unassigned).
    std::map<std::array<std::uint8_t, 128>, std::uint16_t> seen;
    block_of_.resize(0x110000 / 128);
    for (std::size_t b = 0; b < block_of_.size(); ++b) {
      std::array<std::uint8_t, 128> blk;
      std::memcpy(blk.data(), &all[b * 128], 128);
      auto [it, fresh] = seen.emplace(blk, static_cast<std::uint16_t>(seen.size()));
      if (fresh) flags_.insert(flags_.end(), blk.begin(), blk.end());
      block_of_[b] = it->second;
    }
    table_.block_of = block_of_.data();
    table_.flags = flags_.data();
    std::memcpy(table_.ascii, all.data(), 128);
  }
  const UnicodeClassTable& get() const { return table_; }

 private:
  std::vector<std::uint16_t> block_of_;
  std::vector<std::uint8_t> flags_;
  UnicodeClassTable table_{};
};

}  // namespace

const UnicodeClassTable& unicode_class_table() {
  static const Table t;
  return t.get();
}

std::string pretokenizer_unicode_version() { return kPinnedUnicode; }

std::string icu_unicode_version() { return U_UNICODE_VERSION; }

}  // namespace dsv4
