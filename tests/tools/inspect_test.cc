// dsv4 inspect on the released configuration must show the published figures exactly, digit
// grouped — they were computed independently from the checkpoint inventory (spec §15) — and the
// JSON form must carry the same numbers as JSON integers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace dsv4 {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

// True if one line of `text` contains every fragment (so the report's column widths may change).
::testing::AssertionResult has_line(const std::string& text, std::initializer_list<std::string> parts) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return ::testing::AssertionSuccess();
  }
  std::string want;
  for (const auto& p : parts) want += "[" + p + "] ";
  return ::testing::AssertionFailure() << "no line contains " << want;
}

TEST(InspectCli, ReleasedConfigShowsThePublishedFigures) {
  auto r = test::run_dsv4("inspect --config " + test::released_config());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& t = r.out;
  EXPECT_TRUE(has_line(t, {"re-index", "13,759,918,710", "layers 24, 28, 32, 36"}));
  EXPECT_TRUE(has_line(t, {"reuse", "13,754,511,990", "layers 3–7, 9–13"}));
  EXPECT_TRUE(has_line(t, {"layers 24–39: 4 groups of 1 re-index + 3 reuse = 55,023,454,680 × 4 = 220,093,818,720"}));
  EXPECT_TRUE(has_line(t, {"kv+index source", "13,765,227,766", "layers 2, 8, 14"}));
  EXPECT_TRUE(has_line(t, {"kv+index+candidate source", "13,762,606,326", "layers 20"}));
  EXPECT_TRUE(has_line(t, {"total parameters", "763,205,315,794"}));
  EXPECT_TRUE(has_line(t, {"Checkpoint: 96,085 tensors, 510,286,023,000 B"}));
  // Per-component tables carry the calculation.
  EXPECT_TRUE(has_line(t, {"attn.wq_a", "5120 × 1280 = 6,553,600"}));
  EXPECT_TRUE(has_line(t, {"engram.embed", "384006168 × 256 = 98,305,579,008"}));
  EXPECT_TRUE(has_line(t, {"experts.E.w2", "2304 × 5120 = 11,796,480; × 384 = 4,529,848,320"}));
  // Shapes into and out of a block, state kept between calls, memory plan.
  EXPECT_TRUE(has_line(t, {"block input: residual stream X", "[B, T, 4, 5120] bf16"}));
  EXPECT_TRUE(has_line(t, {"block output: pre-mix", "[B, T, 4] fp32"}));
  EXPECT_TRUE(has_line(t, {"layers.2 ", "compressed KV rows ⌊ctx/2⌋ × 512 bf16"}));
  EXPECT_TRUE(has_line(t, {"layers.39", "reads compressed KV rows of layer 20; selected positions of layer 36"}));
  EXPECT_TRUE(has_line(t, {"routed_experts", "288,777,830,400 B"}));
  EXPECT_TRUE(has_line(t, {"3,208 B (3.13 KiB) per token"}));
}

TEST(InspectCli, JsonCarriesTheSameNumbersAsIntegers) {
  auto r = test::run_dsv4("inspect --json --ctx 65536 --batch 2 --config " + test::released_config());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "dsv4.inspect/1");
  ASSERT_TRUE(j["params"]["total"].is_number_integer());
  EXPECT_EQ(j["params"]["total"].get<std::int64_t>(), 763205315794);
  EXPECT_EQ(j["params"]["backbone_layers"].get<std::int64_t>(), 550242348144);
  EXPECT_EQ(j["params"]["engram"].get<std::int64_t>(), 196928504320);
  EXPECT_EQ(j["params"]["dspark"].get<std::int64_t>(), 14225362530);
  EXPECT_EQ(j["params"]["vision"].get<std::int64_t>(), 485253120);
  EXPECT_EQ(j["params"]["activated_per_token_layers"].get<std::int64_t>(), 15468682352);
  EXPECT_EQ(j["checkpoint"]["tensors"].get<std::int64_t>(), 96085);
  EXPECT_EQ(j["checkpoint"]["bytes"].get<std::int64_t>(), 510286023000);
  EXPECT_EQ(j["layers"][24]["params"].get<std::int64_t>(), 13759918710);
  EXPECT_EQ(j["layers"][25]["params"].get<std::int64_t>(), 13754511990);
  EXPECT_EQ(j["layers"][20]["params"].get<std::int64_t>(), 13762606326);
  for (int l : {2, 8, 14}) EXPECT_EQ(j["layers"][l]["params"].get<std::int64_t>(), 13765227766);
  EXPECT_EQ(j["layers"][14]["engram_params"].get<std::int64_t>(), 98465597952);
  bool found = false;
  for (auto& g : j["layer_groups"])
    if (g["first_layer"] == 24) {
      found = true;
      EXPECT_EQ(g["count"], 4);
      EXPECT_EQ(g["params_per_group"].get<std::int64_t>(), 55023454680);
      EXPECT_EQ(g["params"].get<std::int64_t>(), 220093818720);
    }
  EXPECT_TRUE(found);
  // Spec §14: 3200 B of bf16 cache per token plus 8 B of hash history.
  EXPECT_EQ(j["memory"]["state"]["bytes_per_token"].get<std::int64_t>(), 3208);
  EXPECT_EQ(j["memory"]["ctx"], 65536);
  EXPECT_EQ(j["memory"]["state"]["bytes_total"].get<std::int64_t>(),
            2 * j["memory"]["state"]["bytes_per_sequence"].get<std::int64_t>());
  EXPECT_EQ(j["memory"]["weights"]["total"].get<std::int64_t>(), 510286023000);
}

TEST(InspectCli, BadInvocationsFailClearly) {
  auto r = test::run_dsv4("inspect");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--config FILE or -m DIR"));
  r = test::run_dsv4("inspect --config /nonexistent.json");
  EXPECT_NE(r.exit_code, 0);
  test::TempDir d("badcfg");
  {
    std::ofstream(d / "config.json") << R"({"n_heads": 60})";
  }
  r = test::run_dsv4("inspect --config " + (d / "config.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("n_heads: must be divisible by o_groups"));
}

}  // namespace
}  // namespace dsv4
