// Parsing OpenAI-style messages (chat_message.h): accepted forms and aliases, malformed input
// with errors that name the message and field, the messages-file shape of CASES.md, and the
// Python json.dumps layout the prompt uses (chat_json.h, spec chat-encoding.md §7.1).
#include "text/chat_message.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "text/chat_json.h"
#include "util/error.h"

namespace dsv4 {
namespace {

using ::testing::HasSubstr;
using ojson = nlohmann::ordered_json;

std::vector<ChatMessage> msgs(const char* json) { return parse_chat_messages(ojson::parse(json), "chat.json"); }

// The error message parse_chat_messages throws for `json`, or "" if it does not throw.
std::string error_of(const char* json) {
  try {
    msgs(json);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChatParse, ReadsEveryFieldTheEncoderUses) {
  auto m = msgs(R"([
    {"role":"system","content":"S","tools":[{"type":"function","function":{"name":"f","description":"d"}}],
     "response_format":{"type":"json_object"},"name":"ignored"},
    {"role":"user","content":"q","task":"query","mask":1},
    {"role":"assistant","content":null,"reasoning":"r","wo_eos":true,
     "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"b\": 1, \"a\": 2}"}},
                   {"name":"flat","arguments":{"x":"y"}}]},
    {"role":"tool","tool_call_id":"c1","content":"R"},
    {"role":"latest_reminder","content":"date"},
    {"role":"developer","content":"dev"}])");
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].tools.size(), 1u);
  EXPECT_EQ(m[0].tools[0].dump(), R"({"name":"f","description":"d"})");  // the function object, in order
  EXPECT_EQ(m[0].response_format->dump(), R"({"type":"json_object"})");
  EXPECT_EQ(m[1].task, "query");
  EXPECT_TRUE(m[2].content.empty());
  EXPECT_EQ(m[2].reasoning, "r");  // the `reasoning` alias (CASES.md)
  EXPECT_TRUE(m[2].wo_eos);
  ASSERT_EQ(m[2].tool_calls.size(), 2u);
  EXPECT_EQ(m[2].tool_calls[0].id, "c1");
  EXPECT_EQ(m[2].tool_calls[0].arguments.dump(), R"({"b":1,"a":2})");
  EXPECT_EQ(m[2].tool_calls[1].name, "flat");
  EXPECT_EQ(m[3].tool_call_id, "c1");
  EXPECT_EQ(m[4].role, ChatRole::LatestReminder);
  EXPECT_EQ(m[5].role, ChatRole::Developer);
}

TEST(ChatParse, MissingUserContentIsOneEmptyTextPart) {
  auto m = msgs(R"([{"role":"user"},{"role":"assistant"}])");
  ASSERT_EQ(m[0].content.size(), 1u);
  EXPECT_EQ(m[0].content[0].text, "");
  EXPECT_TRUE(m[1].content.empty());
  EXPECT_FALSE(m[1].reasoning.has_value());
}

TEST(ChatParse, ReasoningAndItsAliasMustAgreeWhenBothAreGiven) {
  EXPECT_EQ(msgs(R"([{"role":"assistant","reasoning_content":"r","reasoning":"r"}])")[0].reasoning, "r");
  EXPECT_THAT(error_of(R"([{"role":"assistant","reasoning_content":"r","reasoning":"other"}])"),
              HasSubstr("messages[0].reasoning"));
}

TEST(ChatParse, ErrorsNameTheMessageIndexAndField) {
  struct Bad {
    const char* json;
    const char* fragment;
  };
  const Bad cases[] = {
      {R"({"role":"user"})", "messages must be a list"},
      {R"([1])", "messages[0]: a message must be an object"},
      {R"([{"content":"x"}])", "messages[0].role: every message needs a string role"},
      {R"([{"role":"user"},{"role":"robot"}])", "messages[1].role: unknown role 'robot'"},
      {R"([{"role":"user","content":5}])", "messages[0].content: must be a string, a list of parts or null"},
      {R"([{"role":"user","content":[{"text":"x"}]}])", "messages[0].content[0].type"},
      {R"([{"role":"user","content":[{"type":"text","text":1}]}])", "messages[0].content[0].text"},
      {R"([{"role":"system","content":[{"type":"audio"}]}])", "messages[0].content[0].type: part type 'audio'"},
      {R"([{"role":"assistant","tool_calls":{}}])", "messages[0].tool_calls: must be a list"},
      {R"([{"role":"assistant","tool_calls":[{"type":"function","function":{"arguments":"{}"}}]}])",
       "messages[0].tool_calls[0].function.name"},
      {R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":7}}]}])",
       "messages[0].tool_calls[0].function.arguments: must be a JSON string or an object"},
      {R"([{"role":"assistant","tool_calls":[{"type":"code","function":{"name":"f"}}]}])",
       "messages[0].tool_calls[0].type"},
      {R"([{"role":"user","content":"q","task":"shout"}])", "messages[0].task: unknown task 'shout'"},
      {R"([{"role":"user","content":"q","tools":[]}])", "messages[0].tools: only system and developer"},
      {R"([{"role":"assistant","response_format":{}}])", "messages[0].response_format: only system and developer"},
      {R"([{"role":"system","tools":[{"name":"f"}]}])", "messages[0].tools[0]: expected the OpenAI form"},
      {R"([{"role":"system","tools":{}}])", "messages[0].tools: must be a list"},
      {R"([{"role":"developer","content":""}])", "messages[0].content: a developer message needs non-empty content"},
      {R"([{"role":"developer"}])", "messages[0].content: a developer message needs non-empty content"},
      {R"([{"role":"assistant","wo_eos":"yes"}])", "messages[0].wo_eos: must be true or false"},
      {R"([{"role":"tool","tool_call_id":3}])", "messages[0].tool_call_id: must be a string"},
      {R"([{"role":"user","content":"<｜deepseek_image｜>"}])", "messages[0].content: contains the image placeholder"},
  };
  for (const Bad& b : cases) {
    std::string err = error_of(b.json);
    EXPECT_THAT(err, HasSubstr("chat.json: ")) << b.json;
    EXPECT_THAT(err, HasSubstr(b.fragment)) << b.json;
  }
}

