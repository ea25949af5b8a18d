// The OpenAI translation layer: request bodies → ServeRequest, results → response JSON, and the
// streamed chunk sequence.
#include "serve/openai_api.h"

#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.h"

namespace dsv4::serve {
namespace {

using api_test::error_of;
using api_test::fragment;
using api_test::J;
using api_test::ojson;

// A minimal valid chat body with `extra`'s fields merged in.
ojson chat_body(const ojson& extra = ojson::object()) {
  return api_test::merged(J(R"({"messages": [{"role": "user", "content": "hi"}]})"), extra);
}

std::string text_of(const ChatMessage& m) {
  std::string s;
  for (const ChatPart& p : m.content) s += p.text;
  return s;
}

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
])";

// ---- Requests ----

TEST(OpenAIChatParse, FullRequestRoundTrip) {
  ojson body = J(R"({
    "model": "deepseek-v4.1",
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}],
    "tool_choice": "auto",
    "reasoning_effort": "max",
    "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 42,
    "stop": ["END", "STOP"],
    "max_tokens": 100, "max_completion_tokens": 200,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1,
    "logprobs": true, "top_logprobs": 5,
    "response_format": {"type": "json_object"},
    "stream": true, "stream_options": {"include_usage": true},
    "n": 1, "user": "ignored-field"
  })");
  body["tools"] = J(kTools);
  ServeRequest r = parse_openai_chat(body);
  EXPECT_EQ(r.api, ApiKind::openai_chat);
  EXPECT_EQ(r.model, "deepseek-v4.1");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, ChatRole::System);
  EXPECT_EQ(text_of(r.messages[0]), "Be brief.");
  ASSERT_EQ(r.messages[0].tools.size(), 2u);
  EXPECT_EQ(r.messages[0].tools[0], body["tools"][0]["function"]);
  EXPECT_EQ(r.messages[0].tools[1], body["tools"][1]["function"]);
  ASSERT_TRUE(r.messages[0].response_format.has_value());
  EXPECT_EQ(*r.messages[0].response_format, J(R"({"type": "json_object"})"));
  EXPECT_TRUE(r.json_object);
  EXPECT_EQ(r.messages[1].role, ChatRole::User);
  EXPECT_TRUE(r.has_tools);
  EXPECT_EQ(r.tool_choice, ToolChoice::automatic);
  EXPECT_TRUE(r.chat.thinking);
  ASSERT_TRUE(r.chat.effort.has_value());
  EXPECT_EQ(r.chat.effort->value, 100);
  EXPECT_DOUBLE_EQ(r.gen.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.gen.sampling.top_p, 0.9);
  EXPECT_EQ(r.gen.sampling.top_k, 40u);
  EXPECT_DOUBLE_EQ(r.gen.sampling.min_p, 0.05);
  EXPECT_EQ(r.gen.sampling.seed, 42u);
  EXPECT_DOUBLE_EQ(r.gen.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(r.gen.sampling.frequency_penalty, -0.5);
  EXPECT_DOUBLE_EQ(r.gen.sampling.repetition_penalty, 1.1);
  EXPECT_EQ(r.gen.stop_strings, (std::vector<std::string>{"END", "STOP"}));
  EXPECT_EQ(r.gen.max_new_tokens, 200u);  // max_completion_tokens wins
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 5u);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(OpenAIChatParse, Defaults) {
  ServeRequest r = parse_openai_chat(chat_body());
  EXPECT_EQ(r.model, "");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_FALSE(r.chat.thinking);
  EXPECT_FALSE(r.chat.effort.has_value());
  EXPECT_FALSE(r.has_tools);
  EXPECT_DOUBLE_EQ(r.gen.sampling.temperature, 1.0);
  EXPECT_EQ(r.gen.sampling.top_k, 0u);
  EXPECT_EQ(r.gen.max_new_tokens, 0u);
  EXPECT_FALSE(r.max_tokens_given);
  EXPECT_TRUE(r.gen.stop_strings.empty());
  EXPECT_FALSE(r.logprobs);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.json_object);
}

