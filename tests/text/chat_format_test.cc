// Chat prompt rendering (chat_format.h) against spec chat-encoding.md: every golden case of
// ../shared/data/chat-encoding byte for byte (CASES.md gives inputs and options; the goldens are
// the independent reference), then one test per rule with small expectations derived by hand
// from the spec text, and the incremental (context) form.
#include "text/chat_format.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../common/test_env.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using ojson = nlohmann::ordered_json;

// Spelled out from the spec (§1), independent of chat_tokens.h.
const std::string BOS = "<｜begin▁of▁sentence｜>";
const std::string EOS = "<｜end▁of▁sentence｜>";
const std::string SYS = "<｜System｜>";
const std::string USER = "<｜User｜>";
const std::string ASST = "<｜Assistant｜>";
const std::string IMG = "<｜deepseek_image｜>";
const std::string EFFORT75 = "Reasoning Effort: 75 (range 1-100, the higher the value, the more thorough the reasoning)\n\n";

std::string golden_path(const std::string& name) { return test::shared_dir() + "/data/chat-encoding/" + name; }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<ChatMessage> msgs(const char* json) { return parse_chat_messages(ojson::parse(json), "test"); }

ChatOptions opts(bool thinking, ChatProfile p = ChatProfile::V41) {
  ChatOptions o;
  o.profile = p;
  o.thinking = thinking;
  return o;
}

ChatOptions with_effort(ChatOptions o, const char* e) {
  o.effort = parse_effort(e);
  return o;
}

// ---------------------------------------------------------------------------------------------
// Golden cases (CASES.md).

struct GoldenCase {
  const char* id;
  const char* input;
  const char* expected;
  ChatProfile profile;
  bool thinking;
  const char* effort;  // nullptr: the default
};

const GoldenCase kGoldens[] = {
    {"V41_1", "v4_test_input_1.json", "v41_test_output_1.txt", ChatProfile::V41, true, nullptr},
    {"V41_1b_low", "v4_test_input_1.json", "v41_test_output_1.effort50.txt", ChatProfile::V41, true, "low"},
    {"V41_1b_int50", "v4_test_input_1.json", "v41_test_output_1.effort50.txt", ChatProfile::V41, true, "50"},
    {"V41_1_high", "v4_test_input_1.json", "v41_test_output_1.txt", ChatProfile::V41, true, "high"},
    {"V41_2", "v4_test_input_2.json", "v41_test_output_2.txt", ChatProfile::V41, true, nullptr},
    {"V41_2b", "v4_test_input_2.json", "v41_test_output_2.effort50.txt", ChatProfile::V41, true, "50"},
    {"V4_1", "v4_test_input_1.json", "v4_test_output_1.txt", ChatProfile::V4, true, "low"},
    {"V4_2", "v4_test_input_2.json", "v4_test_output_2.txt", ChatProfile::V4, true, "low"},
    {"V4_3_developer_reminder_tools", "v4_test_input_3.json", "v4_test_output_3.txt", ChatProfile::V4, true, "low"},
    {"V4_4_chat_action_task", "v4_test_input_4.json", "v4_test_output_4.txt", ChatProfile::V4, false, nullptr},
    // The file's own thinking_mode/reasoning_effort keys are ignored, as by the harness (CASES.md).
    {"V4_5_chat_images_file_keys_ignored", "v4_test_input_5.json", "v4_test_output_5.txt", ChatProfile::V4, false,
     nullptr},
};

ChatOptions golden_options(const GoldenCase& c) {
  ChatOptions o = opts(c.thinking, c.profile);
  if (c.effort != nullptr) o.effort = parse_effort(c.effort);
  return o;
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, RendersByteForByte) {
  const GoldenCase& c = GetParam();
  std::vector<ChatMessage> m = load_chat_file(golden_path(c.input));
  EXPECT_EQ(render_chat(m, golden_options(c)), read_bytes(golden_path(c.expected)));
}

