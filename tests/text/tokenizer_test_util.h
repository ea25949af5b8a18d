#pragma once
// Shared helpers of the tokenizer tests: the real DeepSeek tokenizers (loaded once per test
// process), the Node reference (tokenizer_reference.js, the Hugging Face `tokenizers` library)
// and the generated comparison corpus (make_tokenizer_corpus.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/byte_level.h"
#include "text/pretokenizer.h"
#include "text/tokenizer.h"
#include "text/utf8.h"
#include "text_test_data.h"

namespace dsv4::test {

// The V3 ("tokenizer.json") or V4.1 ("tokenizer-v41.json") tokenizer of the test data, loaded once.
inline const Tokenizer& real_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, std::make_unique<Tokenizer>(Tokenizer::from_file(test_data_dir() + "/" + name))).first;
  return *it->second;
}

// A fresh temporary file name (removed by the caller's TempFile).
class TempFile {
 public:
  explicit TempFile(const std::string& tag) {
    static int n = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("dsv4_tok_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++)))
                .string();
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A fresh temporary directory, removed with its contents.
class TempDirForTokenizer {
 public:
  explicit TempDirForTokenizer(const std::string& tag) : file_(tag) {
    std::filesystem::create_directories(file_.path());
  }
  ~TempDirForTokenizer() {
    std::error_code ec;
    std::filesystem::remove_all(file_.path(), ec);
  }
  const std::string& path() const { return file_.path(); }
  std::string file(const std::string& name) const { return file_.path() + "/" + name; }

 private:
  TempFile file_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes documents as the corpus format (JSON lines {"name", "text"}).
inline void write_docs(const std::string& path, const std::vector<std::string>& docs) {
  std::ofstream out(path, std::ios::binary);
  for (std::size_t i = 0; i < docs.size(); ++i)
    out << nlohmann::json({{"name", std::to_string(i)}, {"text", docs[i]}}).dump() << "\n";
}

// Runs `node tokenizer_reference.js <args>`; `summary` gets its one-line JSON output.
inline ::testing::AssertionResult run_reference(const std::string& args, nlohmann::json& summary) {
  const std::string script = source_dir() + "/tests/text/tokenizer_reference.js";
  const std::string cmd = "node " + shell_quote(script) + " " + args + " --node-modules " +
                          shell_quote(test_data_dir() + "/node_modules");
  int status = 0;
  const std::string out = run_command(cmd, status);
  if (status != 0)
    return ::testing::AssertionFailure() << "`" << cmd << "` failed (status " << status
                                         << "); it needs node and the npm package `tokenizers`: run "
                                            "`bash tests/data/fetch_test_data.sh`";
  try {
    summary = nlohmann::json::parse(out);
  } catch (const nlohmann::json::exception& e) {
    return ::testing::AssertionFailure() << "cannot read the output of `" << cmd << "`: " << e.what() << "\n" << out;
  }
  return ::testing::AssertionSuccess();
}

// Reads the ids file of `tokenizer_reference.js encode`.
inline ::testing::AssertionResult read_reference_ids(const std::string& path,
                                                     std::vector<std::vector<std::int32_t>>& ids) {
  const std::string bytes = read_file(path);
  auto u32 = [&](std::size_t off) {
    std::uint32_t v;
    std::memcpy(&v, bytes.data() + off, 4);
    return v;
  };
  if (bytes.size() < 12 || bytes.compare(0, 8, "DSV4IDS1") != 0)
    return ::testing::AssertionFailure() << path << " is not an ids file";
  const std::uint32_t docs = u32(8);
  std::size_t off = 12;
  ids.assign(docs, {});
  for (std::uint32_t d = 0; d < docs; ++d) {
    if (off + 4 > bytes.size()) return ::testing::AssertionFailure() << path << " is truncated";
    const std::uint32_t n = u32(off);
    off += 4;
    if (off + 4ull * n > bytes.size()) return ::testing::AssertionFailure() << path << " is truncated";
    ids[d].resize(n);
    if (n > 0) std::memcpy(ids[d].data(), bytes.data() + off, 4ull * n);
    off += 4ull * n;
  }
  return ::testing::AssertionSuccess();
}

// The reference's ids for each of `docs` with the test-data tokenizer `name`.
inline ::testing::AssertionResult reference_encode(const std::string& name, const std::vector<std::string>& docs,
                                                   std::vector<std::vector<std::int32_t>>& ids,
                                                   bool special_as_text = false) {
  TempFile corpus("docs"), out("ids");
  write_docs(corpus.path(), docs);
  nlohmann::json summary;
  auto r = run_reference("encode --tokenizer " + shell_quote(test_data_dir() + "/" + name) + " --corpus " +
                             shell_quote(corpus.path()) + " --out " + shell_quote(out.path()) +
                             (special_as_text ? " --special-as-text" : ""),
                         summary);
  if (!r) return r;
  return read_reference_ids(out.path(), ids);
}

// "[1, 2, 3]" for failure messages.
inline std::string show_ids(const std::vector<std::int32_t>& ids, std::size_t from = 0, std::size_t count = 40) {
  std::string s = "[";
  for (std::size_t i = from; i < ids.size() && i < from + count; ++i) {
    if (i > from) s += ", ";
    s += std::to_string(ids[i]);
  }
  if (from + count < ids.size()) s += ", ...";
  return s + "]";
}

// A string as a JSON literal (shows control characters and invisible spaces).
inline std::string show_text(std::string_view s, std::size_t max = 200) {
  std::string t(s.substr(0, max));
  return nlohmann::json(t).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
         (s.size() > max ? "..." : "");
}

// A small tokenizer: the 256 byte characters, a few merges, and added tokens with every option.
inline nlohmann::json tiny_tokenizer_json() {
  using nlohmann::json;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8_append(ch, byte_level_char(static_cast<std::uint8_t>(b)));
    vocab[ch] = b;
  }
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"i", "n"}, {"in", "g"}, {"Ġ", "a"}, {"a", "a"}, {"aa", "a"}};
  json m = json::array();
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = static_cast<int>(vocab.size());
    m.push_back(a + " " + b);
  }
  const int v = static_cast<int>(vocab.size());
  auto added = [&](int i, const std::string& content, bool special, bool normalized, bool lstrip, bool rstrip,
                   bool single_word) {
    return json{{"id", v + i},       {"content", content}, {"single_word", single_word}, {"lstrip", lstrip},
                {"rstrip", rstrip}, {"normalized", normalized}, {"special", special}};
  };
  json doc = {
      {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
      {"added_tokens", json::array({added(0, "<s>", true, false, false, false, false),
                                    added(1, "</s>", true, true, false, false, false),
                                    added(2, "<mask>", false, false, true, false, false),
                                    added(3, "[R]", false, true, false, true, false),
                                    added(4, "word", false, true, false, false, true),
                                    added(5, "<both>", true, false, true, true, false),
                                    added(6, "<s>x", false, true, false, false, false)})},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", json::array()}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"}, {"pattern", {{"Regex", kDeepSeekDigitsPattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                      {{"type", "Split"}, {"pattern", {{"Regex", kDeepSeekCjkPattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                      {{"type", "Split"}, {"pattern", {{"Regex", kDeepSeekMainPattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}})}}},
      {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", m}}},
  };
  return doc;
}

}  // namespace dsv4::test
