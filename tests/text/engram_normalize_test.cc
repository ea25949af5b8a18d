// engram_normalize on hand-picked inputs. Each expected value is derived from the Unicode rules
// of the steps in spec §8.2 (NFKC, NFD, drop General_Category M, lowercase, collapse
// [ \t\r\n]+, protect a lone " ", strip White_Space) and, where the `tokenizers` library departs
// from Python's str methods, from that library's behaviour (engram_token_map.h explains each).
#include <gtest/gtest.h>

#include "text/byte_level.h"
#include "text/engram_token_map.h"
#include "text/tokenizer_vocab.h"
#include "util/error.h"

namespace dsv4 {
namespace {

std::string norm(std::string_view s) { return engram_normalize(s); }

TEST(EngramNormalize, CompatibilityFormsFoldToAscii) {
  EXPECT_EQ(norm("ＨＥＬＬＯ"), "hello");       // fullwidth Latin: NFKC <wide> -> ASCII
  EXPECT_EQ(norm("１２３"), "123");
  EXPECT_EQ(norm("ﬁle"), "file");               // U+FB01 ligature: <compat> f i
  EXPECT_EQ(norm("①"), "1");                    // <circle>
  EXPECT_EQ(norm("Ⅻ"), "xii");                  // U+216B <compat> X I I, then lowercase
  EXPECT_EQ(norm("x²"), "x2");                  // <super>
  EXPECT_EQ(norm("<｜User｜>"), "<|user|>");    // U+FF5C <wide> '|'
  EXPECT_EQ(norm("▁"), "▁");                    // U+2581 has no decomposition
  EXPECT_EQ(norm("Ω"), "ω");                    // U+2126 OHM: canonical singleton -> U+03A9
}

TEST(EngramNormalize, AccentsAndMarksAreRemoved) {
  EXPECT_EQ(norm("Café"), "cafe");              // U+00E9 -> e + U+0301 (Mn), dropped
  EXPECT_EQ(norm("Cafe\xCC\x81"), "cafe");      // already decomposed
  EXPECT_EQ(norm("Ångström"), "angstrom");
  EXPECT_EQ(norm("İstanbul"), "istanbul");      // NFD: I + U+0307, the dot goes before lowercasing
  EXPECT_EQ(norm("a\xE2\x83\x9D"), "a");        // U+20DD COMBINING ENCLOSING CIRCLE (Me)
  EXPECT_EQ(norm("\xE0\xA4\x95\xE0\xA4\xBE"), "\xE0\xA4\x95");  // क + U+093E VOWEL SIGN AA (Mc)
  // नमस्ते: virama U+094D and vowel sign U+0947 are Mn; the consonants stay.
  EXPECT_EQ(norm("नमस्ते"), "नमसत");
  // Halfwidth ｶﾞ: NFKC composes ガ, NFD splits it into カ + U+3099 (Mn), which is dropped.
  EXPECT_EQ(norm("ｶﾞ"), "カ");
}

TEST(EngramNormalize, CjkAndHangul) {
  EXPECT_EQ(norm("中文"), "中文");
  EXPECT_EQ(norm("日本語のテキスト"), "日本語のテキスト");
  // A precomposed syllable ends in NFD: conjoining jamo are letters (Lo), not marks, so they stay
  // decomposed: 한 -> U+1112 U+1161 U+11AB.
  EXPECT_EQ(norm("한"), "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB");
}

TEST(EngramNormalize, Lowercase) {
  EXPECT_EQ(norm("The"), "the");
  EXPECT_EQ(norm("ΑΘΗΝΑ"), "αθηνα");
  EXPECT_EQ(norm("ẞ"), "ß");                    // U+1E9E -> U+00DF
  EXPECT_EQ(norm("ß"), "ß");                    // lowercasing never expands ß
  EXPECT_EQ(norm("ǅ"), "dz");                   // titlecase DŽ: NFKC D Z + caron, caron dropped
  // Final sigma: the `tokenizers` Lowercase maps each character alone, so a word-final Σ becomes
  // σ (Python's str.lower() and JavaScript's toLowerCase() would give ς). A ς already in the text
  // is kept.
  EXPECT_EQ(norm("ΟΔΟΣ"), "οδοσ");
  EXPECT_EQ(norm("Σ"), "σ");
  EXPECT_EQ(norm("οδος"), "οδος");
}

TEST(EngramNormalize, WhitespaceRuns) {
  EXPECT_EQ(norm("a  \t\n b"), "a b");            // one run -> one space
  EXPECT_EQ(norm("a\r\n\r\nb"), "a b");
  EXPECT_EQ(norm("\t\tfoo\r\n"), "foo");          // " foo " then strip
  EXPECT_EQ(norm(" the"), "the");                 // the usual leading-space token
  EXPECT_EQ(norm("a\xC2\xA0" "b"), "a b");        // NBSP: NFKC -> U+0020, then it is a space
  EXPECT_EQ(norm("a\xE3\x80\x80\xE3\x80\x80" "b"), "a b");  // two ideographic spaces -> two spaces -> one
}

TEST(EngramNormalize, SingleSpaceSurvives) {
  // A text that collapses to exactly " " is protected by U+E000 from Strip and comes back as " ".
  EXPECT_EQ(norm(" "), " ");
  EXPECT_EQ(norm("  "), " ");
  EXPECT_EQ(norm("  \t\n"), " ");
  EXPECT_EQ(norm("\n"), " ");
  EXPECT_EQ(norm("\xC2\xA0"), " ");               // NBSP -> " "
  // A U+E000 in the input is also turned into a space by the last step, after Strip.
  EXPECT_EQ(norm("\xEE\x80\x80" "a"), " a");
}

TEST(EngramNormalize, StripUsesUnicodeWhiteSpace) {
  // White_Space characters that are not in [ \t\r\n]: VT, FF, NEL, LS, PS, OGHAM SPACE MARK.
  EXPECT_EQ(norm("\x0b\x0c" "a\xC2\x85\xE2\x80\xA8"), "a");
  EXPECT_EQ(norm("\xE1\x9A\x80" "a\xE2\x80\xA9"), "a");
  // Inside the text they stay (only [ \t\r\n] runs are collapsed).
  EXPECT_EQ(norm("a\x0b" "b"), "a\x0b" "b");
  // U+001C..U+001F are not White_Space: kept (Python's str.strip() would remove them).
  EXPECT_EQ(norm("\x1c" "a\x1f"), "\x1c" "a\x1f");
  // U+FEFF and U+200B are not White_Space either.
  EXPECT_EQ(norm("\xEF\xBB\xBF" "a"), "\xEF\xBB\xBF" "a");
  EXPECT_EQ(norm("\xE2\x80\x8B" "a"), "\xE2\x80\x8B" "a");
}

TEST(EngramNormalize, EmptyResults) {
  EXPECT_EQ(norm(""), "");
  EXPECT_EQ(norm("\xCC\x81"), "");                // a lone combining acute
  EXPECT_EQ(norm("\x0b"), "");                    // only White_Space that is not collapsed
}

TEST(EngramNormalize, Unicode90Tables) {
  // NFKC/NFD/StripAccents follow Unicode 9.0 (see engram_token_map.h). A mark assigned in 9.0 is
  // dropped; one assigned in 10.0 is kept, and so is a 15.0 letter with a compatibility
  // decomposition.
  EXPECT_EQ(engram_normalization_unicode_version(), "9.0");
  EXPECT_EQ(norm("a\xE0\xA3\x94"), "a");                          // U+08D4 (9.0, Mn)
  EXPECT_EQ(norm("a\xE0\xB4\x80"), "a\xE0\xB4\x80");              // U+0D00 (10.0, Mn)
  EXPECT_EQ(norm("\xF0\x9E\x80\xB0"), "\xF0\x9E\x80\xB0");        // U+1E030 (15.0) <super> U+0430
  EXPECT_EQ(norm("\xF0\x9F\xAF\xB0"), "\xF0\x9F\xAF\xB0");        // U+1FBF0 (13.0) <font> '0'
  EXPECT_EQ(norm("\xF0\x9F\x85\xAA"), "mc");                      // U+1F16A (6.1) <super> M C
}

TEST(EngramNormalize, RejectsInvalidUtf8) {
  EXPECT_THROW(norm("a\xFF"), Error);
  EXPECT_THROW(norm("\xE4\xB8"), Error);
}

TEST(EngramNormalize, UnicodeVersionIsReported) {
  const std::string v = unicode_version();
  EXPECT_FALSE(v.empty());
  EXPECT_NE(v.find('.'), std::string::npos) << v;
}

// The key rules of §8.2 on a tiny vocabulary built by hand.
TEST(EngramTokenKey, KeyRules) {
  TokenizerVocab v;
  auto add = [&](const std::string& tok) {
    v.id_to_token.push_back(tok);
    v.is_added.push_back(0);
    v.is_special.push_back(0);
  };
  add(byte_level_encode(" The"));      // 0: "ĠThe"
  add(byte_level_encode("the"));       // 1
  add(byte_level_encode("\xE4\xB8"));  // 2: two bytes of 中, a partial character
  add(byte_level_encode("\xCC\x81"));  // 3: a lone U+0301; normalizes to ""
  add(byte_level_encode("   "));       // 4: "ĠĠĠ"
  add("<｜User｜>");                   // 5: added token, passes the decoder unchanged
  add(byte_level_encode("\xEF\xBF\xBD"));  // 6: a whole, valid U+FFFD
  EXPECT_EQ(engram_token_key(v, 0), "the");
  EXPECT_EQ(engram_token_key(v, 1), "the");
  EXPECT_EQ(engram_token_key(v, 2), v.id_to_token[2]);  // raw token string, not the bytes
  EXPECT_EQ(engram_token_key(v, 3), "\xCC\x81");        // normalized "" -> the decoded text
  EXPECT_EQ(engram_token_key(v, 4), " ");
  EXPECT_EQ(engram_token_key(v, 5), "<|user|>");
  EXPECT_EQ(engram_token_key(v, 6), v.id_to_token[6]);  // contains U+FFFD -> raw token
  EXPECT_THROW(engram_token_key(v, 7), Error);

  const EngramTokenMap m = build_engram_token_map(v);
  EXPECT_EQ(m.compressed_id, (std::vector<std::int32_t>{0, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(m.compressed_vocab_size, 6);
  EXPECT_EQ(m.pad_compressed(1), 0);
  EXPECT_EQ(m.lookup(6), 5);
  EXPECT_THROW(m.lookup(7), Error);
  EXPECT_THROW(m.lookup(-1), Error);
  EXPECT_THROW(m.pad_compressed(100), Error);
}

}  // namespace
}  // namespace dsv4
