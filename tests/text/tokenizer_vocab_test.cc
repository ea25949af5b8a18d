// tokenizer.json loading (tokenizer_vocab.h): the id rules of the `tokenizers` library on small
// hand-written files, every kind of bad input, and the real DeepSeek V3 file and its V4.1
// variant (spec §12, §16.6; chat-encoding.md §1).
#include "text/tokenizer_vocab.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <numeric>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "text_test_data.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using nlohmann::json;

// A small byte-level BPE tokenizer.json; tests edit it.
json minimal() {
  return json::parse(R"({
    "version": "1.0",
    "added_tokens": [
      {"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
       "normalized": false, "special": true},
      {"id": 3, "content": "<｜User｜>", "single_word": false, "lstrip": false, "rstrip": false,
       "normalized": true, "special": false},
      {"id": 4, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false,
       "normalized": false, "special": true}
    ],
    "normalizer": null,
    "pre_tokenizer": null,
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "vocab": {"<s>": 0, "a": 1, "Ġa": 2}, "merges": []}
  })");
}

class TokenizerVocabFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dsv4_vocab_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& text) {
    const std::string path = (dir_ / "tokenizer.json").string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // Loads `doc` from a file and expects a dsv4::Error whose message names the file and
  // contains `what`.
  void expect_error(const std::string& text, const std::string& what) {
    const std::string path = write(text);
    try {
      load_tokenizer_vocab(path);
      ADD_FAILURE() << "no error; expected one containing \"" << what << "\"";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << "expected \"" << what << "\" in: " << msg;
    }
  }
  void expect_error(const json& doc, const std::string& what) { expect_error(doc.dump(), what); }

  std::filesystem::path dir_;
};

TEST_F(TokenizerVocabFiles, MinimalFile) {
  const TokenizerVocab v = load_tokenizer_vocab(write(minimal().dump()));
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v.id_to_token, (std::vector<std::string>{"<s>", "a", "Ġa", "<｜User｜>", "</s>"}));
  EXPECT_EQ(v.is_added, (std::vector<std::uint8_t>{1, 0, 0, 1, 1}));
  EXPECT_EQ(v.is_special, (std::vector<std::uint8_t>{1, 0, 0, 0, 1}));
}

TEST_F(TokenizerVocabFiles, NoAddedTokens) {
  json d = minimal();
  d.erase("added_tokens");
  const TokenizerVocab v = load_tokenizer_vocab(write(d.dump()));
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(v.is_added, (std::vector<std::uint8_t>{0, 0, 0}));
}

TEST_F(TokenizerVocabFiles, FileAndJsonErrors) {
  try {
    load_tokenizer_vocab((dir_ / "absent.json").string());
    ADD_FAILURE() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("absent.json"), std::string::npos) << e.what();
  }
  expect_error(std::string(), "empty");
  expect_error(std::string("{\"model\": "), "not valid JSON");
  expect_error(std::string("[1, 2]"), "top level must be a JSON object");
}

TEST_F(TokenizerVocabFiles, ModelErrors) {
  json d = minimal();
  d.erase("model");
  expect_error(d, "missing the top level.model");
  d = minimal();
  d["model"]["type"] = "WordPiece";
  expect_error(d, "only BPE");
  d = minimal();
  d["model"].erase("vocab");
  expect_error(d, "missing model.vocab");
  d = minimal();
  d["model"]["vocab"] = json::array({"a", "b"});
  expect_error(d, "model.vocab must be an object");
  d = minimal();
  d["model"]["vocab"] = json::object();
  expect_error(d, "model.vocab is empty");
  d = minimal();
  d["decoder"] = {{"type", "WordPiece"}};
  expect_error(d, "only a ByteLevel decoder");
  d = minimal();
  d.erase("decoder");
  expect_error(d, "decoder is missing");
}

TEST_F(TokenizerVocabFiles, VocabIdErrors) {
  json d = minimal();
  d["model"]["vocab"]["b"] = 1;  // id 1 twice
  expect_error(d, "gives id 1 to both");
  d = minimal();
  d["model"]["vocab"]["Ġa"] = 5;  // 3 entries, ids 0, 1, 5: a gap
  expect_error(d, "vocabulary ids must be 0..2");
  d = minimal();
  d["model"]["vocab"]["a"] = -1;
  expect_error(d, "outside 0..");
  d = minimal();
  d["model"]["vocab"]["a"] = "1";
  expect_error(d, "must be an integer id");
  d = minimal();
  d["model"]["vocab"]["a"] = 1.5;
  expect_error(d, "must be an integer id");
  d = minimal();
  d["model"]["vocab"]["a"] = 4294967296ull;
  expect_error(d, "beyond the int32 id range");
}

