// The Anthropic Messages translation layer: request bodies → ServeRequest (messages converted to
// ChatMessage), results → the Message object, and the streamed event sequence.
#include "serve/anthropic_api.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.h"

namespace dsv4::serve {
namespace {

using api_test::error_of;
using api_test::fragment;
using api_test::J;
using api_test::ojson;

ojson body_with(const ojson& extra = ojson::object()) {
  return api_test::merged(J(R"({"model": "claude-compatible", "max_tokens": 64,
                            "messages": [{"role": "user", "content": "hi"}]})"),
                      extra);
}

std::vector<std::string> texts(const ChatMessage& m) {
  std::vector<std::string> out;
  for (const ChatPart& p : m.content) out.push_back(p.text);
  return out;
}

// ---- Requests ----

TEST(AnthropicParse, BasicFields) {
  ServeRequest r = parse_anthropic_messages(body_with(J(R"({"temperature": 0.3, "top_p": 0.8, "top_k": 20,
      "stop_sequences": ["###", "END"], "stream": true, "metadata": {"user_id": "u"}})")));
  EXPECT_EQ(r.api, ApiKind::anthropic_messages);
  EXPECT_EQ(r.model, "claude-compatible");
  EXPECT_EQ(r.gen.max_new_tokens, 64u);
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_DOUBLE_EQ(r.gen.sampling.temperature, 0.3);
  EXPECT_DOUBLE_EQ(r.gen.sampling.top_p, 0.8);
  EXPECT_EQ(r.gen.sampling.top_k, 20u);
  EXPECT_EQ(r.gen.stop_strings, (std::vector<std::string>{"###", "END"}));
  EXPECT_TRUE(r.stream);
  EXPECT_FALSE(r.chat.thinking);
  EXPECT_FALSE(r.has_tools);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].role, ChatRole::User);
  EXPECT_EQ(texts(r.messages[0]), (std::vector<std::string>{"hi"}));
}

TEST(AnthropicParse, SystemStringAndBlocks) {
  ServeRequest r = parse_anthropic_messages(body_with(J(R"({"system": "Be brief."})")));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, ChatRole::System);
  EXPECT_EQ(texts(r.messages[0]), (std::vector<std::string>{"Be brief."}));
  EXPECT_EQ(r.messages[1].role, ChatRole::User);

  r = parse_anthropic_messages(body_with(J(R"({"system": [{"type": "text", "text": "One."},
      {"type": "text", "text": "Two.", "cache_control": {"type": "ephemeral"}}]})")));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, ChatRole::System);
  EXPECT_EQ(texts(r.messages[0]), (std::vector<std::string>{"One.", "Two."}));

  r = parse_anthropic_messages(body_with(J(R"({"system": ""})")));
  EXPECT_EQ(r.messages.size(), 1u);  // an empty system prompt adds no message
}