// vLLM's add_generation_prompt adds the header after a final assistant message; a prompt that
// ends with a user turn already ends with it and is unchanged.
TEST_P(Golden, GenerationPromptOpensAnAssistantTurnOnlyAfterAFinalAssistant) {
  const GoldenCase& c = GetParam();
  ChatOptions o = golden_options(c);
  o.add_generation_prompt = true;
  std::vector<ChatMessage> m = load_chat_file(golden_path(c.input));
  const std::string golden = read_bytes(golden_path(c.expected));
  const std::string header = ASST + (c.thinking ? "<think>" : "</think>");
  if (m.back().role == ChatRole::Assistant) {
    EXPECT_EQ(render_chat(m, o), golden + header);
  } else {
    EXPECT_EQ(render_chat(m, o), golden);
    EXPECT_EQ(golden.substr(golden.size() - header.size()), header);
  }
}

INSTANTIATE_TEST_SUITE_P(ChatEncoding, Golden, ::testing::ValuesIn(kGoldens),
                         [](const auto& info) { return std::string(info.param.id); });

// The data folder is what CASES.md describes (a damaged copy would fail the cases confusingly).
TEST(GoldenData, FileSizesMatchCasesMd) {
  const std::pair<const char*, std::size_t> sizes[] = {
      {"v4_test_input_1.json", 2732},  {"v4_test_input_2.json", 510},   {"v4_test_input_3.json", 4530},
      {"v4_test_input_4.json", 2730},  {"v4_test_input_5.json", 1143},  {"v4_test_output_1.txt", 2390},
      {"v4_test_output_2.txt", 342},   {"v4_test_output_3.txt", 3313},  {"v4_test_output_4.txt", 2552},
      {"v4_test_output_5.txt", 303},   {"v41_test_output_1.txt", 2487}, {"v41_test_output_2.txt", 447},
      {"v41_test_output_1.effort50.txt", 2487}, {"v41_test_output_2.effort50.txt", 447}};
  for (const auto& [name, size] : sizes) EXPECT_EQ(read_bytes(golden_path(name)).size(), size) << name;
}

// ---------------------------------------------------------------------------------------------
// Incremental rendering: render(all) == render(prefix) + continuation(prefix, rest) wherever the
// prefix's rendering does not depend on what follows (chat_format.h), checked against goldens.

std::vector<ChatMessage> head(const std::vector<ChatMessage>& m, std::size_t k) { return {m.begin(), m.begin() + k}; }
std::vector<ChatMessage> tail(const std::vector<ChatMessage>& m, std::size_t k) { return {m.begin() + k, m.end()}; }

TEST(ChatIncremental, WithToolsEverySplitOfGoldenV41_1ReproducesTheGolden) {
  std::vector<ChatMessage> m = load_chat_file(golden_path("v4_test_input_1.json"));
  const std::string golden = read_bytes(golden_path("v41_test_output_1.txt"));
  ChatOptions o = opts(true);
  for (std::size_t k = 1; k < m.size(); ++k) {
    std::string kept = render_chat(head(m, k), o);
    RenderedChat inc = render_chat_continuation(head(m, k), tail(m, k), o);
    EXPECT_EQ(kept + inc.text, golden) << "split at " << k;
    EXPECT_EQ(inc.text.find(BOS), std::string::npos) << "no BOS after a context";
    ChatAppend ap = append_chat(head(m, k), tail(m, k), o);
    EXPECT_TRUE(ap.prefix_kept) << k;
    EXPECT_EQ(ap.appended.text, inc.text) << k;
  }
}

// No tools + drop_thinking: a context that ends after u1 or after a1 renders u1's header as
// "<think>" and a1's reasoning; once u2 follows, the full render has "</think>" and no reasoning
// (§6). Only the split after u2 (and after the system message) keeps the prefix.
TEST(ChatIncremental, DropThinkingRewritesHistorySoOnlySomeSplitsOfGoldenV41_2KeepThePrefix) {
  std::vector<ChatMessage> m = load_chat_file(golden_path("v4_test_input_2.json"));  // sys u1 a1 u2 a2
  const std::string golden = read_bytes(golden_path("v41_test_output_2.txt"));
  ChatOptions o = opts(true);
  const bool expect_kept[] = {false, true, false, false, true};
  for (std::size_t k = 1; k < m.size(); ++k) {
    ChatAppend ap = append_chat(head(m, k), tail(m, k), o);
    EXPECT_EQ(ap.prefix_kept, expect_kept[k]) << "split at " << k;
    if (ap.prefix_kept) {
      EXPECT_EQ(render_chat(head(m, k), o) + ap.appended.text, golden);
      EXPECT_EQ(render_chat_continuation(head(m, k), tail(m, k), o).text, ap.appended.text);
    } else {
      EXPECT_EQ(ap.appended.text, golden) << "the full prompt to re-prefill";
    }
  }
  // R's context form still renders only the new messages: after [sys u1 a1] the cache holds a1's
  // reasoning, and the continuation is just the new turns.
  EXPECT_EQ(render_chat_continuation(head(m, 3), tail(m, 3), o).text,
            USER + "What is the capital of France?" + ASST +
                "<think>The user asks about the capital of France. It is Paris.</think>The capital of France is "
                "Paris." + EOS);
}

