// Configuration: both file styles read into one struct, defaults for absent keys, and every
// architectural invariant reported with the field it concerns.
#include "io/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "io/engram_layout.h"
#include "../common/test_env.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

const std::string kReleased = "/data/deepseek-v4.1-flash/inference-config.json";

json released_json() {
  std::ifstream in(test::shared_dir() + kReleased);
  return json::parse(in);
}

// The message of the error that validating `j` throws ("" if it validates).
std::string violation_of(const json& j) {
  try {
    parse_inference_config(j, "test.json").validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Config, ReleasedFileEqualsTheSpecValues) {
  ModelConfig c = load_model_config(test::shared_dir() + kReleased);
  EXPECT_EQ(c.dim, 5120);
  EXPECT_EQ(c.n_layers, 40);
  EXPECT_EQ(c.compress_ratios.size(), 43u);
  EXPECT_EQ(c.compress_ratios[20], 1);
  EXPECT_EQ(c.norm_eps, 1e-20);
  EXPECT_EQ(c.engram_num_embeddings, (std::vector<std::int64_t>{384006168, 384016682}));
  EXPECT_FALSE(c.vision_max_wh_ratio.has_value());
  EXPECT_TRUE(c.unknown_keys.empty());
  // ModelArgs code defaults (not in the file).
  EXPECT_EQ(c.max_seq_len, 4096);
  EXPECT_EQ(c.max_batch_size, 4);
  // Every key of the file is a known field, and writing the struct back gives the same values.
  json back = config_to_json(c);
  const json file = released_json();
  for (auto it = file.begin(); it != file.end(); ++it) EXPECT_EQ(back[it.key()], it.value()) << it.key();
}

TEST(Config, AbsentKeysTakeTheReleasedValues) {
  ModelConfig empty = parse_inference_config(json::object(), "empty");
  ModelConfig rel = load_model_config(test::shared_dir() + kReleased);
  EXPECT_EQ(config_to_json(empty), config_to_json(rel));
  EXPECT_NO_THROW(empty.validate());
}

TEST(Config, UnknownKeysAreKeptForTheReport) {
  json j = released_json();
  j["future_knob"] = 3;
  ModelConfig c = parse_inference_config(j, "x");
  EXPECT_EQ(c.unknown_keys, std::vector<std::string>{"future_knob"});
}

TEST(Config, HuggingFaceStyleWithAliasesReadsTheSameModel) {
  json text = {{"hidden_size", 5120},           {"num_hidden_layers", 40},     {"num_attention_heads", 64},
               {"moe_intermediate_size", 2304}, {"num_experts_per_tok", 6},    {"qk_rope_head_dim", 64},
               {"rms_norm_eps", 1e-20},         {"routed_scaling_factor", 1.5}, {"scoring_func", "sqrtsoftplus"},
               {"num_nextn_predict_layers", 3}, {"sliding_window", 128},       {"max_position_embeddings", 1048576},
               {"rope_scaling", {{"type", "yarn"}, {"factor", 16}, {"original_max_position_embeddings", 65536},
                                 {"beta_fast", 32}, {"beta_slow", 1}}}};
  json j = {{"model_type", "deepseek_v4"},
            {"architectures", {"DeepseekV4ForCausalLM"}},
            {"text_config", text},
            {"vision_config", {{"num_hidden_layers", 32}, {"hidden_size", 1024}, {"num_attention_heads", 16}}},
            {"quantization_config", {{"quant_method", "fp8"}, {"weight_block_size", {32, 32}}}}};
  ModelConfig c = parse_hf_config(j, "hf.json");
  EXPECT_NO_THROW(c.validate());
  ModelConfig rel = load_model_config(test::shared_dir() + kReleased);
  EXPECT_EQ(config_to_json(c), config_to_json(rel));
  EXPECT_EQ(c.max_position_embeddings, 1048576);
  // A weight block other than 32×32 cannot be run.
  j["quantization_config"]["weight_block_size"] = {128, 128};
  try {
    parse_hf_config(j, "hf.json").validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("weight_block_size"));
  }
}