TEST(AnthropicParse, ToolUseAndToolResultConversion) {
  ojson body = J(R"({
    "max_tokens": 100,
    "system": "You are a weather bot.",
    "tools": [{"name": "get_weather", "description": "Weather of a city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
              {"name": "get_time", "input_schema": {"type": "object"}}],
    "messages": [
      {"role": "user", "content": "Weather in Paris and Rome?"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Two calls.", "signature": "sig"},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": {"city": "Rome"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_A", "content": "sunny"},
        {"type": "tool_result", "tool_use_id": "toolu_B", "is_error": true,
         "content": [{"type": "text", "text": "rain"}, {"type": "text", "text": "maybe"}]},
        {"type": "text", "text": "Thanks!"}]}
    ]})");
  ServeRequest r = parse_anthropic_messages(body);
  EXPECT_TRUE(r.has_tools);
  EXPECT_EQ(r.tool_choice, ToolChoice::automatic);
  ASSERT_EQ(r.messages.size(), 6u);

  const ChatMessage& sys = r.messages[0];
  EXPECT_EQ(sys.role, ChatRole::System);
  EXPECT_EQ(texts(sys), (std::vector<std::string>{"You are a weather bot."}));
  ASSERT_EQ(sys.tools.size(), 2u);
  EXPECT_EQ(sys.tools[0], J(R"({"name": "get_weather", "description": "Weather of a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}})"));
  EXPECT_EQ(sys.tools[1], J(R"({"name": "get_time", "parameters": {"type": "object"}})"));

  EXPECT_EQ(r.messages[1].role, ChatRole::User);

  const ChatMessage& a = r.messages[2];
  EXPECT_EQ(a.role, ChatRole::Assistant);
  EXPECT_EQ(a.reasoning, std::optional<std::string>("Two calls."));
  EXPECT_EQ(texts(a), (std::vector<std::string>{"Let me check."}));
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].id, "toolu_A");
  EXPECT_EQ(a.tool_calls[0].name, "get_weather");
  EXPECT_EQ(a.tool_calls[0].arguments, J(R"({"city": "Paris"})"));
  EXPECT_EQ(a.tool_calls[1].arguments, J(R"({"city": "Rome"})"));
  EXPECT_FALSE(a.wo_eos);

  EXPECT_EQ(r.messages[3].role, ChatRole::Tool);
  EXPECT_EQ(r.messages[3].tool_call_id, "toolu_A");
  EXPECT_EQ(texts(r.messages[3]), (std::vector<std::string>{"sunny"}));
  EXPECT_EQ(r.messages[4].role, ChatRole::Tool);
  EXPECT_EQ(r.messages[4].tool_call_id, "toolu_B");
  EXPECT_EQ(texts(r.messages[4]), (std::vector<std::string>{"rain", "maybe"}));
  EXPECT_EQ(r.messages[5].role, ChatRole::User);
  EXPECT_EQ(texts(r.messages[5]), (std::vector<std::string>{"Thanks!"}));
}

TEST(AnthropicParse, BlocksAroundToolResultsKeepTheirOrder) {
  ojson body = body_with();
  body["messages"] = J(R"([
    {"role": "user", "content": "Go"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
    {"role": "user", "content": [{"type": "text", "text": "Before"},
                                 {"type": "tool_result", "tool_use_id": "t1"},
                                 {"type": "text", "text": "After"}]}])");
  ServeRequest r = parse_anthropic_messages(body);
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[2].role, ChatRole::User);
  EXPECT_EQ(texts(r.messages[2]), (std::vector<std::string>{"Before"}));
  EXPECT_EQ(r.messages[3].role, ChatRole::Tool);
  EXPECT_EQ(r.messages[3].tool_call_id, "t1");
  EXPECT_EQ(texts(r.messages[3]), (std::vector<std::string>{""}));  // no content: one empty part
  EXPECT_EQ(r.messages[4].role, ChatRole::User);
  EXPECT_EQ(texts(r.messages[4]), (std::vector<std::string>{"After"}));
  EXPECT_FALSE(r.messages[1].wo_eos);
}

TEST(AnthropicParse, ToolsWithoutSystemInsertOne) {
  ServeRequest r = parse_anthropic_messages(body_with(J(R"({"tools": [{"name": "f", "input_schema": {}}]})")));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, ChatRole::System);
  EXPECT_TRUE(r.messages[0].content.empty());
  EXPECT_EQ(r.messages[0].tools.size(), 1u);
  EXPECT_TRUE(r.has_tools);
}