TEST(OpenAIChatParse, NullFieldsAreAbsent) {
  ServeRequest r = parse_openai_chat(chat_body(J(R"({"temperature": null, "stop": null, "max_tokens": null,
      "tools": null, "tool_choice": null, "stream_options": null, "n": null, "seed": null})")));
  EXPECT_DOUBLE_EQ(r.gen.sampling.temperature, 1.0);
  EXPECT_FALSE(r.max_tokens_given);
  EXPECT_EQ(r.messages.size(), 1u);
}

TEST(OpenAIChatParse, StopStringAndTopKOff) {
  ServeRequest r = parse_openai_chat(chat_body(J(R"({"stop": "\n\n", "top_k": -1, "max_tokens": 7})")));
  EXPECT_EQ(r.gen.stop_strings, (std::vector<std::string>{"\n\n"}));
  EXPECT_EQ(r.gen.sampling.top_k, 0u);
  EXPECT_EQ(r.gen.max_new_tokens, 7u);
}

TEST(OpenAIChatParse, ToolsGoOnExistingLeadingSystemMessage) {
  ojson body = J(R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]})");
  body["tools"] = J(kTools);
  ServeRequest r = parse_openai_chat(body);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(text_of(r.messages[0]), "S");
  ASSERT_EQ(r.messages[0].tools.size(), 2u);
  EXPECT_EQ(r.messages[0].tools[0]["name"], "get_weather");
  EXPECT_TRUE(r.messages[1].tools.empty());
  EXPECT_TRUE(r.has_tools);
}

TEST(OpenAIChatParse, ToolsInsertAnEmptySystemMessage) {
  ojson body = chat_body();
  body["tools"] = J(kTools);
  ServeRequest r = parse_openai_chat(body);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, ChatRole::System);
  EXPECT_TRUE(r.messages[0].content.empty());
  ASSERT_EQ(r.messages[0].tools.size(), 2u);
  EXPECT_EQ(r.messages[0].tools[1]["name"], "get_time");
  EXPECT_EQ(r.messages[1].role, ChatRole::User);
  EXPECT_EQ(text_of(r.messages[1]), "hi");
}

TEST(OpenAIChatParse, ToolsDoNotGoOnAMidConversationSystemMessage) {
  ojson body = J(R"({"messages": [{"role": "user", "content": "U"}, {"role": "system", "content": "late"}]})");
  body["tools"] = J(kTools);
  ServeRequest r = parse_openai_chat(body);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, ChatRole::System);
  EXPECT_EQ(r.messages[0].tools.size(), 2u);
  EXPECT_TRUE(r.messages[2].tools.empty());
}

TEST(OpenAIChatParse, ToolChoiceNoneKeepsToolsOutOfThePrompt) {
  ojson body = chat_body(J(R"({"tool_choice": "none"})"));
  body["tools"] = J(kTools);
  ServeRequest r = parse_openai_chat(body);
  EXPECT_EQ(r.tool_choice, ToolChoice::none);
  EXPECT_FALSE(r.has_tools);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_TRUE(r.messages[0].tools.empty());
}

TEST(OpenAIChatParse, NamedToolChoice) {
  ojson body = chat_body(J(R"({"tool_choice": {"type": "function", "function": {"name": "get_time"}}})"));
  body["tools"] = J(kTools);
  ServeRequest r = parse_openai_chat(body);
  EXPECT_EQ(r.tool_choice, ToolChoice::named);
  EXPECT_EQ(r.tool_name, "get_time");
  EXPECT_TRUE(r.has_tools);

  body["tool_choice"]["function"]["name"] = "launch_rockets";
  ApiError e = error_of([&] { parse_openai_chat(body); });
  EXPECT_EQ(e.kind(), ApiErrorKind::invalid_request);
  EXPECT_EQ(e.param(), "tool_choice");
  EXPECT_NE(std::string(e.what()).find("launch_rockets"), std::string::npos);
}

TEST(OpenAIChatParse, RequiredToolChoiceNeedsTools) {
  ApiError e = error_of([&] { parse_openai_chat(chat_body(J(R"({"tool_choice": "required"})"))); });
  EXPECT_EQ(e.param(), "tool_choice");
  ojson body = chat_body(J(R"({"tool_choice": "required"})"));
  body["tools"] = J(kTools);
  EXPECT_EQ(parse_openai_chat(body).tool_choice, ToolChoice::required);
}

TEST(OpenAIChatParse, StreamOptionsNeedStream) {
  for (const char* extra : {R"({"stream_options": {"include_usage": true}})",
                            R"({"stream": false, "stream_options": {"include_usage": true}})"}) {
    ApiError e = error_of([&] { parse_openai_chat(chat_body(J(extra))); });
    EXPECT_EQ(e.param(), "stream_options") << extra;
    EXPECT_EQ(e.http_status(), 400);
  }
}