TEST(ChatParse, FileFormsAndTheirErrors) {
  EXPECT_EQ(parse_chat_file(ojson::parse(R"([{"role":"user"}])"), "f").size(), 1u);
  EXPECT_EQ(parse_chat_file(ojson::parse(R"({"messages":[{"role":"user"}],"thinking_mode":"x"})"), "f").size(), 1u);
  // Top-level tools attach to the first system message, which need not be message 0.
  auto m = parse_chat_file(ojson::parse(R"({"tools":[{"type":"function","function":{"name":"f"}}],
    "messages":[{"role":"user"},{"role":"system","content":"S"}]})"),
                           "f");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].tools.size(), 1u);
  EXPECT_THROW(parse_chat_file(ojson::parse(R"({"msgs":[]})"), "f"), Error);
  EXPECT_THROW(parse_chat_file(ojson::parse(R"("text")"), "f"), Error);

  const std::string path = std::filesystem::temp_directory_path().string() + "/dsv4_chat_bad.json";
  {
    std::ofstream(path) << "[{\"role\": \"user\",]";
  }
  try {
    load_chat_file(path);
    ADD_FAILURE() << "no error for invalid JSON";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(path + ": not valid JSON"));
  }
  std::filesystem::remove(path);
  EXPECT_THROW(load_chat_file(path), Error);  // missing file
}

TEST(ChatParse, TaskTokens) {
  EXPECT_EQ(chat_task_token("action"), "<｜action｜>");
  EXPECT_EQ(chat_task_token("read_url"), "<｜read_url｜>");
  EXPECT_FALSE(chat_task_token("search").has_value());
}

// ---------------------------------------------------------------------------------------------
// The JSON layout of §7.1: what Python's json.dumps(v, ensure_ascii=False) prints.

TEST(PythonJson, SeparatorsKeyOrderUnicodeAndEscapes) {
  EXPECT_EQ(python_json_dumps(ojson::parse(R"({"z": [1, 2, {}], "a": [], "u": "é中/", "t": true, "n": null})")),
            R"({"z": [1, 2, {}], "a": [], "u": "é中/", "t": true, "n": null})");
  EXPECT_EQ(python_json_dumps(ojson("q\"b\\n\n r\r t\t b\b f\f \x01 \x1f \x7f")),
            "\"q\\\"b\\\\n\\n r\\r t\\t b\\b f\\f \\u0001 \\u001f \x7f\"");
  EXPECT_EQ(python_json_dumps(ojson::parse("-12345678901234")), "-12345678901234");
  EXPECT_EQ(python_json_dumps(ojson::parse("18446744073709551615")), "18446744073709551615");
}

TEST(PythonJson, FloatsUsePythonsReprRules) {
  const std::pair<double, const char*> cases[] = {
      {1.0, "1.0"},         {1.5, "1.5"},       {-0.0, "-0.0"},     {100.0, "100.0"},
      {0.1, "0.1"},         {0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.5e-7, "1.5e-07"},
      {1e15, "1000000000000000.0"},             {1e16, "1e+16"},    {1.2345678901234568e+17, "1.2345678901234568e+17"},
      {123.456, "123.456"}, {1e300, "1e+300"},  {5e-324, "5e-324"}, {0.30000000000000004, "0.30000000000000004"},
  };
  for (const auto& [v, want] : cases) EXPECT_EQ(python_float_repr(v), want) << want;
  EXPECT_EQ(python_json_dumps(ojson::parse("[1e2, 2.50]")), "[100.0, 2.5]");
  EXPECT_EQ(python_float_repr(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(python_float_repr(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

}  // namespace
}  // namespace dsv4