TEST(AnthropicParse, ToolChoice) {
  const char* tools = R"({"tools": [{"name": "f", "input_schema": {}}, {"name": "g", "input_schema": {}}]})";
  ojson body = body_with(J(tools));
  body["tool_choice"] = J(R"({"type": "any"})");
  EXPECT_EQ(parse_anthropic_messages(body).tool_choice, ToolChoice::required);
  body["tool_choice"] = J(R"({"type": "tool", "name": "g", "disable_parallel_tool_use": true})");
  ServeRequest r = parse_anthropic_messages(body);
  EXPECT_EQ(r.tool_choice, ToolChoice::named);
  EXPECT_EQ(r.tool_name, "g");
  body["tool_choice"] = J(R"({"type": "none"})");
  r = parse_anthropic_messages(body);
  EXPECT_EQ(r.tool_choice, ToolChoice::none);
  EXPECT_FALSE(r.has_tools);
  ASSERT_EQ(r.messages.size(), 1u);  // no tools in the prompt, no system message for them
  body["tool_choice"] = J(R"({"type": "tool", "name": "h"})");
  EXPECT_EQ(error_of([&] { parse_anthropic_messages(body); }).param(), "tool_choice.name");
}

TEST(AnthropicParse, Thinking) {
  EXPECT_FALSE(parse_anthropic_messages(body_with()).chat.thinking);
  ServeRequest r = parse_anthropic_messages(body_with(J(R"({"thinking": {"type": "enabled", "budget_tokens": 2048}})")));
  EXPECT_TRUE(r.chat.thinking);
  EXPECT_FALSE(r.chat.effort.has_value());
  EXPECT_FALSE(parse_anthropic_messages(body_with(J(R"({"thinking": {"type": "disabled"}})")))
                   .chat.thinking);
}

TEST(AnthropicParse, ImageBlocksAndUnsupportedBlocks) {
  ojson body = body_with();
  body["messages"] = J(R"([{"role": "user", "content": [
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
      {"type": "text", "text": "What is this?"},
      {"type": "document", "source": {"type": "text", "data": "x"}}]}])");
  ServeRequest r = parse_anthropic_messages(body);
  ASSERT_EQ(r.messages.size(), 1u);
  const auto& parts = r.messages[0].content;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].kind, ChatPart::Kind::Image);
  EXPECT_EQ(parts[0].image.source, R"({"type":"base64","media_type":"image/png","data":"iVBOR"})");
  EXPECT_EQ(parts[1].kind, ChatPart::Kind::Text);
  EXPECT_EQ(parts[2].kind, ChatPart::Kind::Unsupported);
  EXPECT_EQ(parts[2].text, "document");
}

TEST(AnthropicParse, FinalAssistantMessageIsAPrefill) {
  ojson body = body_with();
  body["messages"] = J(R"([{"role": "user", "content": "Count"}, {"role": "assistant", "content": "1, 2,"}])");
  ServeRequest r = parse_anthropic_messages(body);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].role, ChatRole::Assistant);
  EXPECT_TRUE(r.messages[1].wo_eos);
}