TEST(ChatIncremental, KeepThinkingMakesEverySplitKeepThePrefix) {
  std::vector<ChatMessage> m = load_chat_file(golden_path("v4_test_input_2.json"));
  ChatOptions o = opts(true);
  o.drop_thinking = false;
  const std::string full = render_chat(m, o);
  for (std::size_t k = 1; k < m.size(); ++k) {
    EXPECT_EQ(render_chat(head(m, k), o) + render_chat_continuation(head(m, k), tail(m, k), o).text, full) << k;
    EXPECT_TRUE(append_chat(head(m, k), tail(m, k), o).prefix_kept) << k;
  }
}

TEST(ChatIncremental, ChatModeEverySplitOfGoldenV4_4ReproducesTheGolden) {
  std::vector<ChatMessage> m = load_chat_file(golden_path("v4_test_input_4.json"));
  const std::string golden = read_bytes(golden_path("v4_test_output_4.txt"));
  ChatOptions o = opts(false, ChatProfile::V4);
  for (std::size_t k = 1; k < m.size(); ++k)
    EXPECT_EQ(render_chat(head(m, k), o) + render_chat_continuation(head(m, k), tail(m, k), o).text, golden) << k;
}

TEST(ChatIncremental, AnAddedMessageThatMergesIntoTheContextsUserTurnIsAnError) {
  auto m = msgs(R"([{"role":"user","content":"a"},{"role":"user","content":"b"}])");
  EXPECT_THROW(render_chat_continuation(head(m, 1), tail(m, 1), opts(false)), Error);
  ChatAppend ap = append_chat(head(m, 1), tail(m, 1), opts(false));
  EXPECT_FALSE(ap.prefix_kept);
  EXPECT_EQ(ap.appended.text, BOS + USER + "a\n\nb" + ASST + "</think>");
}

TEST(ChatIncremental, AppendedImagesAreOnlyThoseOfTheAppendedText) {
  auto m = msgs(R"([{"role":"user","content":[{"type":"image_url","image_url":{"url":"one.png"}}]},
    {"role":"assistant","content":"ok"},
    {"role":"user","content":[{"type":"image_url","image_url":"two.png"}]}])");
  ChatAppend ap = append_chat(head(m, 2), tail(m, 2), opts(false));
  ASSERT_TRUE(ap.prefix_kept);
  EXPECT_EQ(ap.appended.text, USER + IMG + ASST + "</think>");
  ASSERT_EQ(ap.appended.images.size(), 1u);
  EXPECT_EQ(ap.appended.images[0].source, "two.png");
}

// ---------------------------------------------------------------------------------------------
// §3: thinking vs chat, the effort line and where <｜System｜> goes.

TEST(ChatEffortLine, ThinkingWithoutSystemMessageStandsAloneBeforeTheUserTurn) {
  EXPECT_EQ(render_chat(msgs(R"([{"role":"user","content":"hi"}])"), opts(true)),
            BOS + SYS + EFFORT75 + USER + "hi" + ASST + "<think>");
}

TEST(ChatEffortLine, ChatModeHasNoEffortLineAndNoSystemTokenWithoutSystem) {
  EXPECT_EQ(render_chat(msgs(R"([{"role":"user","content":"hi"}])"), opts(false)), BOS + USER + "hi" + ASST + "</think>");
}

TEST(ChatEffortLine, ChatModeWithEmptySystemMessageStillWritesTheSystemToken) {
  EXPECT_EQ(render_chat(msgs(R"([{"role":"system","content":""},{"role":"user","content":"hi"}])"), opts(false)),
            BOS + SYS + USER + "hi" + ASST + "</think>");
}

