// The pre-tokenizer's character classes (unicode_classes.h) for every Unicode scalar value,
// against the regex engine of the `tokenizers` library: tokenizer_reference.js classes runs a
// Split pre-tokenizer per class (\p{L} \p{M} \p{N} \p{P} \p{S} \s) over a string holding all
// 1,112,064 scalar values, so the reference is the library's own tables (Unicode 16.0).
#include "text/unicode_classes.h"

#include <gtest/gtest.h>
#include <unicode/uchar.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "text_test_data.h"
#include "tokenizer_test_util.h"

namespace dsv4 {
namespace {

using nlohmann::json;

TEST(UnicodeClasses, FixedMembers) {
  EXPECT_EQ(unicode_class(U'a'), kClassLetter);
  EXPECT_EQ(unicode_class(U'\u0301'), kClassMark);
  EXPECT_EQ(unicode_class(U'7'), kClassNumber);
  EXPECT_EQ(unicode_class(U'!'), kClassPunct);
  EXPECT_EQ(unicode_class(U'+'), kClassSymbol);
  EXPECT_EQ(unicode_class(U' '), kClassSpace);
  EXPECT_EQ(unicode_class(U'\n'), kClassSpace | kClassCrLf);
  EXPECT_EQ(unicode_class(U'\r'), kClassSpace | kClassCrLf);
  EXPECT_EQ(unicode_class(U'\u001c'), 0);  // not White_Space (Rust and Oniguruma agree)
  EXPECT_EQ(unicode_class(U'中'), kClassLetter | kClassCjk);
  EXPECT_EQ(unicode_class(U'\u9fa5'), kClassLetter | kClassCjk);
  EXPECT_EQ(unicode_class(U'\u9fa6'), kClassLetter);  // past the pattern's 龥
  EXPECT_EQ(unicode_class(U'\u30fb'), kClassPunct | kClassCjk);
  EXPECT_EQ(unicode_class(U'\u3040'), kClassCjk);  // unassigned, inside the range
  EXPECT_EQ(unicode_class(U'\U00010D4A'), kClassLetter);  // Garay, Unicode 16.0
  EXPECT_EQ(unicode_class(U'\U0002EBF0'), kClassLetter);  // CJK Extension I, Unicode 15.1
  EXPECT_EQ(unicode_class(U'\U00011DB0'), 0);  // assigned in 17.0: not yet in the pinned tables
  EXPECT_EQ(unicode_class(char32_t{0x110000}), 0);
  EXPECT_EQ(pretokenizer_unicode_version(), "16.0");
}

TEST(UnicodeClasses, EveryCodePointMatchesTheTokenizersLibrary) {
  std::string tok;
  ASSERT_TRUE(test::test_data_file("tokenizer.json", tok));  // only to locate node_modules
  test::TempFile out("classes");
  json summary;
  ASSERT_TRUE(test::run_reference("classes --out " + test::shell_quote(out.path()), summary));
  std::vector<std::uint8_t> ref(0x110000, 0);
  for (const json& r : json::parse(test::read_file(out.path())))
    for (std::uint32_t c = r[0].get<std::uint32_t>(); c <= r[1].get<std::uint32_t>(); ++c) ref[c] = r[2].get<std::uint8_t>();

  std::size_t checked = 0, differ = 0, supplemented = 0;
  std::size_t per_class[6] = {};
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    ++checked;
    const std::uint8_t ours = unicode_class(c) & 0x3F;  // bits 0..5 are L M N P S \s, like the reference
    for (int b = 0; b < 6; ++b) per_class[b] += (ours >> b) & 1;
    if (ours != ref[c] && differ++ < 10)
      ADD_FAILURE() << "U+" << std::hex << static_cast<std::uint32_t>(c) << ": ours " << int(ours) << ", reference "
                    << int(ref[c]) << std::dec;
    if (u_charType(static_cast<UChar32>(c)) == U_UNASSIGNED && (ours & 0x1F) != 0) ++supplemented;
  }
  EXPECT_EQ(differ, 0u);
  EXPECT_EQ(checked, 1112064u);
  std::cout << "[unicode] " << checked << " scalar values, " << differ << " differ from tokenizers "
            << summary.value("tokenizers_version", "?") << "; L " << per_class[0] << ", M " << per_class[1] << ", N "
            << per_class[2] << ", P " << per_class[3] << ", S " << per_class[4] << ", \\s " << per_class[5]
            << "; pinned Unicode " << pretokenizer_unicode_version() << ", ICU " << icu_unicode_version() << " ("
            << supplemented << " code points unassigned in ICU taken from the Unicode 16.0 supplement)\n";
}

}  // namespace
}  // namespace dsv4