TEST(AnthropicParse, Errors) {
  ApiError e = error_of([&] { parse_anthropic_messages(J(R"({"messages": [{"role": "user", "content": "hi"}]})")); });
  EXPECT_EQ(e.kind(), ApiErrorKind::invalid_request);
  EXPECT_EQ(e.param(), "max_tokens");
  EXPECT_EQ(e.http_status(), 400);

  const std::pair<const char*, const char*> cases[] = {
      {R"({"max_tokens": 0})", "max_tokens"},
      {R"({"max_tokens": 10.5})", "max_tokens"},
      {R"({"max_tokens": "10"})", "max_tokens"},
      {R"({"model": 1})", "model"},
      {R"({"messages": {}})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [{"role": "system", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"text": "x"}]}]})", "messages[0].content[0].type"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]})",
       "messages[0].content[0].text"},
      {R"({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]})",
       "messages[0].content[0].type"},
      {R"({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]})",
       "messages[0].content[0].tool_use_id"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image"}]}]})", "messages[0].content[0].source"},
      {R"({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": 3}]}]})",
       "messages[0].content[0].input"},
      {R"({"messages": [{"role": "assistant", "content": [{"type": "image", "source": {}}]}]})",
       "messages[0].content[0].type"},
      {R"({"system": 5})", "system"},
      {R"({"system": [{"type": "image", "source": {}}]})", "system[0].type"},
      {R"({"temperature": 1.5})", "temperature"},
      {R"({"temperature": "warm"})", "temperature"},
      {R"({"top_p": 0})", "top_p"},
      {R"({"top_k": -1})", "top_k"},
      {R"({"stop_sequences": "x"})", "stop_sequences"},
      {R"({"stop_sequences": ["a", 1]})", "stop_sequences[1]"},
      {R"({"stream": "yes"})", "stream"},
      {R"({"tools": [{"name": "f"}]})", "tools[0].input_schema"},
      {R"({"tools": [{"name": "", "input_schema": {}}]})", "tools[0].name"},
      {R"({"tools": [{"type": "web_search_20250305", "name": "web_search"}]})", "tools[0].type"},
      {R"({"tool_choice": {"type": "any"}})", "tool_choice"},
      {R"({"tool_choice": {"type": "sometimes"}})", "tool_choice.type"},
      {R"({"tool_choice": "auto"})", "tool_choice"},
      {R"({"thinking": {"type": "sometimes"}})", "thinking.type"},
      {R"({"thinking": {"type": "enabled", "budget_tokens": 0}})", "thinking.budget_tokens"},
      {R"({"thinking": true})", "thinking"},
  };
  for (const auto& [extra, param] : cases) {
    ApiError err = error_of([&] { parse_anthropic_messages(body_with(J(extra))); });
    EXPECT_EQ(err.kind(), ApiErrorKind::invalid_request) << extra;
    EXPECT_EQ(err.param(), param) << extra << " -> " << err.what();
    EXPECT_EQ(std::string(err.what()).rfind(std::string(param) + ":", 0), 0u) << extra << " -> " << err.what();
  }
}

// ---- Errors ----

TEST(AnthropicErrors, JsonShapes) {
  EXPECT_EQ(anthropic_error_json(ApiError(ApiErrorKind::invalid_request, "max_tokens: is required", "max_tokens")),
            J(R"({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: is required"}})"));
  const std::pair<ApiErrorKind, const char*> kinds[] = {
      {ApiErrorKind::context_overflow, "invalid_request_error"}, {ApiErrorKind::authentication, "authentication_error"},
      {ApiErrorKind::not_found, "not_found_error"},              {ApiErrorKind::overloaded, "rate_limit_error"},
      {ApiErrorKind::server, "api_error"},
  };
  for (const auto& [kind, type] : kinds) EXPECT_EQ(anthropic_error_json(ApiError(kind, "m"))["error"]["type"], type);
}

// ---- Responses ----

ServeResult message_result() {
  ServeResult r;
  r.id = "msg_01XYZ";
  r.model = "deepseek-v4.1";
  r.parsed.reasoning_content = "Need the weather.";
  r.parsed.content = "Checking.";
  r.parsed.tool_calls.push_back({"get_weather", R"({"city": "Paris", "days": 2})", "", true});
  r.parsed.tool_calls.push_back({"get_time", "{}", "", true});
  r.finish = ServeFinish::tool_calls;
  r.usage = {11, 22};
  return r;
}

TEST(AnthropicResponse, BlocksInOrder) {
  ojson j = anthropic_message_response(message_result());
  ASSERT_NO_THROW(j.dump());
  EXPECT_EQ(j["id"], "msg_01XYZ");
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["role"], "assistant");
  EXPECT_EQ(j["model"], "deepseek-v4.1");
  const ojson& c = j["content"];
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0], J(R"({"type": "thinking", "thinking": "Need the weather.", "signature": ""})"));
  EXPECT_EQ(c[1], J(R"({"type": "text", "text": "Checking."})"));
  EXPECT_EQ(c[2], J(R"({"type": "tool_use", "id": "toolu_01XYZ_0", "name": "get_weather",
                        "input": {"city": "Paris", "days": 2}})"));
  EXPECT_EQ(c[3]["id"], "toolu_01XYZ_1");
  EXPECT_EQ(c[3]["input"], ojson::object());
  EXPECT_EQ(j["stop_reason"], "tool_use");
  EXPECT_TRUE(j["stop_sequence"].is_null());
  EXPECT_EQ(j["usage"], J(R"({"input_tokens": 11, "output_tokens": 22})"));
}

