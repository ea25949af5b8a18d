// The DeepSeek pre-tokenizer (pretokenizer.h). Two kinds of checks:
//   - hand-derived splits, each worked out from the regexes' semantics in the comment beside it;
//   - tricky strings compared piece by piece with the `tokenizers` library's own pre-tokenizer
//     (tokenizer_reference.js pretokenize), which also checks the ByteLevel mapping.
#include "text/pretokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "text/byte_level.h"
#include "text/tokenizer_vocab.h"
#include "text_test_data.h"
#include "tokenizer_test_util.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using nlohmann::json;
using Pieces = std::vector<std::string>;

Pieces pieces(std::string_view text) {
  Pieces out;
  for (std::string_view p : pretokenize(text)) out.emplace_back(p);
  return out;
}

TEST(Pretokenizer, EmptyTextHasNoPieces) { EXPECT_TRUE(pieces("").empty()); }

TEST(Pretokenizer, PiecesCoverTheText) {
  const std::string text = "Hello, world!  It's 2024年12月31日 — 中文テスト\n\n\tx  ";
  std::string joined;
  for (const std::string& p : pieces(text)) {
    EXPECT_FALSE(p.empty());
    joined += p;
  }
  EXPECT_EQ(joined, text);
}

TEST(Pretokenizer, WordsTakeTheirLeadingSpace) {
  // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ : one optional non-letter, non-punctuation character
  // (here the space) before a letter run.
  EXPECT_EQ(pieces("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(pieces("\tfoo"), (Pieces{"\tfoo"}));          // a tab is such a character too
  EXPECT_EQ(pieces("\u3000foo"), (Pieces{"\u3000foo"}));  // and the ideographic space
  EXPECT_EQ(pieces("e\u0301t\u00e9"), (Pieces{"e\u0301t\u00e9"}));  // marks continue the run
}

TEST(Pretokenizer, WhitespaceBeforeNonSpaceKeepsOneForTheWord) {
  // \s+(?!\S): a run of spaces gives back its last space, which then starts the next word.
  EXPECT_EQ(pieces("a   b"), (Pieces{"a", "  ", " b"}));
  // At the end of the string (?!\S) holds for the whole run.
  EXPECT_EQ(pieces("a   "), (Pieces{"a", "   "}));
  // A single space before a non-letter is \s+ (the last alternative).
  EXPECT_EQ(pieces("a 1"), (Pieces{"a", " ", "1"}));
  // The digit split isolates "123456" first, so the two spaces end their own string and stay
  // together; the words then start with their space.
  EXPECT_EQ(pieces("Hello world  123456 foo"), (Pieces{"Hello", " world", "  ", "123", "456", " foo"}));
}

TEST(Pretokenizer, LineBreaksEndAtTheLastNewline) {
  // \s*[\r\n]+ : \s* backtracks to the last CR/LF of the whitespace run.
  EXPECT_EQ(pieces("a\n\nb"), (Pieces{"a", "\n\n", "b"}));
  EXPECT_EQ(pieces("a \n b"), (Pieces{"a", " \n", " b"}));
  EXPECT_EQ(pieces("a\r\n\r\n  cd"), (Pieces{"a", "\r\n\r\n", " ", " cd"}));
  EXPECT_EQ(pieces("a  \n\t\nb"), (Pieces{"a", "  \n\t\n", "b"}));
}

TEST(Pretokenizer, DigitsInGroupsOfThree) {
  // \p{N}{1,3}, Isolated: every run of digits is cut into threes from the left.
  const std::string digits = "1234567890";
  for (std::size_t n = 1; n <= 10; ++n) {
    const std::string run = digits.substr(0, n);
    Pieces want;
    for (std::size_t i = 0; i < n; i += 3) want.push_back(run.substr(i, 3));
    EXPECT_EQ(pieces(run), want) << n;
    Pieces framed = want;
    framed.insert(framed.begin(), "x");
    framed.push_back("y");
    EXPECT_EQ(pieces(std::string("x").append(run).append("y")), framed) << n;
  }
  // Other numerals are \p{N} too: Arabic-Indic digits, superscripts, fractions, Roman numerals.
  EXPECT_EQ(pieces("\u0661\u0662\u0663\u0664"), (Pieces{"\u0661\u0662\u0663", "\u0664"}));
  EXPECT_EQ(pieces("x\u00b2\u00bd\u216b\u2460"), (Pieces{"x", "\u00b2\u00bd\u216b", "\u2460"}));
}

TEST(Pretokenizer, CjkAndKanaRunsAreTheirOwnStrings) {
  // [一-龥぀-ゟ゠-ヿ]+ isolates runs; the main pattern then splits them further on punctuation
  // (the katakana middle dot U+30FB is \p{P}).
  EXPECT_EQ(pieces("中文テスト・日本"), (Pieces{"中文テスト", "・", "日本"}));
  // A space before CJK is not part of the run, and the run's end is the end of its string, so
  // the space is a piece of its own.
  EXPECT_EQ(pieces("a 中文"), (Pieces{"a", " ", "中文"}));
  // Outside the ranges (U+9FA6.., halfwidth katakana) letters follow the main pattern.
  EXPECT_EQ(pieces("中\u9fa6"), (Pieces{"中", "\u9fa6"}));
  EXPECT_EQ(pieces("a\uff83\uff7d\uff84"), (Pieces{"a\uff83\uff7d\uff84"}));
  EXPECT_EQ(pieces("2024年12月"), (Pieces{"202", "4", "年", "12", "月"}));
}

TEST(Pretokenizer, PunctuationRuns) {
  // [ASCII punctuation][A-Za-z]+ comes first: ".foo", "'s"...
  EXPECT_EQ(pieces("it's"), (Pieces{"it", "'s"}));
  EXPECT_EQ(pieces(".foo"), (Pieces{".foo"}));
  // ...but a space before punctuation makes " ?[\p{P}\p{S}]+" match first, one position earlier.
  EXPECT_EQ(pieces(" .foo"), (Pieces{" .", "foo"}));
  EXPECT_EQ(pieces("..foo"), (Pieces{"..", "foo"}));
  // Punctuation runs take the CR/LF after them.
  EXPECT_EQ(pieces("?!\r\n\nx"), (Pieces{"?!\r\n\n", "x"}));
  // Only ASCII letters continue the first alternative.
  EXPECT_EQ(pieces(".fooé"), (Pieces{".foo", "é"}));
}

TEST(Pretokenizer, CharactersNoAlternativeMatchesStayInTheGap) {
  // A ZWJ (Cf) between two emoji (So): nothing matches at the ZWJ, so it is a piece alone.
  EXPECT_EQ(pieces("\U0001F468\u200D\U0001F469"), (Pieces{"\U0001F468", "\u200D", "\U0001F469"}));
  // Before a letter the same ZWJ is the optional first character of the word.
  EXPECT_EQ(pieces("x\u200Dy"), (Pieces{"x", "\u200Dy"}));
  // U+001C is not White_Space: it starts the word after it, unlike NBSP and NEL.
  EXPECT_EQ(pieces("\u00a0\u0085\u001cx"), (Pieces{"\u00a0", "\u0085", "\u001cx"}));
}

TEST(Pretokenizer, RejectsOtherPreTokenizers) {
  std::string path;
  ASSERT_TRUE(test::test_data_file("tokenizer.json", path));
  const json doc = read_tokenizer_json(path);
  const json& good = doc.at("pre_tokenizer");
  EXPECT_NO_THROW(check_deepseek_pretokenizer(good, "t.json"));

  auto expect_error = [](const json& pre, const std::string& needle) {
    try {
      check_deepseek_pretokenizer(pre, "t.json");
      ADD_FAILURE() << "accepted " << pre.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("t.json"), std::string::npos) << e.what();
    }
  };
  expect_error(json(), "pre_tokenizer is missing");
  expect_error(json{{"type", "Whitespace"}}, "pre_tokenizer.type is \"Whitespace\"");
  json p = good;
  p["pretokenizers"][2]["pattern"]["Regex"] = "\\s+";
  expect_error(p, "pre_tokenizer.pretokenizers[2].pattern.Regex");
  p = good;
  p["pretokenizers"][0]["behavior"] = "Removed";
  expect_error(p, "behavior");
  p = good;
  p["pretokenizers"][1]["invert"] = true;
  expect_error(p, "invert");
  p = good;
  p["pretokenizers"][3]["add_prefix_space"] = true;
  expect_error(p, "add_prefix_space");
  p = good;
  p["pretokenizers"].erase(1);
  expect_error(p, "3 steps");
  p = good;
  p["pretokenizers"][0]["type"] = "Digits";
  expect_error(p, "expected \"Split\"");
}

// Strings whose pieces are compared with the library's pre-tokenizer.
std::vector<std::string> tricky_strings() {
  std::vector<std::string> s = {
      "Hello world", "  leading", "trailing  ", "a  b", "a\n\nb", "a \n b", "\r\n\r\n", "\r", "x\t\ty", " \t \n",
      "abc123def", "١٢٣٤٥", "²³¹½", "中文テスト・日本", "ﾃｽﾄ", "が\u3099ぱ", "中1文", ".foo", " .foo", "..foo", "'s", "don't",
      "$100", "a—b", "«quoted»", "😀😀", "👨‍👩‍👧‍👦", "🏳️‍🌈 flag", "e\u0301", "\u0301a", " \u0301", "1\u0301", "x\u00a0y",
      "x\u3000y", "x\u0085y", "\u001c\u001d\u001e\u001fz", "foo\u200Dbar", "\u200B\u200B", "\ufeffBOM",
      "\U00010D4A\U00010D4B garay", "\U00011F04 kawi", "\U0002EBF0\U0002EBF1", "\U00011DB0 new in 17", "x\u2028y\u2029z",
      "\t.", " ?!\n\n", "?!\r\n", "#include <vector>", "    return x;\n", "a_b-c.d", "ﬁ ligature", "İstanbul",
      "Ⅻ chapters", "①②③", "〇一二", "\u0000nul", "\u007fdel", "\U0010FFFF", "\uFFFE\uFFFF", "\U000E0067 tag",
      "🇯🇵🇺🇸", "1️⃣", std::string("ab").append(300, ' ').append("c"), std::string(100, '\n') + "x", std::string("a").append(500, 'b'),
  };
  for (int n = 1; n <= 10; ++n) s.push_back(std::string("x").append(std::string("1234567890").substr(0, n)).append(" y"));
  return s;
}

TEST(Pretokenizer, PiecesMatchTheTokenizersLibrary) {
  std::string tok;
  ASSERT_TRUE(test::test_data_file("tokenizer.json", tok));
  const std::vector<std::string> docs = tricky_strings();
  test::TempFile corpus("docs"), out("pieces");
  test::write_docs(corpus.path(), docs);
  json summary;
  ASSERT_TRUE(test::run_reference("pretokenize --tokenizer " + test::shell_quote(tok) + " --corpus " +
                                      test::shell_quote(corpus.path()) + " --out " + test::shell_quote(out.path()),
                                  summary));
  const json ref = json::parse(test::read_file(out.path()));
  ASSERT_EQ(ref.size(), docs.size());
  for (std::size_t d = 0; d < docs.size(); ++d) {
    Pieces ours;
    for (std::string_view p : pretokenize(docs[d])) ours.push_back(byte_level_encode(p));
    EXPECT_EQ(ours, ref[d].get<Pieces>()) << "text " << test::show_text(docs[d]);
  }
}

}  // namespace
}  // namespace dsv4
