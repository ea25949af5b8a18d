// The Tokenizer on the real DeepSeek files: known ids (from the files' own added_tokens and
// tokenizer_config.json), tricky strings compared with the `tokenizers` library, added-token
// options on a small synthetic tokenizer (also against the library), decode, lookups, the
// post-processor template, invalid input and concurrent use. The whole-corpus comparison is in
// tokenizer_corpus_test.cc, malformed files in tokenizer_json_test.cc.
#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "text_test_data.h"
#include "tokenizer_test_util.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using nlohmann::json;
using Ids = std::vector<std::int32_t>;

const std::string kBos = "<｜begin▁of▁sentence｜>", kEos = "<｜end▁of▁sentence｜>", kUser = "<｜User｜>",
                  kAssistant = "<｜Assistant｜>";

// Strings around added tokens and other edges; their ids must equal the library's.
std::vector<std::string> tricky_strings() {
  return {
      kUser, kUser + kAssistant, "a" + kUser + "b", " " + kUser + " ", "  " + kUser + "\n\n", "foo" + kEos + "bar",
      kBos + "Hello", "Hello" + kEos, kBos + kBos, "<｜User", "｜User｜>", "<" + kUser + ">", "<｜<｜User｜>｜>",
      "<|User|>", "<|EOT|>", "x<|EOT|>y", "<think>reasoning</think>answer", "｜DSML｜ calls", "<｜System｜>sys",
      "<｜place▁holder▁no▁799｜>", "<｜place▁holder▁no▁1000｜>", "<｜deepseek_image｜>", "text  <｜User｜>  text",
      "Hello world  123456 foo", "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890", "中文テスト・日本",
      "👨‍👩‍👧‍👦 family", "e\u0301\u0302 marks", " \t\r\n mixed \u00a0\u3000 spaces", "trailing   ", "",
      std::string(1000, 'a'), std::string(2000, ' ') + "x", std::string("a").append(3000, '\n'),
  };
}

void expect_reference_ids(const std::string& name, bool special_as_text) {
  const Tokenizer& tok = test::real_tokenizer(name);
  const std::vector<std::string> docs = tricky_strings();
  std::vector<Ids> ref;
  ASSERT_TRUE(test::reference_encode(name, docs, ref, special_as_text));
  ASSERT_EQ(ref.size(), docs.size());
  EncodeOptions opt;
  opt.special_tokens_as_text = special_as_text;
  for (std::size_t d = 0; d < docs.size(); ++d) {
    const Ids ours = tok.encode(docs[d], opt);
    EXPECT_EQ(ours, ref[d]) << name << (special_as_text ? " (special as text)" : "") << ": "
                            << test::show_text(docs[d]);
    EXPECT_EQ(tok.decode(ours), docs[d]);
  }
}

TEST(TokenizerReal, TrickyStringsMatchTheTokenizersLibrary) {
  for (const char* name : {"tokenizer.json", "tokenizer-v41.json"})
    for (bool special_as_text : {false, true}) expect_reference_ids(name, special_as_text);
}

TEST(TokenizerReal, KnownIdsAndLookups) {
  const Tokenizer& v3 = test::real_tokenizer("tokenizer.json");
  const Tokenizer& v41 = test::real_tokenizer("tokenizer-v41.json");
  // Sizes and ids stated in spec §12 / chat-encoding.md §1.
  EXPECT_EQ(v3.size(), 128815u);
  EXPECT_EQ(v41.size(), 129280u);
  EXPECT_EQ(v3.token_to_id(kBos), 0);
  EXPECT_EQ(v3.token_to_id(kEos), 1);
  EXPECT_EQ(v3.token_to_id(kUser), 128803);
  EXPECT_EQ(v41.token_to_id("<｜System｜>"), 128799);
  EXPECT_EQ(v41.token_to_id("<｜deepseek_image｜>"), 129264);
  EXPECT_EQ(v3.token_to_id("<｜System｜>"), std::nullopt);
  EXPECT_EQ(v3.id_to_token(128803), kUser);
  EXPECT_EQ(v3.token_to_id("Ġworld"), v3.encode(" world").at(0));  // vocabulary strings are ByteLevel
  EXPECT_EQ(v3.bos_id(), 0);  // from tokenizer_config.json beside the file
  EXPECT_EQ(v3.eos_id(), 1);
  EXPECT_TRUE(v3.is_special(0));
  EXPECT_FALSE(v3.is_special(128803));  // "<｜User｜>" is added but not special
  EXPECT_TRUE(v3.is_added(128803));
  EXPECT_FALSE(v41.is_special(128799));

  // Added tokens come out as one id wherever they are, even inside words.
  EXPECT_EQ(v3.encode(kUser), (Ids{128803}));
  EXPECT_EQ(v3.encode(kUser + kAssistant), (Ids{128803, 128804}));
  const Ids inside = v3.encode("foo" + kEos + "bar");
  EXPECT_EQ(inside, (Ids{v3.encode("foo")[0], 1, v3.encode("bar")[0]}));
  // No BOS is added: DeepSeek's post-processor is ByteLevel.
  EXPECT_EQ(v3.encode("Hello").size(), 1u);
  // V4.1's new tokens are plain text for V3.
  EXPECT_EQ(v41.encode("<think>"), (Ids{128821}));
  EXPECT_GT(v3.encode("<think>").size(), 1u);

  // special_tokens_as_text: special tokens become text, non-special added tokens stay tokens.
  EncodeOptions as_text;
  as_text.special_tokens_as_text = true;
  const Ids bos_text = v3.encode(kBos, as_text);
  EXPECT_GT(bos_text.size(), 1u);
  EXPECT_EQ(v3.decode(bos_text), kBos);
  EXPECT_EQ(v3.encode(kUser, as_text), (Ids{128803}));
  EXPECT_EQ(v41.encode("<｜System｜>", as_text), (Ids{128799}));
}