TEST(OpenAIChatParse, TopLogprobsNeedLogprobs) {
  for (const char* extra : {R"({"top_logprobs": 3})", R"({"logprobs": false, "top_logprobs": 3})"}) {
    ApiError e = error_of([&] { parse_openai_chat(chat_body(J(extra))); });
    EXPECT_EQ(e.param(), "top_logprobs") << extra;
  }
  ServeRequest r = parse_openai_chat(chat_body(J(R"({"logprobs": true})")));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 0u);
}

TEST(OpenAIChatParse, ReasoningEffortMapping) {
  struct Case {
    const char* extra;
    bool thinking;
    int effort;  // 0: none set
  };
  const Case cases[] = {
      {R"({})", false, 0},
      {R"({"reasoning_effort": "none"})", false, 0},
      {R"({"reasoning_effort": "minimal"})", true, 50},
      {R"({"reasoning_effort": "low"})", true, 50},
      {R"({"reasoning_effort": "medium"})", true, 75},
      {R"({"reasoning_effort": "high"})", true, 75},
      {R"({"reasoning_effort": "xhigh"})", true, 75},
      {R"({"reasoning_effort": "max"})", true, 100},
      {R"({"chat_template_kwargs": {"thinking": true}})", true, 0},
      {R"({"chat_template_kwargs": {"enable_thinking": true}})", true, 0},
      {R"({"chat_template_kwargs": {"reasoning_effort": 30}})", true, 30},
      {R"({"chat_template_kwargs": {"reasoning_effort": "low", "thinking": false}})", false, 50},
      {R"({"chat_template_kwargs": {"reasoning_effort": 30}, "reasoning_effort": "max"})", true, 100},
      {R"({"chat_template_kwargs": {"thinking": true}, "reasoning_effort": "none"})", false, 0},
      {R"({"reasoning_effort": "high", "chat_template_kwargs": {"thinking": false}})", false, 75},
      {R"({"thinking": {"type": "enabled"}})", true, 0},
      {R"({"thinking": {"type": "disabled"}, "reasoning_effort": "low"})", false, 50},
  };
  for (const Case& c : cases) {
    ServeRequest r = parse_openai_chat(chat_body(J(c.extra)));
    EXPECT_EQ(r.chat.thinking, c.thinking) << c.extra;
    if (c.effort == 0) {
      EXPECT_FALSE(r.chat.effort.has_value()) << c.extra;
    } else {
      ASSERT_TRUE(r.chat.effort.has_value()) << c.extra;
      EXPECT_EQ(r.chat.effort->value, c.effort) << c.extra;
    }
  }
}

TEST(OpenAIChatParse, ResponseFormat) {
  ServeRequest r = parse_openai_chat(chat_body(J(R"({"response_format": {"type": "json_object"}})")));
  EXPECT_TRUE(r.json_object);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, ChatRole::System);
  EXPECT_EQ(r.messages[0].response_format, J(R"({"type": "json_object"})"));

  r = parse_openai_chat(chat_body(J(R"({"response_format": {"type": "text"}})")));
  EXPECT_FALSE(r.json_object);
  EXPECT_EQ(r.messages.size(), 1u);

  ApiError e = error_of([&] {
    parse_openai_chat(chat_body(J(R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})")));
  });
  EXPECT_EQ(e.param(), "response_format.type");
  EXPECT_NE(std::string(e.what()).find("json_schema is not supported"), std::string::npos) << e.what();
}

TEST(OpenAIChatParse, MessageErrorsNameTheField) {
  ApiError e = error_of([&] { parse_openai_chat(J(R"({"messages": [{"role": "user", "content": 5}]})")); });
  EXPECT_EQ(e.kind(), ApiErrorKind::invalid_request);
  EXPECT_EQ(e.param(), "messages[0].content");
  EXPECT_EQ(std::string(e.what()).rfind("messages[0].content: ", 0), 0u) << e.what();

  e = error_of([&] { parse_openai_chat(J(R"({"model": "x"})")); });
  EXPECT_EQ(e.param(), "messages");
  e = error_of([&] { parse_openai_chat(J(R"([1, 2])")); });
  EXPECT_EQ(e.kind(), ApiErrorKind::invalid_request);
}