TEST(ChatEffortLine, NumericEffortIsWrittenAsAPlainInteger) {
  EXPECT_EQ(render_chat(msgs(R"([{"role":"system","content":"S"},{"role":"user","content":"q"}])"),
                        with_effort(opts(true), "37")),
            BOS + SYS + "Reasoning Effort: 37 (range 1-100, the higher the value, the more thorough the reasoning)\n\nS" +
                USER + "q" + ASST + "<think>");
  EXPECT_NE(render_chat(msgs(R"([{"role":"user","content":"q"}])"), with_effort(opts(true), "max"))
                .find("Reasoning Effort: 100 ("),
            std::string::npos);
}

TEST(ChatEffortLine, EffortIsValidatedEvenInChatMode) {
  ChatOptions o = opts(false);
  o.effort = ReasoningEffort{0, ""};  // built by hand, bypassing parse_effort
  EXPECT_THROW(render_chat(msgs(R"([{"role":"user","content":"q"}])"), o), Error);
  o.effort = ReasoningEffort{101, ""};
  EXPECT_THROW(render_chat(msgs(R"([{"role":"user","content":"q"}])"), o), Error);
}

TEST(ChatEffortLine, ContinuationWritesNoEffortLineBecauseIndexZeroIsInTheContext) {
  auto m = msgs(R"([{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}])");
  ChatOptions o = opts(true);
  o.drop_thinking = false;
  EXPECT_EQ(render_chat_continuation(head(m, 2), tail(m, 2), o).text, USER + "c" + ASST + "<think>");
}

TEST(ChatEffortTable, ReleasedNamesIntegersAndTheXhighAlias) {
  EXPECT_EQ(parse_effort("low").value, 50);
  EXPECT_EQ(parse_effort("high").value, 75);
  EXPECT_EQ(parse_effort("max").value, 100);
  EXPECT_EQ(parse_effort("xhigh").value, 75);  // compatibility alias (deepseek-recipe), not in R
  EXPECT_EQ(parse_effort("1").value, 1);
  EXPECT_EQ(parse_effort("37").value, 37);
  EXPECT_EQ(parse_effort("100").value, 100);
  EXPECT_EQ(kDefaultReasoningEffort, 75);
  EXPECT_EQ(parse_effort_json(ojson(37)).value, 37);
  EXPECT_EQ(parse_effort_json(ojson("max")).value, 100);
}

TEST(ChatEffortTable, MediumMinimalNoneAndMalformedValuesAreRejectedNotGuessed) {
  for (const char* bad : {"medium", "minimal", "none", "High", "0", "101", "5.0", "+5", "", "abc", "00000050"})
    EXPECT_THROW(parse_effort(bad), Error) << bad;
  for (const char* bad : {"true", "37.0", "-1", "0", "1000000000000000000000", "null", "[50]"})
    EXPECT_THROW(parse_effort_json(ojson::parse(bad)), Error) << bad;
}

// ---------------------------------------------------------------------------------------------
// §4/§5: roles and transitions.

TEST(ChatRoles, MidConversationSystemGetsItsOwnTokenAndNoHeaderBeforeAUser) {
  auto m = msgs(R"([{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},
    {"role":"system","content":"mid"},{"role":"user","content":"q2"}])");
  EXPECT_EQ(render_chat(m, opts(false)),
            BOS + USER + "q1" + ASST + "</think>a1" + EOS + SYS + "mid" + USER + "q2" + ASST + "</think>");
  // Last, it is user-like and opens the assistant turn (§5).
  auto last = msgs(R"([{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},
    {"role":"system","content":"answer briefly"}])");
  EXPECT_EQ(render_chat(last, opts(false)),
            BOS + USER + "q1" + ASST + "</think>a1" + EOS + SYS + "answer briefly" + ASST + "</think>");
  // V4 has no <｜System｜> token anywhere.
  EXPECT_EQ(render_chat(last, opts(false, ChatProfile::V4)),
            BOS + USER + "q1" + ASST + "</think>a1" + EOS + "answer briefly" + ASST + "</think>");
}

