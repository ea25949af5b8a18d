// dsv4 tokenize / detokenize driven as a user does: the ids printed are the library's (and, for
// the sample sentence, the ids the Hugging Face `tokenizers` library gives: 19923 "Hello",
// 2058 " world", 128803 "<｜User｜>" from the file's added_tokens, 6366 "hi"), detokenize gives the
// text back byte for byte, -m DIR and stdin work, and bad input fails with a clear message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_test_util.h"
#include "text/tokenizer.h"

namespace dsv4 {
namespace {

using ::testing::HasSubstr;

std::string tokenizer_path() { return test::test_data_dir() + "/tokenizer.json"; }

::testing::AssertionResult have_tokenizer() {
  if (std::filesystem::is_regular_file(tokenizer_path())) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << tokenizer_path()
                                       << " is missing: run `bash tests/data/fetch_test_data.sh`";
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Writes `text` to a temporary file and returns a shell redirection from it.
class Stdin {
 public:
  explicit Stdin(const std::string& text) : dir_("tok_stdin") {
    std::ofstream(dir_ / "in", std::ios::binary) << text;
  }
  std::string redirect() const { return " < " + quote(dir_ / "in"); }

 private:
  test::TempDir dir_;
};

TEST(TokenizeCli, IdsOnlyAndRoundTrip) {
  ASSERT_TRUE(have_tokenizer());
  auto r = test::run_dsv4("tokenize --tokenizer " + quote(tokenizer_path()) + " --ids-only 'Hello world<｜User｜>hi'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "19923,2058,128803,6366\n");
  auto d = test::run_dsv4("detokenize --tokenizer " + quote(tokenizer_path()) + " 19923,2058,128803,6366");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, "Hello world<｜User｜>hi");
  // Space-separated ids, as several arguments.
  d = test::run_dsv4("detokenize --tokenizer " + quote(tokenizer_path()) + " 19923 2058");
  EXPECT_EQ(d.out, "Hello world");
}

TEST(TokenizeCli, StdinAndModelDirectory) {
  ASSERT_TRUE(have_tokenizer());
  test::TempDir model("tok_model");
  std::filesystem::copy_file(tokenizer_path(), model / "tokenizer.json");
  const std::string text = "line one\n\n  中文テスト 👨‍👩‍👧‍👦\ttabs  \n";
  Stdin in(text);
  auto r = test::run_dsv4("tokenize -m " + quote(model.str()) + " --ids-only -" + in.redirect());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tokenizer tok = Tokenizer::from_file(tokenizer_path());
  std::string want;
  for (std::int32_t id : tok.encode(text)) {
    if (!want.empty()) want += ",";
    want += std::to_string(id);
  }
  EXPECT_EQ(r.out, want + "\n");
  Stdin ids(r.out);
  auto d = test::run_dsv4("detokenize -m " + quote(model.str()) + " -" + ids.redirect());
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, text);
}

TEST(TokenizeCli, TableShowsTokensAndKinds) {
  ASSERT_TRUE(have_tokenizer());
  auto r = test::run_dsv4("tokenize --tokenizer " + quote(tokenizer_path()) +
                          " '<｜begin▁of▁sentence｜>Hi<｜User｜>\n中'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"<｜begin▁of▁sentence｜>\"  special"));
  EXPECT_THAT(r.out, HasSubstr("128803  \"<｜User｜>\"  added"));
  EXPECT_THAT(r.out, HasSubstr("\"\\n\""));
  EXPECT_THAT(r.out, HasSubstr("tokens, "));
  // --special-as-text: the BOS string is ordinary text, so no line is marked special.
  r = test::run_dsv4("tokenize --special-as-text --tokenizer " + quote(tokenizer_path()) + " '<｜begin▁of▁sentence｜>'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("special")));
  // Skipping special tokens when decoding.
  auto d = test::run_dsv4("detokenize --skip-special --tokenizer " + quote(tokenizer_path()) + " 0,19923,1");
  EXPECT_EQ(d.out, "Hello");
}

TEST(TokenizeCli, ErrorsAreClear) {
  ASSERT_TRUE(have_tokenizer());
  auto r = test::run_dsv4("tokenize --ids-only hello");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no tokenizer given: use -m DIR"));

  r = test::run_dsv4("detokenize --tokenizer " + quote(tokenizer_path()) + " 12,abc");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("'abc' is not a token id"));

  r = test::run_dsv4("detokenize --tokenizer " + quote(tokenizer_path()) + " 128815");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("token id 128815 is outside this tokenizer's 0..128814"));

  Stdin bad(std::string("ok \xFF no"));
  r = test::run_dsv4("tokenize --tokenizer " + quote(tokenizer_path()) + " -" + bad.redirect());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("not valid UTF-8 (ill-formed sequence at byte 3"));

  test::TempDir dir("tok_bad");
  std::ofstream(dir / "tokenizer.json") << "{\"model\": {\"type\": \"BPE\"";
  r = test::run_dsv4("tokenize -m " + quote(dir.str()) + " x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(dir / "tokenizer.json"));
  EXPECT_THAT(r.err, HasSubstr("not valid JSON"));
}

}  // namespace
}  // namespace dsv4