// Every known field of the wrong type or out of range is an invalid_request naming it.
TEST(OpenAIChatParse, WrongFieldsNameTheirParam) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model": 5})", "model"},
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"temperature": "hot"})", "temperature"},
      {R"({"temperature": true})", "temperature"},
      {R"({"temperature": 2.5})", "temperature"},
      {R"({"temperature": -0.1})", "temperature"},
      {R"({"top_p": 0})", "top_p"},
      {R"({"top_p": 1.5})", "top_p"},
      {R"({"top_p": "all"})", "top_p"},
      {R"({"top_k": 1.5})", "top_k"},
      {R"({"top_k": -2})", "top_k"},
      {R"({"min_p": 2})", "min_p"},
      {R"({"seed": "x"})", "seed"},
      {R"({"seed": 1.5})", "seed"},
      {R"({"presence_penalty": 3})", "presence_penalty"},
      {R"({"frequency_penalty": "a"})", "frequency_penalty"},
      {R"({"repetition_penalty": 0})", "repetition_penalty"},
      {R"({"stop": 5})", "stop"},
      {R"({"stop": ""})", "stop"},
      {R"({"stop": ["a", ""]})", "stop[1]"},
      {R"({"stop": ["a", 2]})", "stop[1]"},
      {R"({"stop": ["a", "b", "c", "d", "e"]})", "stop"},
      {R"({"max_tokens": 2.0})", "max_tokens"},
      {R"({"max_tokens": 0})", "max_tokens"},
      {R"({"max_tokens": -5})", "max_tokens"},
      {R"({"max_completion_tokens": "10"})", "max_completion_tokens"},
      {R"({"logprobs": "yes"})", "logprobs"},
      {R"({"logprobs": true, "top_logprobs": 21})", "top_logprobs"},
      {R"({"logprobs": true, "top_logprobs": 2.5})", "top_logprobs"},
      {R"({"stream": 1})", "stream"},
      {R"({"stream": true, "stream_options": 5})", "stream_options"},
      {R"({"stream": true, "stream_options": {"include_usage": "y"}})", "stream_options.include_usage"},
      {R"({"n": 2})", "n"},
      {R"({"n": 1.0})", "n"},
      {R"({"tools": "x"})", "tools"},
      {R"({"tools": [5]})", "tools[0]"},
      {R"({"tools": [{"type": "retrieval"}]})", "tools[0].type"},
      {R"({"tools": [{"type": "function"}]})", "tools[0].function"},
      {R"({"tools": [{"type": "function", "function": {"name": ""}}]})", "tools[0].function.name"},
      {R"({"tools": [{"type": "function", "function": {"name": 3}}]})", "tools[0].function.name"},
      {R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]})",
       "tools[0].function.parameters"},
      {R"({"tool_choice": 5})", "tool_choice"},
      {R"({"tool_choice": "sometimes"})", "tool_choice"},
      {R"({"tool_choice": {"type": "function", "function": {}}})", "tool_choice.function.name"},
      {R"({"reasoning_effort": "extreme"})", "reasoning_effort"},
      {R"({"reasoning_effort": 5})", "reasoning_effort"},
      {R"({"chat_template_kwargs": 1})", "chat_template_kwargs"},
      {R"({"chat_template_kwargs": {"thinking": "yes"}})", "chat_template_kwargs.thinking"},
      {R"({"chat_template_kwargs": {"reasoning_effort": 0}})", "chat_template_kwargs.reasoning_effort"},
      {R"({"chat_template_kwargs": {"reasoning_effort": 2.5}})", "chat_template_kwargs.reasoning_effort"},
      {R"({"thinking": {"type": "maybe"}})", "thinking.type"},
      {R"({"response_format": "json"})", "response_format"},
      {R"({"response_format": {"type": "yaml"}})", "response_format.type"},
  };
  for (const auto& [extra, param] : cases) {
    ApiError e = error_of([&] { parse_openai_chat(chat_body(J(extra))); });
    EXPECT_EQ(e.kind(), ApiErrorKind::invalid_request) << extra;
    EXPECT_EQ(e.param(), param) << extra << " -> " << e.what();
    EXPECT_EQ(e.http_status(), 400) << extra;
    EXPECT_EQ(std::string(e.what()).rfind(std::string(param) + ":", 0), 0u) << extra << " -> " << e.what();
  }
}

