#pragma once
// The OpenAI API surface: request bodies to ServeRequest, results to response JSON, and the
// streaming (server-sent events) form of a chat or text completion.
//
// Accepted chat fields: model, messages, tools, tool_choice (auto | none | required |
// {"type":"function","function":{"name"}}), reasoning_effort, chat_template_kwargs.thinking
// (its vLLM alias .enable_thinking, and .reasoning_effort), thinking ({"type": "enabled" |
// "disabled"}, DeepSeek's own API), temperature, top_p, top_k, min_p, seed, stop (string or list),
// max_tokens, max_completion_tokens, presence_penalty, frequency_penalty, repetition_penalty,
// logprobs, top_logprobs, response_format (text | json_object), stream, stream_options.
// include_usage, n (1 only). Unknown fields are ignored, as OpenAI-compatible servers do; a known
// field of the wrong type or out of range is an ApiError naming it.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/api_error.h"
#include "serve/serve_request.h"

namespace dsv4::serve {

// Throws ApiError (invalid_request) naming the field.
ServeRequest parse_openai_chat(const nlohmann::ordered_json& body);
ServeRequest parse_openai_completion(const nlohmann::ordered_json& body);

// {"error": {"message", "type", "param", "code"}}
nlohmann::ordered_json openai_error_json(const ApiError& e);

// The non-streaming responses (object "chat.completion" / "text_completion").
nlohmann::ordered_json openai_chat_response(const ServeResult& r);
nlohmann::ordered_json openai_completion_response(const ServeResult& r);

// "stop" | "length" | "tool_calls" (cancelled requests report "stop": nobody reads them).
const char* openai_finish_reason(ServeFinish f);

// The chunks of a streamed chat completion, each one JSON object to send as "data: {…}\n\n"
// (the caller writes "data: [DONE]\n\n" at the end).
class OpenAIChatStream {
 public:
  OpenAIChatStream(std::string id, std::int64_t created, std::string model, bool include_usage);
  // The first chunk: delta {"role": "assistant", "content": ""}.
  nlohmann::ordered_json begin();
  // What the parser committed for one or more tokens, with those tokens' logprobs (empty when not
  // asked for). Returns zero or more chunks: reasoning_content, content and tool-call deltas
  // (tool_calls[{index, id, type, function{name, arguments}}]; id, type and name only on a
  // call's first fragment).
  std::vector<nlohmann::ordered_json> delta(const ParseDelta& d, const std::vector<ServeToken>& logprobs);
  // The last chunks: one with finish_reason, then (include_usage) one with usage and no choices.
  std::vector<nlohmann::ordered_json> finish(ServeFinish f, const ServeUsage& u);

 private:
  nlohmann::ordered_json chunk(nlohmann::ordered_json delta) const;
  std::string id_, model_;
  std::int64_t created_;
  bool include_usage_;
  std::size_t calls_ = 0;  // tool calls begun (their ids are id_-based and stable)
};

// The chunks of a streamed text completion (object "text_completion").
class OpenAICompletionStream {
 public:
  OpenAICompletionStream(std::string id, std::int64_t created, std::string model, bool include_usage);
  std::vector<nlohmann::ordered_json> delta(const std::string& text, const std::vector<ServeToken>& logprobs);
  std::vector<nlohmann::ordered_json> finish(ServeFinish f, const ServeUsage& u);

 private:
  nlohmann::ordered_json chunk(nlohmann::ordered_json choice) const;
  std::string id_, model_;
  std::int64_t created_;
  bool include_usage_;
  // logprobs.text_offset across chunks: characters so far, bytes of a split character.
  std::size_t text_chars_ = 0;
  std::string text_pending_;
};

// A tool call's id: "call_" + the response id's suffix + "_" + index, so it is stable across the
// streamed and non-streamed forms of the same response.
std::string tool_call_id(const std::string& response_id, std::size_t index);

}  // namespace dsv4::serve