TEST(Config, TypeErrorsNameTheField) {
  json j = released_json();
  j["dim"] = "5120";
  try {
    parse_inference_config(j, "cfg.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cfg.json"));
    EXPECT_THAT(e.what(), HasSubstr("'dim'"));
    EXPECT_THAT(e.what(), HasSubstr("integer"));
  }
  j = released_json();
  j["kv_source_layers"] = {2, "8"};
  EXPECT_THROW(parse_inference_config(j, "cfg.json"), Error);
}

TEST(Config, MalformedFilesGiveClearErrors) {
  std::string dir = testing::TempDir() + "/dsv4_cfg";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/bad.json") << "{\"dim\": 5120,,}";
  try {
    load_model_config(dir + "/bad.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.json"));
    EXPECT_THAT(e.what(), HasSubstr("not valid JSON"));
  }
  std::ofstream(dir + "/dup.json") << "{\"dim\": 5120, \"dim\": 4096}";
  try {
    load_model_config(dir + "/dup.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("dup.json"));
    EXPECT_THAT(e.what(), HasSubstr("dim"));
  }
  std::ofstream(dir + "/arr.json") << "[1, 2]";
  EXPECT_THROW(load_model_config(dir + "/arr.json"), Error);
  EXPECT_THROW(load_model_config(dir + "/missing.json"), Error);
  EXPECT_THROW(load_model_config_dir(dir + "/nowhere"), Error);
}

// Each rule: a mutation of the released config, and a fragment the message must contain.
struct Rule {
  const char* what;
  std::function<void(json&)> mutate;
  const char* expect;
};

TEST(Config, EveryInvariantIsReportedWithItsField) {
  const std::vector<Rule> rules = {
      {"heads not divisible by groups", [](json& j) { j["o_groups"] = 7; }, "n_heads: must be divisible by o_groups"},
      {"dim not a block multiple", [](json& j) { j["dim"] = 5000; }, "dim: must be divisible by the FP8 block 32"},
      {"head dim not a block multiple", [](json& j) { j["head_dim"] = 500; }, "head_dim"},
      {"moe inter not a block multiple", [](json& j) { j["moe_inter_dim"] = 2300; }, "moe_inter_dim"},
      {"ratios too short", [](json& j) { j["compress_ratios"].erase(42); }, "compress_ratios: must have n_layers + n_mtp_layers"},
      {"unknown ratio", [](json& j) { j["compress_ratios"][5] = 4; }, "compress_ratios[5]: must be 0, 1 or 2"},
      {"mtp compressed", [](json& j) { j["compress_ratios"][41] = 1; }, "DSpark stage 1 must have ratio 0"},
      {"kv source without compressor", [](json& j) { j["kv_source_layers"] = {1, 2, 8, 14, 20}; j["index_source_layers"] = {1, 2, 8, 14, 20, 24, 28, 32, 36}; },
       "kv_source_layers: layer 1 has compress ratio 0"},
      {"kv source not an index source", [](json& j) { j["index_source_layers"] = {8, 14, 20, 24, 28, 32, 36}; },
       "layer 2 must also be an index source"},
      {"compressed layer without a kv source", [](json& j) { j["kv_source_layers"] = {8, 14, 20}; j["index_source_layers"] = {8, 14, 20, 24}; },
       "compress_ratios[2]: ratio 2 but no kv source"},
      {"ratio run without its own kv source", [](json& j) { j["kv_source_layers"] = {2, 8, 14}; j["index_source_layers"] = {2, 8, 14, 20}; j["candidate_source_layer"] = 20; },
       "compress_ratios[20]: ratio 1 differs from its kv source layer 14"},
      {"candidate source not an index source", [](json& j) { j["candidate_source_layer"] = 21; }, "candidate_source_layer: layer 21 must be an index source"},
      {"candidate budget below top-k", [](json& j) { j["candidate_topk_blocks"] = 16; j["candidate_block_size"] = 8; },
       "must be >= index_topk 512"},
      {"index source list unsorted", [](json& j) { j["index_source_layers"] = {2, 8, 14, 20, 28, 24, 32, 36}; },
       "index_source_layers: must be strictly increasing"},
      {"layer out of range", [](json& j) { j["index_source_layers"].push_back(40); }, "index_source_layers: layer 40 out of range"},
      {"dspark target out of range", [](json& j) { j["dspark_target_layer_ids"] = {37, 38, 40}; }, "dspark_target_layer_ids: layer 40 out of range"},
      {"engram rows inconsistent with the primes", [](json& j) { j["engram_num_embeddings"][1] = 384016683; },
       "engram_num_embeddings[1]: layer 14 must have 384016682 rows"},
      {"engram rows count", [](json& j) { j["engram_num_embeddings"] = {384006168}; }, "engram_num_embeddings: must have one entry per engram layer"},
      {"noise token outside vocab", [](json& j) { j["dspark_noise_token_id"] = 129280; }, "dspark_noise_token_id: token id 129280 outside"},
      {"activated > routed", [](json& j) { j["n_activated_experts"] = 400; }, "n_activated_experts: must not exceed"},
      {"rope wider than head", [](json& j) { j["rope_head_dim"] = 1024; }, "rope_head_dim: must not exceed head_dim"},
      {"score func", [](json& j) { j["score_func"] = "softmax"; }, "score_func"},
      {"expert dtype", [](json& j) { j["expert_dtype"] = "int4"; }, "expert_dtype"},
      {"index head not a block", [](json& j) { j["index_head_dim"] = 80; }, "index_head_dim: must be divisible by the FP4 block 32"},
      {"vision heads", [](json& j) { j["vision_n_heads"] = 7; }, "vision_dim: must be divisible by vision_n_heads"},
      {"negative layers", [](json& j) { j["n_layers"] = -1; }, "n_layers: must be positive"},
  };
  EXPECT_EQ(violation_of(released_json()), "");
  for (const Rule& r : rules) {
    json j = released_json();
    r.mutate(j);
    std::string msg = violation_of(j);
    EXPECT_THAT(msg, HasSubstr(r.expect)) << r.what;
    EXPECT_THAT(msg, HasSubstr("test.json")) << r.what;
  }
}

TEST(Config, AllViolationsAreListedTogether) {
  json j = released_json();
  j["o_groups"] = 7;
  j["dspark_target_layer_ids"] = {99};
  std::string msg = violation_of(j);
  EXPECT_THAT(msg, HasSubstr("o_groups"));
  EXPECT_THAT(msg, HasSubstr("dspark_target_layer_ids"));
}

// Spec §8.1 lists the primes of the release; the layout here is computed by the search.
TEST(EngramLayout, ReleasedPrimesAndOffsetsMatchTheSpecTable) {
  ModelConfig c;
  EngramLayout lay = engram_layout(c);
  ASSERT_EQ(lay.layers.size(), 2u);
  const auto& l1 = lay.layers[0].primes;
  const auto& l14 = lay.layers[1].primes;
  ASSERT_EQ(l1.size(), 24u);
  EXPECT_EQ(l1[0], 16000057);
  EXPECT_EQ(l1[7], 16000183);
  EXPECT_EQ(l1[8], 16000189);
  EXPECT_EQ(l1[23], 16000463);
  EXPECT_EQ(l14[0], 16000477);
  EXPECT_EQ(l14[23], 16000889);
  EXPECT_EQ(lay.layers[0].rows, 384006168);
  EXPECT_EQ(lay.layers[1].rows, 384016682);
  EXPECT_EQ(lay.layers[0].offsets[23], 368005705);
  EXPECT_EQ(lay.layers[1].offsets[12], 192007016);
  // Independent check of the search's premise: every chosen modulus is prime, every one distinct.
  std::set<std::int64_t> all;
  for (const auto& l : lay.layers)
    for (auto p : l.primes) {
      for (std::int64_t d = 2; d * d <= p; ++d) ASSERT_NE(p % d, 0) << p;
      EXPECT_TRUE(all.insert(p).second);
    }
}

}  // namespace
}  // namespace dsv4