TEST(OpenAICompletionParse, Prompt) {
  ServeRequest r = parse_openai_completion(J(R"({"prompt": "Once upon", "max_tokens": 16, "stop": "\n"})"));
  EXPECT_EQ(r.api, ApiKind::openai_completion);
  EXPECT_EQ(r.prompt_text, "Once upon");
  EXPECT_TRUE(r.messages.empty());
  EXPECT_EQ(r.gen.max_new_tokens, 16u);
  EXPECT_EQ(r.gen.stop_strings, (std::vector<std::string>{"\n"}));
  EXPECT_FALSE(r.logprobs);

  EXPECT_EQ(parse_openai_completion(J(R"({"prompt": ["one"]})")).prompt_text, "one");

  for (const char* body : {R"({"prompt": [1, 2, 3]})", R"({"prompt": [[1, 2]]})"}) {
    ApiError e = error_of([&] { parse_openai_completion(J(body)); });
    EXPECT_EQ(e.param(), "prompt");
    EXPECT_NE(std::string(e.what()).find("token-id prompts are not supported"), std::string::npos) << e.what();
  }
  EXPECT_EQ(error_of([&] { parse_openai_completion(J(R"({"prompt": ["a", "b"]})")); }).param(), "prompt");
  EXPECT_EQ(error_of([&] { parse_openai_completion(J(R"({"max_tokens": 3})")); }).param(), "prompt");
  EXPECT_EQ(error_of([&] { parse_openai_completion(J(R"({"prompt": 5})")); }).param(), "prompt");
}

TEST(OpenAICompletionParse, LogprobsEchoAndStream) {
  ServeRequest r = parse_openai_completion(J(R"({"prompt": "x", "logprobs": 3})"));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 3u);
  r = parse_openai_completion(J(R"({"prompt": "x", "logprobs": 0})"));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 0u);
  r = parse_openai_completion(J(R"({"prompt": "x", "logprobs": null, "echo": false})"));
  EXPECT_FALSE(r.logprobs);

  EXPECT_EQ(error_of([&] { parse_openai_completion(J(R"({"prompt": "x", "logprobs": true})")); }).param(), "logprobs");
  EXPECT_EQ(error_of([&] { parse_openai_completion(J(R"({"prompt": "x", "logprobs": 6})")); }).param(), "logprobs");
  EXPECT_EQ(error_of([&] { parse_openai_completion(J(R"({"prompt": "x", "echo": true})")); }).param(), "echo");
  EXPECT_EQ(error_of([&] { parse_openai_completion(J(R"({"prompt": "x", "stream_options": {}})")); }).param(),
            "stream_options");
  r = parse_openai_completion(J(R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": true}})"));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(error_of([&] { parse_openai_completion(J(R"({"prompt": "x", "temperature": "warm"})")); }).param(),
            "temperature");
}

// ---- Errors ----

TEST(OpenAIErrors, JsonShapes) {
  ojson j = openai_error_json(ApiError(ApiErrorKind::invalid_request, "temperature: must be a number", "temperature"));
  EXPECT_EQ(j, J(R"({"error": {"message": "temperature: must be a number", "type": "invalid_request_error",
                               "param": "temperature", "code": null}})"));
  j = openai_error_json(ApiError(ApiErrorKind::context_overflow, "too long"));
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], "context_length_exceeded");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(openai_error_json(ApiError(ApiErrorKind::authentication, "no key"))["error"]["type"], "authentication_error");
  EXPECT_EQ(openai_error_json(ApiError(ApiErrorKind::not_found, "no model"))["error"]["type"], "not_found_error");
  EXPECT_EQ(openai_error_json(ApiError(ApiErrorKind::overloaded, "busy"))["error"]["type"], "rate_limit_error");
  EXPECT_EQ(openai_error_json(ApiError(ApiErrorKind::server, "boom"))["error"]["type"], "server_error");
  // A message quoting invalid client bytes still dumps.
  EXPECT_NO_THROW(openai_error_json(ApiError(ApiErrorKind::invalid_request, "bad \xFF byte")).dump());
}

TEST(OpenAIErrors, HttpStatus) {
  EXPECT_EQ(ApiError(ApiErrorKind::invalid_request, "").http_status(), 400);
  EXPECT_EQ(ApiError(ApiErrorKind::authentication, "").http_status(), 401);
  EXPECT_EQ(ApiError(ApiErrorKind::not_found, "").http_status(), 404);
  EXPECT_EQ(ApiError(ApiErrorKind::context_overflow, "").http_status(), 400);
  EXPECT_EQ(ApiError(ApiErrorKind::overloaded, "").http_status(), 429);
  EXPECT_EQ(ApiError(ApiErrorKind::server, "").http_status(), 500);
}

// ---- Responses ----

ServeResult chat_result() {
  ServeResult r;
  r.id = "chatcmpl-abc123";
  r.created = 1700000000;
  r.model = "deepseek-v4.1";
  r.parsed.reasoning_content = "The user wants weather and time.";
  r.parsed.content = "Checking.";
  r.parsed.tool_calls.push_back({"get_weather", R"({"city": "Paris"})", "", true});
  r.parsed.tool_calls.push_back({"get_time", R"({"tz": "CET"})", "", true});
  r.finish = ServeFinish::tool_calls;
  r.usage = {12, 34};
  return r;
}