TEST(ChatRoles, LatestReminderIsNotAUserTurnAndAUserBeforeItGetsItsHeaderFirst) {
  EXPECT_EQ(render_chat(msgs(R"([{"role":"system","content":"S"},{"role":"latest_reminder","content":"2026-01-01"},
    {"role":"user","content":"q"}])"),
                        opts(false)),
            BOS + SYS + "S<｜latest_reminder｜>2026-01-01" + USER + "q" + ASST + "</think>");
  EXPECT_EQ(render_chat(msgs(R"([{"role":"user","content":"q"},{"role":"latest_reminder","content":"r"}])"), opts(false)),
            BOS + USER + "q" + ASST + "</think><｜latest_reminder｜>r");
}

TEST(ChatRoles, DeveloperRendersAsAUserTurnWithItsToolsAndCountsAsTheLastUser) {
  auto m = msgs(R"([{"role":"developer","content":"do it","tools":[{"type":"function","function":{"name":"f"}}]}])");
  std::string out = render_chat(m, opts(false));
  EXPECT_EQ(out.rfind(BOS + USER + "do it\n\n## Tools\n\n", 0), 0u) << out;
  EXPECT_EQ(out.substr(out.size() - std::string("tool calls.\n" + ASST + "</think>").size()),
            "tool calls.\n" + ASST + "</think>");
  EXPECT_NE(out.find("{\"name\": \"f\"}"), std::string::npos);
}

TEST(ChatRoles, DeveloperWithoutToolsBeforeTheLastUserIsDeletedUnderDropThinking) {
  auto m = msgs(R"([{"role":"developer","content":"rules"},{"role":"user","content":"q1"},
    {"role":"assistant","content":"a1","reasoning_content":"r1"},{"role":"user","content":"q2"}])");
  EXPECT_EQ(render_chat(m, opts(true)),
            BOS + SYS + EFFORT75 + USER + "q1" + ASST + "</think>a1" + EOS + USER + "q2" + ASST + "<think>");
  ChatOptions keep = opts(true);
  keep.drop_thinking = false;
  EXPECT_EQ(render_chat(m, keep), BOS + SYS + EFFORT75 + USER + "rules" + USER + "q1" + ASST + "<think>r1</think>a1" +
                                      EOS + USER + "q2" + ASST + "<think>");
}

TEST(ChatRoles, AssistantWithoutEosAndTheGenerationPrefix) {
  auto m = msgs(R"([{"role":"user","content":"q"},{"role":"assistant","content":"The answer is","wo_eos":true}])");
  ChatOptions o = opts(false);
  o.add_generation_prompt = true;  // never after a prefix continuation
  EXPECT_EQ(render_chat(m, o), BOS + USER + "q" + ASST + "</think>The answer is");
  EXPECT_EQ(generation_prefix(opts(true)), ASST + "<think>");
  EXPECT_EQ(generation_prefix(opts(false)), ASST + "</think>");
  // After a lone index-0 system message R writes no header; the extension does.
  auto sys = msgs(R"([{"role":"system","content":"S"}])");
  EXPECT_EQ(render_chat(sys, opts(false)), BOS + SYS + "S");
  EXPECT_EQ(render_chat(sys, o), BOS + SYS + "S" + ASST + "</think>");
}

// ---------------------------------------------------------------------------------------------
// §6: drop_thinking.

TEST(ChatDropThinking, KeepingReasoningOpensThinkAtEveryUserTurn) {
  auto m = msgs(R"([{"role":"user","content":"u1"},{"role":"assistant","content":"a1","reasoning_content":"r1"},
    {"role":"assistant","content":"a2"},{"role":"user","content":"u2"}])");
  ChatOptions o = opts(true);
  o.drop_thinking = false;
  // a2 has no reasoning: a bare "</think>" (§4.6).
  EXPECT_EQ(render_chat(m, o), BOS + SYS + EFFORT75 + USER + "u1" + ASST + "<think>r1</think>a1" + EOS + "</think>a2" +
                                   EOS + USER + "u2" + ASST + "<think>");
}

TEST(ChatDropThinking, ToolsAnywhereForceAllReasoningToBeKept) {
  auto m = msgs(R"([{"role":"system","content":"S","tools":[{"type":"function","function":{"name":"f"}}]},
    {"role":"user","content":"u1"},{"role":"assistant","content":"a1","reasoning_content":"r1"},
    {"role":"user","content":"u2"}])");
  std::string out = render_chat(m, opts(true));  // drop_thinking requested, but tools are present
  EXPECT_NE(out.find(USER + "u1" + ASST + "<think>r1</think>a1" + EOS + USER + "u2" + ASST + "<think>"),
            std::string::npos)
      << out;
}