TEST(AnthropicResponse, StopReasons) {
  ServeResult r = message_result();
  r.parsed = {};
  r.parsed.content = "Done";
  r.finish = ServeFinish::stop;
  ojson j = anthropic_message_response(r);
  EXPECT_EQ(j["content"].size(), 1u);
  EXPECT_EQ(j["stop_reason"], "end_turn");
  EXPECT_TRUE(j["stop_sequence"].is_null());
  r.stop_sequence = "###";
  j = anthropic_message_response(r);
  EXPECT_EQ(j["stop_reason"], "stop_sequence");
  EXPECT_EQ(j["stop_sequence"], "###");
  r.stop_sequence.clear();
  r.finish = ServeFinish::length;
  EXPECT_EQ(anthropic_message_response(r)["stop_reason"], "max_tokens");
  r.parsed.content.clear();
  EXPECT_TRUE(anthropic_message_response(r)["content"].empty());  // no empty text block

  EXPECT_STREQ(anthropic_stop_reason(ServeFinish::tool_calls, false), "tool_use");
  EXPECT_STREQ(anthropic_stop_reason(ServeFinish::length, false), "max_tokens");
  EXPECT_STREQ(anthropic_stop_reason(ServeFinish::stop, true), "stop_sequence");
  EXPECT_STREQ(anthropic_stop_reason(ServeFinish::stop, false), "end_turn");
  EXPECT_STREQ(anthropic_stop_reason(ServeFinish::cancelled, false), "end_turn");
}

TEST(AnthropicResponse, InvalidUtf8StaysValidJson) {
  ServeResult r = message_result();
  r.parsed.content = "caf\xC3";  // a character cut in half
  r.parsed.tool_calls[1].arguments = "{\"s\": \"\xFF\"}";
  ojson j = anthropic_message_response(r);
  ASSERT_NO_THROW(j.dump());
  EXPECT_EQ(j["content"][1]["text"], "caf\xEF\xBF\xBD");
  EXPECT_EQ(j["content"][3]["input"]["s"], "\xEF\xBF\xBD");
}

// ---- Streaming ----