TEST(TokenizerReal, DecodeSkipsOnlySpecialTokens) {
  const Tokenizer& v41 = test::real_tokenizer("tokenizer-v41.json");
  const Ids ids = {0, 128799, v41.encode("sys")[0], 128803, v41.encode("hi")[0], 1, 2};
  EXPECT_EQ(v41.decode(ids), kBos + "<｜System｜>sys" + kUser + "hi" + kEos + "<｜▁pad▁｜>");
  EXPECT_EQ(v41.decode(ids, true), "<｜System｜>sys" + kUser + "hi");
  // A byte token alone is half a character: U+FFFD, as String::from_utf8_lossy gives.
  const Ids zh = v41.encode("中");
  std::string bytes;
  for (std::int32_t id : zh) bytes += std::string(v41.token_bytes(id));
  EXPECT_EQ(bytes, "中");
  const std::int32_t e4 = *v41.token_to_id(std::string("\u00e4"));  // the ByteLevel character of byte 0xE4
  EXPECT_EQ(v41.token_bytes(e4), "\xE4");
  EXPECT_EQ(v41.decode(Ids{e4}), "\uFFFD");
  EXPECT_EQ(v41.decode(Ids{e4, e4}), "\uFFFD\uFFFD");
  EXPECT_THROW(v41.decode(Ids{129280}), Error);  // past the tokenizer (spec §16.6)
  EXPECT_THROW(v41.decode(Ids{-1}), Error);
  EXPECT_THROW(v41.token_bytes(1 << 30), Error);
}

TEST(TokenizerReal, RejectsInvalidUtf8) {
  const Tokenizer& v3 = test::real_tokenizer("tokenizer.json");
  for (const std::string& bad : {std::string("\xFF"), std::string("ab\xC3"), std::string("\xED\xA0\x80"),
                                std::string("\xC0\xAF"), std::string("ok \xF4\x90\x80\x80")}) {
    try {
      v3.encode(bad);
      ADD_FAILURE() << "accepted " << test::show_text(bad);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(v3.encode(std::string("nul \0 inside", 12)));
}

TEST(TokenizerReal, ConcurrentEncodesAgree) {
  const Tokenizer& v3 = test::real_tokenizer("tokenizer.json");
  std::vector<std::string> docs;
  for (int i = 0; i < 200; ++i) docs.push_back("Document " + std::to_string(i) + ": 中文 " + std::string(i % 7, ' ') + "words");
  std::vector<Ids> serial;
  for (const std::string& d : docs) serial.push_back(v3.encode(d));
  std::vector<std::vector<Ids>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (const std::string& d : docs) got[t].push_back(v3.encode(d));
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(got[t], serial);
}

TEST(TokenizerReal, TemplatePostProcessorMatchesTheTokenizersLibrary) {
  // The V3 file with a TemplateProcessing post-processor that adds BOS (as Llama-style files do).
  std::string path;
  ASSERT_TRUE(test::test_data_file("tokenizer.json", path));
  json doc = read_tokenizer_json(path);
  doc["post_processor"] = json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<｜begin▁of▁sentence｜>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<｜end▁of▁sentence｜>", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {"<｜begin▁of▁sentence｜>": {"id": "<｜begin▁of▁sentence｜>", "ids": [0], "tokens": ["<｜begin▁of▁sentence｜>"]},
                         "<｜end▁of▁sentence｜>": {"id": "<｜end▁of▁sentence｜>", "ids": [1], "tokens": ["<｜end▁of▁sentence｜>"]}}})");
  test::TempFile template_file("template");
  const std::string& file = template_file.path();
  {
    std::ofstream out(file, std::ios::binary);
    out << doc.dump();
  }
  const Tokenizer tok = Tokenizer::from_json(doc, "template");
  const std::vector<std::string> docs = {"Hello", "", kUser + "hi"};
  test::TempFile corpus("docs"), ids_file("ids");
  test::write_docs(corpus.path(), docs);
  json summary;
  ASSERT_TRUE(test::run_reference("encode --tokenizer " + test::shell_quote(file) + " --corpus " +
                                      test::shell_quote(corpus.path()) + " --out " + test::shell_quote(ids_file.path()),
                                  summary));
  std::vector<Ids> ref;
  ASSERT_TRUE(test::read_reference_ids(ids_file.path(), ref));
  for (std::size_t d = 0; d < docs.size(); ++d) {
    EXPECT_EQ(tok.encode(docs[d]), ref[d]) << test::show_text(docs[d]);
    EncodeOptions plain;
    plain.add_special_tokens = false;
    const Ids without = tok.encode(docs[d], plain);
    ASSERT_EQ(without.size() + 2, ref[d].size());
    EXPECT_EQ(ref[d].front(), 0);
    EXPECT_EQ(ref[d].back(), 1);
  }
}