// Without tools, tool results count as user turns: the reasoning of every step before the latest
// tool result is dropped (§6).
TEST(ChatDropThinking, WithoutToolsEarlierToolStepsLoseTheirReasoning) {
  auto m = msgs(R"([{"role":"user","content":"u"},
    {"role":"assistant","content":"","reasoning_content":"r1","tool_calls":[{"id":"c1","type":"function",
      "function":{"name":"f","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"R"},
    {"role":"assistant","content":"done","reasoning_content":"r2"}])");
  EXPECT_EQ(render_chat(m, opts(true)),
            BOS + SYS + EFFORT75 + USER + "u" + ASST + "</think>" +
                "\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"f\">\n\n</｜DSML｜ invoke>\n</｜DSML｜ calls>" + EOS + USER +
                "<tool_result>R</tool_result>" + ASST + "<think>r2</think>done" + EOS);
}

// ---------------------------------------------------------------------------------------------
// §8: tool results.

TEST(ChatToolResults, ConsecutiveToolAndUserMessagesMergeIntoOneTurnOrderedByCallOrder) {
  auto m = msgs(R"([{"role":"user","content":"q"},
    {"role":"assistant","content":"","tool_calls":[
      {"id":"c1","type":"function","function":{"name":"f","arguments":{}}},
      {"id":"c2","type":"function","function":{"name":"g","arguments":{}}}]},
    {"role":"tool","tool_call_id":"c2","content":"R2"},
    {"role":"user","content":"note"},
    {"role":"tool","tool_call_id":"zz","content":"R?"},
    {"role":"tool","tool_call_id":"c1","content":"R1"}])");
  std::string out = render_chat(m, opts(false));
  // Keys: c2 → 1, unknown → 0, c1 → 0; a stable sort gives R?, R1, R2 in the tool-result slots,
  // and the text part keeps its slot.
  const std::string turn = USER + "<tool_result>R?</tool_result>\n\nnote\n\n<tool_result>R1</tool_result>\n\n" +
                           "<tool_result>R2</tool_result>" + ASST + "</think>";
  EXPECT_EQ(out.substr(out.size() - turn.size()), turn) << out;
}

TEST(ChatToolResults, ListContentJoinsTextPartsAndMarksOthersUnsupported) {
  auto m = msgs(R"([{"role":"tool","content":[{"type":"text","text":"a"},{"type":"audio"},
    {"type":"image_url","image_url":{"url":"p.png"}},{"type":"text","text":"b"}]}])");
  RenderedChat r = render_chat_prompt(m, opts(false));
  EXPECT_EQ(r.text, BOS + USER + "<tool_result>a\n\n[Unsupported audio]\n\n" + IMG + "\n\nb</tool_result>" + ASST +
                        "</think>");
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_EQ(r.images[0].source, "p.png");
}

// ---------------------------------------------------------------------------------------------
// §9: multi-part content and images.

TEST(ChatImages, PartsJoinWithBlankLinesAndImagesAreRecordedInPromptOrder) {
  // The vLLM V4.1 test string quoted in §9.
  auto m = msgs(R"([{"role":"user","content":[{"type":"text","text":"first"},
    {"type":"image_url","image_url":{"url":"a.png"}},{"type":"text","text":"second"},
    {"type":"image","image":"b.png"},{"type":"text","text":"compare"}]}])");
  RenderedChat r = render_chat_prompt(m, opts(false));
  EXPECT_EQ(r.text, BOS + USER + "first\n\n" + IMG + "\n\nsecond\n\n" + IMG + "\n\ncompare" + ASST + "</think>");
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].source, "a.png");
  EXPECT_EQ(r.images[1].source, "b.png");
}

TEST(ChatImages, GoldenV4_5RecordsBothImagesInOrder) {
  RenderedChat r = render_chat_prompt(load_chat_file(golden_path("v4_test_input_5.json")), opts(false, ChatProfile::V4));
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].source, "examples/images/carrots.jpeg");
  EXPECT_EQ(r.images[1].source, "examples/images/corn.jpeg");
}

