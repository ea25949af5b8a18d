// Malformed and unsupported tokenizer.json files: each is rejected with a dsv4::Error that names
// the file and the field, and says what is wrong or unsupported. Built from a small valid
// tokenizer (tokenizer_test_util.h) with one thing broken at a time.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"
#include "tokenizer_test_util.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using nlohmann::json;

// Expects Tokenizer::from_json to fail with a message containing the source name and `needle`.
void expect_rejected(const json& doc, const std::string& needle) {
  try {
    Tokenizer::from_json(doc, "bad.json");
    ADD_FAILURE() << "accepted a tokenizer that should fail with \"" << needle << "\"";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.json"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "expected \"" << needle << "\" in: " << what;
  }
}

TEST(TokenizerJson, TheTinyTokenizerLoads) {
  const Tokenizer tok = Tokenizer::from_json(test::tiny_tokenizer_json(), "tiny.json");
  EXPECT_EQ(tok.decode(tok.encode("the thing")), "the thing");
  EXPECT_FALSE(tok.bos_id().has_value());
}

TEST(TokenizerJson, MalformedModel) {
  json d = test::tiny_tokenizer_json();
  d["model"].erase("merges");
  expect_rejected(d, "missing model.merges");

  d = test::tiny_tokenizer_json();
  d["model"]["merges"] = "a b";
  expect_rejected(d, "model.merges must be an array");

  d = test::tiny_tokenizer_json();
  d["model"]["merges"][1] = 42;
  expect_rejected(d, "model.merges[1] is 42");

  d = test::tiny_tokenizer_json();
  d["model"]["merges"][0] = "nospace";
  expect_rejected(d, "model.merges[0] is \"nospace\"");

  d = test::tiny_tokenizer_json();
  d["model"]["merges"][2] = json::array({"Ġt", "zzz"});
  expect_rejected(d, "\"zzz\" is not in model.vocab");

  d = test::tiny_tokenizer_json();
  d["model"]["merges"].push_back("x y");  // both in the vocabulary, "xy" is not
  expect_rejected(d, "the merged token \"xy\" is not in model.vocab");

  d = test::tiny_tokenizer_json();
  d["model"]["type"] = "WordPiece";
  expect_rejected(d, "only BPE");

  d = test::tiny_tokenizer_json();
  d["model"]["vocab"] = json::array();
  expect_rejected(d, "model.vocab must be an object");

  d = test::tiny_tokenizer_json();
  d.erase("model");
  expect_rejected(d, "missing the top level.model");
}

TEST(TokenizerJson, UnsupportedModelOptions) {
  const std::vector<std::pair<const char*, json>> cases = {
      {"dropout", 0.1}, {"continuing_subword_prefix", "##"}, {"end_of_word_suffix", "</w>"},
      {"byte_fallback", true}, {"ignore_merges", true}};
  for (const auto& [key, value] : cases) {
    json d = test::tiny_tokenizer_json();
    d["model"][key] = value;
    expect_rejected(d, std::string("model.") + key);
  }
  // An unk_token is harmless while all 256 byte characters are present.
  json d = test::tiny_tokenizer_json();
  d["model"]["unk_token"] = "<unk>";
  EXPECT_NO_THROW(Tokenizer::from_json(d, "ok.json"));
}

TEST(TokenizerJson, UnsupportedPipelineParts) {
  json d = test::tiny_tokenizer_json();
  d["normalizer"] = {{"type", "NFC"}};
  expect_rejected(d, "normalizer is {\"type\":\"NFC\"}");

  d = test::tiny_tokenizer_json();
  d["normalizer"] = nullptr;
  EXPECT_NO_THROW(Tokenizer::from_json(d, "ok.json"));

  d = test::tiny_tokenizer_json();
  d["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_rejected(d, "pre_tokenizer.type is \"Whitespace\"");

  d = test::tiny_tokenizer_json();
  d["pre_tokenizer"]["pretokenizers"][2]["pattern"] = {{"String", " "}};
  expect_rejected(d, "pre_tokenizer.pretokenizers[2].pattern");

  d = test::tiny_tokenizer_json();
  d["truncation"] = {{"max_length", 512}};
  expect_rejected(d, "truncation");

  d = test::tiny_tokenizer_json();
  d["padding"] = {{"strategy", "BatchLongest"}};
  expect_rejected(d, "padding");

  d = test::tiny_tokenizer_json();
  d["decoder"] = {{"type", "WordPiece"}};
  expect_rejected(d, "only a ByteLevel decoder");

  d = test::tiny_tokenizer_json();
  d["post_processor"] = {{"type", "BertProcessing"}};
  expect_rejected(d, "post_processor is {\"type\":\"BertProcessing\"}");

  d = test::tiny_tokenizer_json();
  d["post_processor"] = json::parse(R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<bos>"}},
      {"Sequence": {"id": "A"}}], "special_tokens": {}})");
  expect_rejected(d, "names special token \"<bos>\"");

  d = test::tiny_tokenizer_json();
  d["post_processor"] = json::parse(R"({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "B"}}]})");
  expect_rejected(d, "post_processor.single[0]");
}

TEST(TokenizerJson, MalformedAddedTokens) {
  json d = test::tiny_tokenizer_json();
  d["added_tokens"][1]["id"] = 5;  // a vocabulary id with other content
  expect_rejected(d, "added_tokens[1]");

  d = test::tiny_tokenizer_json();
  d["added_tokens"][0]["content"] = 7;
  expect_rejected(d, "added_tokens[0].content must be a string");

  d = test::tiny_tokenizer_json();
  d["added_tokens"][0]["lstrip"] = "yes";
  expect_rejected(d, "added_tokens[0].lstrip must be true or false");
}

TEST(TokenizerJson, FileErrorsNameTheFile) {
  test::TempFile missing("missing"), empty("empty"), garbage("garbage");
  { std::ofstream(empty.path()).flush(); }
  { std::ofstream(garbage.path()) << "{\"model\": [1, 2,"; }
  for (const std::string& p : {missing.path(), empty.path(), garbage.path()}) {
    try {
      Tokenizer::from_file(p);
      ADD_FAILURE() << "loaded " << p;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

TEST(TokenizerJson, TokenizerConfigGivesBosAndEos) {
  test::TempDirForTokenizer dir("cfg");
  {
    std::ofstream(dir.file("tokenizer.json")) << test::tiny_tokenizer_json().dump();
    std::ofstream(dir.file("tokenizer_config.json"))
        << R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>"})";
  }
  const Tokenizer tok = Tokenizer::from_model_dir(dir.path());
  EXPECT_EQ(tok.bos_id(), tok.token_to_id("<s>"));
  EXPECT_EQ(tok.eos_id(), tok.token_to_id("</s>"));
  std::ofstream(dir.file("tokenizer_config.json")) << R"({"bos_token": "<nope>"})";
  try {
    Tokenizer::from_model_dir(dir.path());
    ADD_FAILURE() << "accepted a bos_token the tokenizer lacks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json: bos_token \"<nope>\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dsv4