TEST_F(TokenizerVocabFiles, AddedTokenErrors) {
  json d = minimal();
  d["added_tokens"][1]["id"] = 4;  // 3 is skipped
  expect_error(d, "but the next free id is 3");
  d = minimal();
  std::swap(d["added_tokens"][1], d["added_tokens"][2]);  // ids 4 then 3: out of order
  expect_error(d, "but the next free id is 3");
  d = minimal();
  d["added_tokens"][2]["id"] = 3;  // two added tokens claim id 3
  expect_error(d, "already used by added token \"<｜User｜>\"");
  d = minimal();
  d["added_tokens"][1]["id"] = 1;  // re-declares vocab id 1 with other content
  expect_error(d, "which model.vocab gives to \"a\"");
  d = minimal();
  d["added_tokens"][0]["id"] = 1;  // "<s>" is vocab id 0
  expect_error(d, "model.vocab already gives it id 0");
  d = minimal();
  d["added_tokens"][2]["content"] = "<｜User｜>";
  expect_error(d, "repeats content \"<｜User｜>\" (already added with id 3)");
  d = minimal();
  d["added_tokens"][1]["content"] = "";
  expect_error(d, "added_tokens[1].content is empty");
  d = minimal();
  d["added_tokens"][1].erase("id");
  expect_error(d, "missing added_tokens[1].id");
  d = minimal();
  d["added_tokens"][1].erase("content");
  expect_error(d, "missing added_tokens[1].content");
  d = minimal();
  d["added_tokens"][1]["content"] = 7;
  expect_error(d, "added_tokens[1].content must be a string");
  d = minimal();
  d["added_tokens"][1]["special"] = "yes";
  expect_error(d, "added_tokens[1].special must be true or false");
  d = minimal();
  d["added_tokens"][1]["lstrip"] = 1;
  expect_error(d, "added_tokens[1].lstrip must be true or false");
  d = minimal();
  d["added_tokens"] = json::object();
  expect_error(d, "added_tokens must be an array");
  d = minimal();
  d["added_tokens"][1] = "<x>";
  expect_error(d, "added_tokens[1] must be an object");
}

TEST(TokenizerVocabFromJson, NamesTheSource) {
  try {
    tokenizer_vocab_from_json(json::array(), "my-source.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("my-source.json"), std::string::npos) << e.what();
  }
}

TEST(TokenizerVocabReal, DeepSeekV3) {
  std::string path;
  ASSERT_TRUE(test::test_data_file("tokenizer.json", path));
  const TokenizerVocab v = load_tokenizer_vocab(path);
  // 128,000 vocabulary entries + 815 new added ids (spec §16.6).
  ASSERT_EQ(v.size(), 128815u);
  EXPECT_EQ(std::accumulate(v.is_added.begin(), v.is_added.end(), 0), 818);  // ids 0, 1, 2 re-declared
  EXPECT_EQ(v.id_to_token[0], "<｜begin▁of▁sentence｜>");
  EXPECT_EQ(v.id_to_token[1], "<｜end▁of▁sentence｜>");
  EXPECT_EQ(v.id_to_token[2], "<｜▁pad▁｜>");
  EXPECT_EQ(v.id_to_token[128799], "<｜place▁holder▁no▁799｜>");
  EXPECT_EQ(v.id_to_token[128803], "<｜User｜>");
  EXPECT_EQ(v.id_to_token[128804], "<｜Assistant｜>");
  EXPECT_EQ(v.id_to_token[128805], "<|EOT|>");
  EXPECT_EQ(v.id_to_token[128814], "<｜tool▁sep｜>");
  for (int id : {0, 1, 2, 128799, 128805}) EXPECT_TRUE(v.is_special[id]) << id;
  for (int id : {128800, 128803, 128804, 128814}) EXPECT_FALSE(v.is_special[id]) << id;
  EXPECT_FALSE(v.is_added[1000]);
}

TEST(TokenizerVocabReal, DeepSeekV41Variant) {
  std::string path;
  ASSERT_TRUE(test::test_data_file("tokenizer-v41.json", path));
  const TokenizerVocab v = load_tokenizer_vocab(path);
  ASSERT_EQ(v.size(), 129280u);  // config vocab_size
  EXPECT_EQ(v.id_to_token[128799], "<｜System｜>");
  EXPECT_FALSE(v.is_special[128799]);  // chat-encoding.md §1: special false
  EXPECT_EQ(v.id_to_token[128821], "<think>");
  EXPECT_EQ(v.id_to_token[128822], "</think>");
  EXPECT_EQ(v.id_to_token[128825], "｜DSML｜");
  EXPECT_EQ(v.id_to_token[128828], "<｜latest_reminder｜>");
  EXPECT_EQ(v.id_to_token[129264], "<｜deepseek_image｜>");
  EXPECT_FALSE(v.is_special[129264]);
  EXPECT_EQ(v.id_to_token[128803], "<｜User｜>");  // unchanged from V3
  EXPECT_EQ(std::count(v.is_added.begin(), v.is_added.end(), 1), 818 + 465);
}

}  // namespace
}  // namespace dsv4