TEST(OpenAIResponse, ChatWithReasoningContentAndToolCalls) {
  ojson j = openai_chat_response(chat_result());
  EXPECT_EQ(j["id"], "chatcmpl-abc123");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "deepseek-v4.1");
  ASSERT_EQ(j["choices"].size(), 1u);
  const ojson& c = j["choices"][0];
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_TRUE(c["logprobs"].is_null());
  const ojson& m = c["message"];
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["content"], "Checking.");
  EXPECT_EQ(m["reasoning_content"], "The user wants weather and time.");
  ASSERT_EQ(m["tool_calls"].size(), 2u);
  EXPECT_EQ(m["tool_calls"][0], J(R"({"id": "call_abc123_0", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}})"));
  EXPECT_EQ(m["tool_calls"][1]["id"], "call_abc123_1");
  EXPECT_EQ(m["tool_calls"][1]["function"]["name"], "get_time");
  EXPECT_EQ(j["usage"], J(R"({"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46})"));
  EXPECT_EQ(tool_call_id("chatcmpl-abc123", 1), "call_abc123_1");
}

TEST(OpenAIResponse, ContentNullOnlyForPureToolCallTurns) {
  ServeResult r = chat_result();
  r.parsed.content.clear();
  r.parsed.reasoning_content.clear();
  ojson m = openai_chat_response(r)["choices"][0]["message"];
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_FALSE(m.contains("reasoning_content"));

  r.parsed.tool_calls.clear();
  r.finish = ServeFinish::stop;
  ojson j = openai_chat_response(r);
  m = j["choices"][0]["message"];
  EXPECT_EQ(m["content"], "");
  EXPECT_FALSE(m.contains("tool_calls"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST(OpenAIResponse, FinishReasons) {
  EXPECT_STREQ(openai_finish_reason(ServeFinish::stop), "stop");
  EXPECT_STREQ(openai_finish_reason(ServeFinish::length), "length");
  EXPECT_STREQ(openai_finish_reason(ServeFinish::tool_calls), "tool_calls");
  EXPECT_STREQ(openai_finish_reason(ServeFinish::cancelled), "stop");
  // A normal stop after tool calls reports tool_calls; a length cut stays length.
  ServeResult r = chat_result();
  r.finish = ServeFinish::stop;
  EXPECT_EQ(openai_chat_response(r)["choices"][0]["finish_reason"], "tool_calls");
  r.finish = ServeFinish::length;
  EXPECT_EQ(openai_chat_response(r)["choices"][0]["finish_reason"], "length");
}

TEST(OpenAIResponse, LogprobsWithInvalidUtf8StayValidJson) {
  ServeResult r = chat_result();
  // "你" is E4 BD A0: a token holding its first two bytes, and one holding a lone 0xFF.
  ServeToken t1{1, "\xE4\xBD", -0.5, {{"\xE4\xBD", -0.5}, {"\xFF", -2.0}}};
  ServeToken t2{2, "ok", -std::numeric_limits<double>::infinity(), {}};
  r.tokens = {t1, t2};
  r.parsed.content = "bad \xFF byte";
  ojson j = openai_chat_response(r);
  std::string dumped;
  ASSERT_NO_THROW(dumped = j.dump());
  ojson back = ojson::parse(dumped);
  const ojson& lp = back["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_EQ(lp[0]["token"], "\xEF\xBF\xBD");  // U+FFFD
  EXPECT_EQ(lp[0]["bytes"], J("[228, 189]"));
  EXPECT_DOUBLE_EQ(lp[0]["logprob"].get<double>(), -0.5);
  ASSERT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(lp[0]["top_logprobs"][1]["bytes"], J("[255]"));
  EXPECT_EQ(lp[0]["top_logprobs"][1]["token"], "\xEF\xBF\xBD");
  EXPECT_DOUBLE_EQ(lp[0]["top_logprobs"][1]["logprob"].get<double>(), -2.0);
  EXPECT_EQ(lp[1]["token"], "ok");
  EXPECT_DOUBLE_EQ(lp[1]["logprob"].get<double>(), -9999.0);  // -inf is not JSON
  EXPECT_TRUE(lp[1]["top_logprobs"].empty());
  EXPECT_EQ(back["choices"][0]["message"]["content"], "bad \xEF\xBF\xBD byte");
}

TEST(OpenAIResponse, CompletionWithLogprobsAndTextOffsets) {
  ServeResult r;
  r.id = "cmpl-xyz";
  r.created = 5;
  r.model = "m";
  r.text = "Hello \xE4\xBD\xA0!";
  r.finish = ServeFinish::length;
  r.usage = {3, 5};
  r.tokens = {{1, "Hel", -0.1, {{"Hel", -0.1}, {"He", -3.0}}},
              {2, "lo", -0.2, {}},
              {3, " \xE4", -0.3, {}},
              {4, "\xBD\xA0", -0.4, {}},
              {5, "!", -0.5, {}}};
  ojson j = openai_completion_response(r);
  ASSERT_NO_THROW(j.dump());
  EXPECT_EQ(j["object"], "text_completion");
  const ojson& c = j["choices"][0];
  EXPECT_EQ(c["text"], "Hello 你!");
  EXPECT_EQ(c["finish_reason"], "length");
  const ojson& lp = c["logprobs"];
  EXPECT_EQ(lp["tokens"].size(), 5u);
  EXPECT_EQ(lp["tokens"][0], "Hel");
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][3].get<double>(), -0.4);
  EXPECT_EQ(lp["top_logprobs"][0], J(R"({"Hel": -0.1, "He": -3.0})"));
  // The split character 你 is at index 6 of "Hello 你!": the token completing it points there.
  EXPECT_EQ(lp["text_offset"], J("[0, 3, 5, 6, 7]"));
  EXPECT_EQ(j["usage"]["total_tokens"], 8);

  r.tokens.clear();
  EXPECT_TRUE(openai_completion_response(r)["choices"][0]["logprobs"].is_null());
}

// ---- Streaming ----

TEST(OpenAIChatStreamTest, ChunkSequence) {
  OpenAIChatStream s("chatcmpl-s1", 77, "deepseek-v4.1", /*include_usage=*/true);
  std::vector<ojson> chunks;
  chunks.push_back(s.begin());
  auto add = [&](std::vector<ojson> cs) {
    for (ojson& c : cs) chunks.push_back(std::move(c));
  };
  ParseDelta d;
  d.reasoning = "Let me ";
  add(s.delta(d, {}));
  d = {};
  d.reasoning = "think.";
  d.content = "Calling";  // reasoning and content committed by one feed
  add(s.delta(d, {{9, "Calling", -0.25, {}}}));
  d = {};
  add(s.delta(d, {{10, "<", -0.5, {}}}));  // markup held back: logprobs alone
  d = {};
  d.content = " tools.";
  add(s.delta(d, {}));
  const std::string args0 = R"({"city": "Paris"})";
  d = {};
  d.tool_calls.push_back(fragment(0, true, "get_weather", R"({"city": ")", false));
  add(s.delta(d, {}));
  d = {};
  d.tool_calls.push_back(fragment(0, false, "", "Paris", false));
  add(s.delta(d, {}));
  d = {};
  d.tool_calls.push_back(fragment(0, false, "", "\"}", true));
  d.tool_calls.push_back(fragment(1, true, "get_time", "{}", true));  // a whole call in one fragment
  add(s.delta(d, {}));
  add(s.finish(ServeFinish::tool_calls, {10, 20}));

  ASSERT_GE(chunks.size(), 3u);
  // The role chunk first.
  EXPECT_EQ(chunks[0]["choices"][0]["delta"], J(R"({"role": "assistant", "content": ""})"));
  std::string reasoning, content;
  std::map<std::size_t, std::string> args;
  std::map<std::size_t, int> heads;  // fragments carrying id/name per call
  int logprob_chunks = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const ojson& c = chunks[i];
    ASSERT_NO_THROW(c.dump());
    EXPECT_EQ(c["id"], "chatcmpl-s1");
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["created"], 77);
    EXPECT_EQ(c["model"], "deepseek-v4.1");
    ASSERT_TRUE(c.contains("usage")) << i;
    if (i + 1 == chunks.size()) break;
    EXPECT_TRUE(c["usage"].is_null()) << i;
    const ojson& ch = c["choices"][0];
    if (i + 2 != chunks.size()) {
      EXPECT_TRUE(ch["finish_reason"].is_null()) << i;
    }
    if (!ch["logprobs"].is_null()) ++logprob_chunks;
    const ojson& delta = ch["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content") && i > 0) content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls")) {
      for (const ojson& tc : delta["tool_calls"]) {
        std::size_t idx = tc["index"].get<std::size_t>();
        args[idx] += tc["function"]["arguments"].get<std::string>();
        bool head = tc.contains("id");
        EXPECT_EQ(head, tc["function"].contains("name"));
        EXPECT_EQ(head, tc.contains("type"));
        if (head) {
          EXPECT_EQ(heads[idx], 0) << "id/name only on the first fragment";
          EXPECT_TRUE(args[idx] == tc["function"]["arguments"]) << "the head is the first fragment";
          EXPECT_EQ(tc["id"], tool_call_id("chatcmpl-s1", idx));
          ++heads[idx];
        }
      }
    }
  }
  EXPECT_EQ(reasoning, "Let me think.");
  EXPECT_EQ(content, "Calling tools.");
  EXPECT_EQ(args[0], args0);
  EXPECT_EQ(args[1], "{}");
  EXPECT_EQ(heads[0], 1);
  EXPECT_EQ(heads[1], 1);
  EXPECT_EQ(logprob_chunks, 2);
  // The logprobs of the mixed delta ride on its first chunk (the reasoning one).
  bool found = false;
  for (const ojson& c : chunks)
    if (!c["choices"].empty() && !c["choices"][0]["logprobs"].is_null() &&
        c["choices"][0]["delta"].contains("reasoning_content")) {
      found = true;
      EXPECT_EQ(c["choices"][0]["logprobs"]["content"][0]["token"], "Calling");
    }
  EXPECT_TRUE(found);
  // An empty-delta chunk carries the held-back token's logprobs.
  found = false;
  for (const ojson& c : chunks)
    if (!c["choices"].empty() && c["choices"][0]["delta"].empty() && !c["choices"][0]["logprobs"].is_null()) {
      found = true;
      EXPECT_EQ(c["choices"][0]["logprobs"]["content"][0]["token"], "<");
    }
  EXPECT_TRUE(found);

  const ojson& fin = chunks[chunks.size() - 2];
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(fin["choices"][0]["delta"].empty());
  const ojson& usage = chunks.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"], J(R"({"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30})"));
}