TEST(AnthropicStreamTest, ReasoningTextToolUseSequence) {
  AnthropicStream s("msg_s1", "deepseek-v4.1", 42);
  std::vector<SseEvent> ev = s.begin();
  auto add = [&](std::vector<SseEvent> more) {
    for (SseEvent& e : more) ev.push_back(std::move(e));
  };
  ParseDelta d;
  d.reasoning = "Let me ";
  add(s.delta(d));
  d = {};
  d.reasoning = "think.";
  add(s.delta(d));
  d = {};
  d.content = "Checking";
  add(s.delta(d));
  d = {};
  d.content = " now.";
  add(s.delta(d));
  const std::string args = R"({"city": "Paris"})";
  d = {};
  d.tool_calls.push_back(fragment(0, true, "get_weather", R"({"city": ")", false));
  add(s.delta(d));
  d = {};
  d.tool_calls.push_back(fragment(0, false, "", "Paris", false));
  add(s.delta(d));
  d = {};
  d.tool_calls.push_back(fragment(0, false, "", "\"}", true));
  add(s.delta(d));
  add(s.finish(ServeFinish::tool_calls, "", {42, 17}));

  // (event name, the index it carries or -1)
  std::vector<std::pair<std::string, int>> seq;
  for (const SseEvent& e : ev) seq.emplace_back(e.event, e.data.contains("index") ? e.data["index"].get<int>() : -1);
  const std::vector<std::pair<std::string, int>> want = {
      {"message_start", -1},
      {"content_block_start", 0}, {"content_block_delta", 0}, {"content_block_delta", 0},
      {"content_block_delta", 0},  // signature_delta
      {"content_block_stop", 0},
      {"content_block_start", 1}, {"content_block_delta", 1}, {"content_block_delta", 1}, {"content_block_stop", 1},
      {"content_block_start", 2}, {"content_block_delta", 2}, {"content_block_delta", 2},
      {"content_block_delta", 2}, {"content_block_stop", 2},
      {"message_delta", -1}, {"message_stop", -1},
  };
  EXPECT_EQ(seq, want);
  ASSERT_EQ(ev.size(), want.size());
  for (const SseEvent& e : ev) EXPECT_EQ(e.data["type"], e.event);  // the data's type names its event

  const ojson& start = ev[0].data["message"];
  EXPECT_EQ(start["id"], "msg_s1");
  EXPECT_EQ(start["role"], "assistant");
  EXPECT_EQ(start["model"], "deepseek-v4.1");
  EXPECT_TRUE(start["content"].empty());
  EXPECT_TRUE(start["stop_reason"].is_null());
  EXPECT_EQ(start["usage"], J(R"({"input_tokens": 42, "output_tokens": 0})"));

  EXPECT_EQ(ev[1].data["content_block"], J(R"({"type": "thinking", "thinking": "", "signature": ""})"));
  EXPECT_EQ(ev[2].data["delta"], J(R"({"type": "thinking_delta", "thinking": "Let me "})"));
  EXPECT_EQ(ev[3].data["delta"]["thinking"], "think.");
  EXPECT_EQ(ev[4].data["delta"], J(R"({"type": "signature_delta", "signature": ""})"));
  EXPECT_EQ(ev[6].data["content_block"], J(R"({"type": "text", "text": ""})"));
  EXPECT_EQ(ev[7].data["delta"]["type"], "text_delta");
  EXPECT_EQ(ev[7].data["delta"]["text"].get<std::string>() + ev[8].data["delta"]["text"].get<std::string>(),
            "Checking now.");
  EXPECT_EQ(ev[10].data["content_block"],
            J(R"({"type": "tool_use", "id": "toolu_s1_0", "name": "get_weather", "input": {}})"));
  std::string partial;
  for (std::size_t i = 11; i <= 13; ++i) {
    EXPECT_EQ(ev[i].data["delta"]["type"], "input_json_delta");
    partial += ev[i].data["delta"]["partial_json"].get<std::string>();
  }
  EXPECT_EQ(partial, args);
  EXPECT_EQ(ev[15].data, J(R"({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                               "usage": {"output_tokens": 17}})"));
  EXPECT_EQ(ev[16].data, J(R"({"type": "message_stop"})"));

  // The wire form of one event.
  EXPECT_EQ(ev[16].wire(), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

TEST(AnthropicStreamTest, MixedDeltaAndStopSequence) {
  AnthropicStream s("msg_s2", "m", 1);
  ParseDelta d;
  d.reasoning = "r";
  d.content = "c";  // both in one feed: the thinking block closes before the text block opens
  std::vector<SseEvent> ev = s.delta(d);
  std::vector<std::string> names;
  for (const SseEvent& e : ev) names.push_back(e.event);
  EXPECT_EQ(names, (std::vector<std::string>{"content_block_start", "content_block_delta", "content_block_delta",
                                             "content_block_stop", "content_block_start", "content_block_delta"}));
  std::vector<SseEvent> fin = s.finish(ServeFinish::stop, "###", {1, 3});
  ASSERT_EQ(fin.size(), 3u);
  EXPECT_EQ(fin[0].event, "content_block_stop");
  EXPECT_EQ(fin[0].data["index"], 1);
  EXPECT_EQ(fin[1].data["delta"], J(R"({"stop_reason": "stop_sequence", "stop_sequence": "###"})"));
  EXPECT_EQ(fin[2].event, "message_stop");
}

TEST(AnthropicStreamTest, WholeCallsAndStopUpgrade) {
  AnthropicStream s("msg_s3", "m", 1);
  ParseDelta d;
  d.tool_calls.push_back(fragment(0, true, "f", "{}", true));
  d.tool_calls.push_back(fragment(1, true, "g", R"({"x": 1})", true));
  std::vector<SseEvent> ev = s.delta(d);
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[0].data["content_block"]["id"], "toolu_s3_0");
  EXPECT_EQ(ev[3].data["content_block"]["id"], "toolu_s3_1");
  EXPECT_EQ(ev[3].data["index"], 1);
  EXPECT_EQ(ev[4].data["delta"]["partial_json"], R"({"x": 1})");
  std::vector<SseEvent> fin = s.finish(ServeFinish::stop, "", {1, 2});
  ASSERT_EQ(fin.size(), 2u);  // nothing open
  EXPECT_EQ(fin[0].data["delta"]["stop_reason"], "tool_use");
}

}  // namespace
}  // namespace dsv4::serve

namespace dsv4::serve {
namespace {

// The blocks a client rebuilds from the stream's events (ids dropped: each response has its own).
ojson blocks_from_events(const std::vector<SseEvent>& events) {
  ojson blocks = ojson::array();
  std::vector<std::string> json(16);
  for (const SseEvent& e : events) {
    if (e.event == "content_block_start") {
      ojson b = e.data["content_block"];
      b.erase("id");
      blocks.push_back(b);
    } else if (e.event == "content_block_delta") {
      const std::size_t i = e.data["index"];
      const ojson& d = e.data["delta"];
      if (d["type"] == "thinking_delta") blocks[i]["thinking"] = blocks[i]["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      if (d["type"] == "text_delta") blocks[i]["text"] = blocks[i]["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "input_json_delta") json[i] += d["partial_json"].get<std::string>();
    } else if (e.event == "content_block_stop") {
      const std::size_t i = e.data["index"];
      if (blocks[i]["type"] == "tool_use") blocks[i]["input"] = ojson::parse(json[i]);
    }
  }
  return blocks;
}

TEST(AnthropicStreamTest, StreamAndMessageListTheSameBlocksWhateverTheChunking) {
  // Reasoning, text, a call, then text after the calls block (the lenient parse keeps it): in one
  // feed all of it is one delta, whose order only its spans tell.
  const std::string out =
      "Let me look.</think>Checking.\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"get_weather\">\n"
      "<｜DSML｜ parameter name=\"city\" string=\"true\">Paris</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n"
      "</｜DSML｜ calls>And after.";
  for (const std::size_t chunk : {out.size(), std::size_t{1}, std::size_t{7}}) {
    for (const CallStreaming mode : {CallStreaming::whole_invoke, CallStreaming::incremental}) {
      OutputParserOptions po;
      po.call_streaming = mode;
      OutputParser p(po);
      AnthropicStream s("msg_o1", "m", 3);
      std::vector<SseEvent> ev = s.begin();
      for (std::size_t i = 0; i < out.size(); i += chunk) {
        const auto d = s.delta(p.feed(out.substr(i, chunk)));
        ev.insert(ev.end(), d.begin(), d.end());
      }
      const auto d = s.delta(p.finish());
      ev.insert(ev.end(), d.begin(), d.end());
      ServeResult r;
      r.id = "msg_o1";
      r.parsed = p.result();
      ojson message = anthropic_message_response(r)["content"];
      for (ojson& b : message) b.erase("id");
      EXPECT_EQ(blocks_from_events(ev), message) << "chunk " << chunk;
      ASSERT_EQ(message.size(), 4u);
      EXPECT_EQ(message[2]["type"], "tool_use");
      EXPECT_EQ(message[3], J(R"({"type": "text", "text": "And after."})"));
    }
  }
}

}  // namespace
}  // namespace dsv4::serve