TEST(TokenizerSynthetic, AddedTokenOptionsMatchTheTokenizersLibrary) {
  const json doc = test::tiny_tokenizer_json();
  const Tokenizer tok = Tokenizer::from_json(doc, "tiny");
  const std::vector<std::string> docs = {
      "the thing", "a <mask> b", "a<mask>b", "  \t<mask>", "<mask><mask>", "[R]   x", "[R]\n\nx", "x [R]",
      "aword b", "a word b", "word", "wordy", "_word", "word_", "é word", "wordé", "1word", "word1", "<s></s>", "x<s>y",
      "a </s> b", "<s>x", "<s>xy", " <both> ", "a  <both>  b", "<both><both>", "[R]  <mask>", "<mask> [R] word", "aaaaaa",
      "the  the   the", "", "中文word", "word\u0301", "\u0301word", "word\u200d", "ab\u00a0<mask>\u00a0cd"};
  test::TempFile file("tiny"), corpus("docs"), ids_file("ids");
  {
    std::ofstream out(file.path(), std::ios::binary);
    out << doc.dump();
  }
  test::write_docs(corpus.path(), docs);
  for (bool as_text : {false, true}) {
    json summary;
    ASSERT_TRUE(test::run_reference("encode --tokenizer " + test::shell_quote(file.path()) + " --corpus " +
                                        test::shell_quote(corpus.path()) + " --out " + test::shell_quote(ids_file.path()) +
                                        (as_text ? " --special-as-text" : ""),
                                    summary));
    std::vector<Ids> ref;
    ASSERT_TRUE(test::read_reference_ids(ids_file.path(), ref));
    ASSERT_EQ(ref.size(), docs.size());
    EncodeOptions opt;
    opt.special_tokens_as_text = as_text;
    for (std::size_t d = 0; d < docs.size(); ++d)
      EXPECT_EQ(tok.encode(docs[d], opt), ref[d]) << (as_text ? "(special as text) " : "") << test::show_text(docs[d]);
  }
  // The options as documented, checked by hand: lstrip takes the spaces before <mask>, rstrip the
  // ones after [R], single_word refuses "word" inside a word.
  const std::int32_t mask = *tok.token_to_id("<mask>"), r = *tok.token_to_id("[R]"), word = *tok.token_to_id("word");
  EXPECT_EQ(tok.encode("  <mask>"), (Ids{mask}));
  EXPECT_EQ(tok.encode("[R]   "), (Ids{r}));
  EXPECT_EQ(tok.encode("a word b").size(), 5u);  // "a", " ", "word", " ", "b"
  const Ids aword = tok.encode("aword b");
  EXPECT_EQ(std::count(aword.begin(), aword.end(), word), 0);
  // The merges: "Ġt" + "he" -> " the" is one token. In "aaaaaa" the pair "a a" (rank 6) is
  // merged wherever it occurs before "aa a" (rank 7) is considered, leaving "aa" "aa" "aa".
  EXPECT_EQ(tok.encode(" the").size(), 1u);
  const std::int32_t aa = *tok.token_to_id("aa");
  EXPECT_EQ(tok.encode("aaaaaa"), (Ids{aa, aa, aa}));
  EXPECT_EQ(tok.encode("aaa"), (Ids{*tok.token_to_id("aaa")}));
}

}  // namespace
}  // namespace dsv4