TEST(OpenAIChatStreamTest, WithoutUsage) {
  OpenAIChatStream s("chatcmpl-s2", 1, "m", false);
  EXPECT_FALSE(s.begin().contains("usage"));
  ParseDelta d;
  EXPECT_TRUE(s.delta(d, {}).empty());  // nothing to say, no chunk
  d.content = "x";
  auto cs = s.delta(d, {});
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_FALSE(cs[0].contains("usage"));
  auto fin = s.finish(ServeFinish::length, {1, 1});
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(fin[0]["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(fin[0].contains("usage"));
}

TEST(OpenAIChatStreamTest, StopAfterToolCallsReportsToolCalls) {
  OpenAIChatStream s("chatcmpl-s3", 1, "m", false);
  ParseDelta d;
  d.tool_calls.push_back(fragment(0, true, "f", "{}", true));
  ASSERT_EQ(s.delta(d, {}).size(), 1u);
  EXPECT_EQ(s.finish(ServeFinish::stop, {})[0]["choices"][0]["finish_reason"], "tool_calls");
}

TEST(OpenAICompletionStreamTest, ChunksAndOffsets) {
  OpenAICompletionStream s("cmpl-s", 3, "m", true);
  auto a = s.delta("Hel", {{1, "Hel", -0.1, {{"Hel", -0.1}}}});
  auto b = s.delta("lo \xE4\xBD\xA0", {{2, "lo \xE4", -0.2, {}}, {3, "\xBD\xA0", -0.3, {}}});
  EXPECT_TRUE(s.delta("", {}).empty());
  auto fin = s.finish(ServeFinish::stop, {2, 3});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(fin.size(), 2u);
  EXPECT_EQ(a[0]["object"], "text_completion");
  EXPECT_EQ(a[0]["choices"][0]["text"], "Hel");
  EXPECT_TRUE(a[0]["usage"].is_null());
  EXPECT_EQ(a[0]["choices"][0]["logprobs"]["text_offset"], J("[0]"));
  EXPECT_EQ(b[0]["choices"][0]["text"], "lo 你");
  // Offsets continue across chunks: "lo " starts at 3, 你 at 6.
  EXPECT_EQ(b[0]["choices"][0]["logprobs"]["text_offset"], J("[3, 6]"));
  EXPECT_TRUE(b[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(fin[0]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(fin[0]["choices"][0]["text"], "");
  EXPECT_TRUE(fin[0]["usage"].is_null());
  EXPECT_TRUE(fin[1]["choices"].empty());
  EXPECT_EQ(fin[1]["usage"]["total_tokens"], 5);
}

}  // namespace
}  // namespace dsv4::serve
