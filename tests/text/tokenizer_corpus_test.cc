// The tokenizer against the Hugging Face `tokenizers` library (0.23.2, its Node binding run by
// tests/text/tokenizer_reference.js) on a corpus of several megabytes: real text from the machine
// (translations in ~90 languages, Python and C++ sources, CMake docs, licenses, certificates) and
// generated edge cases (tests/text/make_tokenizer_corpus.py). For the V3 and the V4.1 tokenizer,
// every document must get exactly the library's ids, and decode(encode(x)) must give x back.
// The corpus is built into the test data directory when missing or older than its script.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"
#include "text/unicode_classes.h"
#include "util/error.h"
#include "text_test_data.h"
#include "tokenizer_test_util.h"

namespace dsv4 {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Corpus {
  std::string path;
  std::vector<std::string> names, texts;
  json summary;
  std::size_t bytes = 0;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool newer_or_same(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_mtime >= sb.st_mtime;
}

::testing::AssertionResult load_corpus(Corpus& c) {
  const std::string script = test::source_dir() + "/tests/text/make_tokenizer_corpus.py";
  c.path = test::test_data_dir() + "/tokenizer_corpus.jsonl";
  const std::string summary_path = c.path + ".summary.json";
  std::string v3, v41;
  if (auto r = test::test_data_file("tokenizer.json", v3); !r) return r;
  if (auto r = test::test_data_file("tokenizer-v41.json", v41); !r) return r;
  if (!newer_or_same(c.path, script) || !newer_or_same(summary_path, script)) {
    const std::string cmd = "python3 " + test::shell_quote(script) + " --out " + test::shell_quote(c.path) +
                            " --tokenizer " + test::shell_quote(v3) + " --tokenizer " + test::shell_quote(v41);
    int status = 0;
    test::run_command(cmd, status);
    if (status != 0) return ::testing::AssertionFailure() << "`" << cmd << "` failed (status " << status << ")";
  }
  std::ifstream in(c.path, std::ios::binary);
  std::string line;
  try {
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      json d = json::parse(line);
      c.names.push_back(d.at("name").get<std::string>());
      c.texts.push_back(d.at("text").get<std::string>());
      c.bytes += c.texts.back().size();
    }
    c.summary = json::parse(test::read_file(summary_path));
  } catch (const json::exception& e) {
    return ::testing::AssertionFailure() << c.path << ": " << e.what() << " (delete it to rebuild)";
  }
  if (c.texts.empty()) return ::testing::AssertionFailure() << c.path << " has no documents";
  return ::testing::AssertionSuccess();
}

void print_corpus(const Corpus& c) {
  std::cout << "[corpus] " << c.path << ": " << c.bytes << " bytes in " << c.texts.size() << " documents\n";
  std::string line = "[corpus] sources:";
  for (const auto& [name, s] : c.summary.at("sources").items())
    line += " " + name + " " + std::to_string(s.at("bytes").get<std::size_t>() / 1000) + " kB/" +
            std::to_string(s.at("docs").get<int>());
  std::cout << line << "\n";
}

// The first position where two id lists differ.
std::size_t first_difference(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

void compare_with_reference(const std::string& name, bool special_as_text) {
  Corpus c;
  ASSERT_TRUE(load_corpus(c));
  std::string tok_path;
  ASSERT_TRUE(test::test_data_file(name, tok_path));
  print_corpus(c);

  auto t0 = Clock::now();
  const Tokenizer& tok = test::real_tokenizer(name);
  const double load_s = seconds_since(t0);

  test::TempFile out("ids");
  json ref_summary;
  t0 = Clock::now();
  ASSERT_TRUE(test::run_reference("encode --tokenizer " + test::shell_quote(tok_path) + " --corpus " +
                                      test::shell_quote(c.path) + " --out " + test::shell_quote(out.path()) +
                                      (special_as_text ? " --special-as-text" : ""),
                                  ref_summary));
  const double ref_s = seconds_since(t0);
  std::vector<std::vector<std::int32_t>> ref;
  ASSERT_TRUE(test::read_reference_ids(out.path(), ref));
  ASSERT_EQ(ref.size(), c.texts.size());

  EncodeOptions opt;
  opt.special_tokens_as_text = special_as_text;
  std::vector<std::vector<std::int32_t>> ours(c.texts.size());
  t0 = Clock::now();
  for (std::size_t d = 0; d < c.texts.size(); ++d) ours[d] = tok.encode(c.texts[d], opt);
  const double enc_s = seconds_since(t0);

  std::size_t same = 0, tokens = 0, roundtrip = 0, shown = 0;
  for (std::size_t d = 0; d < c.texts.size(); ++d) {
    tokens += ours[d].size();
    if (ours[d] == ref[d]) {
      ++same;
    } else if (shown++ < 5) {
      const std::size_t i = first_difference(ours[d], ref[d]);
      const std::size_t from = i > 5 ? i - 5 : 0;
      std::string near;
      try {
        near = test::show_text(tok.decode(std::vector<std::int32_t>(ours[d].begin() + std::min(ours[d].size(), from),
                                                                    ours[d].begin() + std::min(ours[d].size(), from + 15))));
      } catch (const Error& e) {
        near = e.what();
      }
      ADD_FAILURE() << name << ": document " << d << " (" << c.names[d] << ") differs at token " << i << "\n  ours:      "
                    << test::show_ids(ours[d], from, 15) << "\n  reference: " << test::show_ids(ref[d], from, 15)
                    << "\n  our text there: " << near;
    }
    if (tok.decode(ours[d]) == c.texts[d]) ++roundtrip;
    else if (shown++ < 5)
      ADD_FAILURE() << name << ": decode(encode(x)) != x for document " << d << " (" << c.names[d] << ")";
  }
  EXPECT_EQ(same, c.texts.size());
  EXPECT_EQ(roundtrip, c.texts.size());
  std::cout << "[" << name << (special_as_text ? ", special tokens as text" : "") << "] ids identical to tokenizers "
            << ref_summary.value("tokenizers_version", "?") << " on " << same << "/" << c.texts.size()
            << " documents (" << tokens << " tokens); decode(encode(x)) == x on " << roundtrip << "/"
            << c.texts.size() << "\n";
  std::cout << "[" << name << "] load " << load_s << " s; encode " << enc_s << " s single-threaded ("
            << c.bytes / 1e6 / enc_s << " MB/s, including cold caches); reference " << ref_s
            << " s (process, load and encodeBatch on all threads)\n";
  std::cout << "[unicode] pre-tokenizer classes: Unicode " << pretokenizer_unicode_version() << "; ICU "
            << icu_unicode_version() << "\n";
}

TEST(TokenizerCorpus, V3IdsMatchTheTokenizersLibrary) { compare_with_reference("tokenizer.json", false); }

TEST(TokenizerCorpus, V41IdsMatchTheTokenizersLibrary) { compare_with_reference("tokenizer-v41.json", false); }

TEST(TokenizerCorpus, V41SpecialTokensAsTextMatchTheTokenizersLibrary) {
  compare_with_reference("tokenizer-v41.json", true);
}

// decode() of random id sequences: byte tokens that split characters (U+FFFD placement), added
// and special tokens, skip_special_tokens on and off.
void compare_decode(const std::string& name) {
  std::string tok_path;
  ASSERT_TRUE(test::test_data_file(name, tok_path));
  const Tokenizer& tok = test::real_tokenizer(name);
  test::TempFile out("decode");
  json summary;
  ASSERT_TRUE(test::run_reference("decode --tokenizer " + test::shell_quote(tok_path) + " --count 2000 --out " +
                                      test::shell_quote(out.path()),
                                  summary));
  const json cases = json::parse(test::read_file(out.path()));
  std::size_t same = 0, replacement = 0, shown = 0;
  for (const json& c : cases) {
    const auto ids = c.at("ids").get<std::vector<std::int32_t>>();
    const std::string want = c.at("text").get<std::string>(), want_skip = c.at("text_skip").get<std::string>();
    const std::string got = tok.decode(ids), got_skip = tok.decode(ids, true);
    if (got == want && got_skip == want_skip) ++same;
    else if (shown++ < 5)
      ADD_FAILURE() << name << ": decode(" << test::show_ids(ids) << ")\n  ours:      " << test::show_text(got)
                    << " / skip " << test::show_text(got_skip) << "\n  reference: " << test::show_text(want)
                    << " / skip " << test::show_text(want_skip);
    if (want.find("\xEF\xBF\xBD") != std::string::npos) ++replacement;
  }
  EXPECT_EQ(same, cases.size());
  std::cout << "[" << name << "] decode identical on " << same << "/" << cases.size() << " random id sequences ("
            << replacement << " with U+FFFD)\n";
}

TEST(TokenizerCorpus, DecodeMatchesTheTokenizersLibrary) {
  compare_decode("tokenizer.json");
  compare_decode("tokenizer-v41.json");
}

}  // namespace
}  // namespace dsv4