TEST(ChatImages, OtherRolesJoinTheirTextPartsAndUnknownPartsInUserTurnsAreMarked) {
  auto m = msgs(R"([{"role":"system","content":[{"type":"text","text":"s1"},{"type":"text","text":"s2"}]},
    {"role":"user","content":[{"type":"text","text":"x"},{"type":"input_audio"}]}])");
  EXPECT_EQ(render_chat(m, opts(false)), BOS + SYS + "s1\n\ns2" + USER + "x\n\n[Unsupported input_audio]" + ASST + "</think>");
}

TEST(ChatImages, ThePlaceholderInsideTextAndAnImageWithoutSourceAreErrors) {
  EXPECT_THROW(msgs(R"([{"role":"user","content":"look <｜deepseek_image｜>"}])"), Error);
  EXPECT_THROW(msgs(R"([{"role":"user","content":[{"type":"text","text":"<｜deepseek_image｜>"}]}])"), Error);
  EXPECT_THROW(msgs(R"([{"role":"assistant","content":"a","reasoning_content":"<｜deepseek_image｜>"}])"), Error);
  EXPECT_THROW(msgs(R"([{"role":"user","content":[{"type":"image_url"}]}])"), Error);
  EXPECT_THROW(msgs(R"([{"role":"user","content":[{"type":"image_url","image_url":{}}]}])"), Error);
}

// ---------------------------------------------------------------------------------------------
// §10: tasks.

TEST(ChatTasks, ActionOpensTheAssistantAndOtherTasksWriteOnlyTheirToken) {
  auto action = msgs(R"([{"role":"user","content":"q","task":"action"}])");
  EXPECT_EQ(render_chat(action, opts(true)), BOS + SYS + EFFORT75 + USER + "q" + ASST + "<think><｜action｜>");
  EXPECT_EQ(render_chat(action, opts(false)), BOS + USER + "q" + ASST + "</think><｜action｜>");
  auto query = msgs(R"([{"role":"user","content":"q","task":"query"}])");
  EXPECT_EQ(render_chat(query, opts(false)), BOS + USER + "q<｜query｜>");
}

TEST(ChatTasks, TheAnswerToATaskHasNoThinkingPartInThinkingMode) {
  auto m = msgs(R"([{"role":"user","content":"q","task":"title"},
    {"role":"assistant","content":"T","reasoning_content":"hidden"}])");
  ChatOptions o = opts(true);
  o.drop_thinking = false;
  EXPECT_EQ(render_chat(m, o), BOS + SYS + EFFORT75 + USER + "q<｜title｜>T" + EOS);
}

TEST(ChatTasks, ATaskTurnIsNeverMergedButATaskAfterAPlainUserIsLostInTheMerge) {
  auto kept_apart = msgs(R"([{"role":"user","content":"a","task":"query"},{"role":"user","content":"b"}])");
  EXPECT_EQ(render_chat(kept_apart, opts(false)), BOS + USER + "a" + USER + "b" + ASST + "</think>");
  auto lost = msgs(R"([{"role":"user","content":"a"},{"role":"user","content":"b","task":"query"}])");
  EXPECT_EQ(render_chat(lost, opts(false)), BOS + USER + "a\n\nb" + ASST + "</think>");  // R's quirk (§10)
}

// ---------------------------------------------------------------------------------------------
// §7: DSML blocks.

TEST(ChatDsml, HistoricalCallsRenderStringsRawAndOtherValuesAsPythonJson) {
  auto m = msgs(R"([{"role":"user","content":"q"},{"role":"assistant","content":"ok","tool_calls":[
    {"type":"function","function":{"name":"f","arguments":{"s":"a<b\n\"c\"","n":1.5,"b":true,"z":null,"l":[1,{"k":"é/"}]}}},
    {"type":"function","function":{"name":"g","arguments":"{\"x\": 2}"}}]}])");
  const std::string calls =
      "ok\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"f\">\n"
      "<｜DSML｜ parameter name=\"s\" string=\"true\">a<b\n\"c\"</｜DSML｜ parameter>\n"
      "<｜DSML｜ parameter name=\"n\" string=\"false\">1.5</｜DSML｜ parameter>\n"
      "<｜DSML｜ parameter name=\"b\" string=\"false\">true</｜DSML｜ parameter>\n"
      "<｜DSML｜ parameter name=\"z\" string=\"false\">null</｜DSML｜ parameter>\n"
      "<｜DSML｜ parameter name=\"l\" string=\"false\">[1, {\"k\": \"é/\"}]</｜DSML｜ parameter>\n"
      "</｜DSML｜ invoke>\n<｜DSML｜ invoke name=\"g\">\n"
      "<｜DSML｜ parameter name=\"x\" string=\"false\">2</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>" +
      EOS;
  std::string out = render_chat(m, opts(false));
  EXPECT_EQ(out.substr(out.size() - calls.size()), calls) << out;
  // V4 spelling: no space, and the block is named tool_calls.
  std::string v4 = render_chat(m, opts(false, ChatProfile::V4));
  EXPECT_NE(v4.find("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"s\""),
            std::string::npos);
  EXPECT_NE(v4.find("</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>" + EOS), std::string::npos);
}

TEST(ChatDsml, ArgumentStringsFollowRsRetryAndFallback) {
  auto args = [](const char* raw) { return tool_arguments_object(ojson::parse(raw), "t"); };
  EXPECT_EQ(args(R"("{\"a\": 1}")"), ojson::parse(R"({"a": 1})"));
  EXPECT_EQ(args(R"("\"{\\\"a\\\": 1}\"")"), ojson::parse(R"({"a": 1})"));  // double-encoded
  EXPECT_EQ(args(R"("not json")"), ojson::parse(R"({"arguments": "not json"})"));
  EXPECT_EQ(args(R"("[1, 2]")"), ojson::parse(R"({"arguments": "[1, 2]"})"));
  EXPECT_EQ(args("null"), ojson::object());
  EXPECT_THROW(args("42"), Error);
  // Keys keep their JSON order (an ordered object), not sorted.
  EXPECT_EQ(args(R"("{\"z\": 1, \"a\": 2}")").begin().key(), "z");
}

TEST(ChatDsml, ResponseFormatFollowsTheToolsBlock) {
  auto m = msgs(R"([{"role":"system","content":"S","tools":[{"type":"function","function":{"name":"f"}}],
    "response_format":{"type":"json_object"}}])");
  std::string out = render_chat(m, opts(false));
  const std::string tail_text = "invoke tool calls.\n\n\n## Response Format:\n\nYou MUST strictly adhere to the "
                                "following schema to reply:\n{\"type\": \"json_object\"}";
  EXPECT_EQ(out.substr(out.size() - tail_text.size()), tail_text) << out;
}

TEST(ChatDsml, TopLevelToolsWithoutASystemMessageGoOnAnInsertedEmptyOne) {
  auto m = parse_chat_file(ojson::parse(R"({"tools":[{"type":"function","function":{"name":"f"}}],
    "messages":[{"role":"user","content":"q"}]})"),
                           "test");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].role, ChatRole::System);
  std::string out = render_chat(m, opts(false));
  EXPECT_EQ(out.rfind(BOS + SYS + "\n\n## Tools\n\n", 0), 0u) << out;
  EXPECT_THROW(parse_chat_file(ojson::parse(R"({"tools":[{"type":"function","function":{"name":"f"}}],
    "messages":[{"role":"system","content":"","tools":[{"type":"function","function":{"name":"g"}}]}]})"),
                               "test"),
               Error);
}

// ---------------------------------------------------------------------------------------------
// The V4 profile's effort handling (chat_format.h).

TEST(ChatV4Profile, OnlyLowOrNoEffortRendersInThinkingModeAndNumbersAreRejected) {
  auto m = msgs(R"([{"role":"user","content":"q"}])");
  EXPECT_EQ(render_chat(m, opts(true, ChatProfile::V4)), BOS + USER + "q" + ASST + "<think>");
  EXPECT_EQ(render_chat(m, with_effort(opts(true, ChatProfile::V4), "low")), BOS + USER + "q" + ASST + "<think>");
  EXPECT_THROW(render_chat(m, with_effort(opts(true, ChatProfile::V4), "max")), Error);
  EXPECT_THROW(render_chat(m, with_effort(opts(true, ChatProfile::V4), "50")), Error);
  EXPECT_EQ(render_chat(m, with_effort(opts(false, ChatProfile::V4), "max")), BOS + USER + "q" + ASST + "</think>");
}

}  // namespace
}  // namespace dsv4
