#pragma once
// The Anthropic Messages API surface (POST /v1/messages): request bodies to ServeRequest, results
// to a Message object, and the streaming event sequence (message_start, content_block_start /
// _delta / _stop for thinking, text and tool_use blocks, message_delta, message_stop).
//
// Accepted fields: model, max_tokens (required), messages (user / assistant; content a string or
// blocks: text, image (kept as an image part), thinking (assistant reasoning), tool_use,
// tool_result (→ tool messages)), system (string or text blocks), tools ({name, description,
// input_schema}), tool_choice ({type: auto | any | tool | none, name}), thinking ({type: enabled,
// budget_tokens} | {type: disabled}), temperature, top_p, top_k, stop_sequences, stream,
// metadata (ignored). Errors: ApiError naming the field.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/api_error.h"
#include "serve/serve_request.h"

namespace dsv4::serve {

ServeRequest parse_anthropic_messages(const nlohmann::ordered_json& body);

// {"type": "error", "error": {"type", "message"}}
nlohmann::ordered_json anthropic_error_json(const ApiError& e);

// "end_turn" | "max_tokens" | "stop_sequence" | "tool_use"
const char* anthropic_stop_reason(const ServeResult& r);
const char* anthropic_stop_reason(ServeFinish f, bool stopped_by_sequence);

// A tool_use block's id: "toolu_" + the response id's suffix + "_" + index, stable across the
// streamed and non-streamed forms of the same response.
std::string tool_use_id(const std::string& response_id, std::size_t index);

// The Message object: content blocks thinking (with an empty signature), text, tool_use
// ({id, name, input}), in the order the model produced them.
nlohmann::ordered_json anthropic_message_response(const ServeResult& r);

// One server-sent event: "event: <name>\ndata: <json>\n\n".
struct SseEvent {
  std::string event;
  nlohmann::ordered_json data;
  std::string wire() const;
};

// The event sequence of a streamed message. Blocks open and close as the parser's output moves
// between reasoning (thinking_delta), content (text_delta) and tool calls (tool_use with
// input_json_delta); a block's index counts from 0.
class AnthropicStream {
 public:
  AnthropicStream(std::string id, std::string model, std::size_t prompt_tokens);
  std::vector<SseEvent> begin();  // message_start
  std::vector<SseEvent> delta(const ParseDelta& d);
  // Closes the open block; message_delta (stop_reason, stop_sequence, usage.output_tokens);
  // message_stop.
  std::vector<SseEvent> finish(ServeFinish f, const std::string& stop_sequence, const ServeUsage& u);

 private:
  enum class Block { none, thinking, text, tool_use };
  void open(Block b, std::vector<SseEvent>& out, const ToolCallDelta* call = nullptr);
  void close(std::vector<SseEvent>& out);
  std::string id_, model_;
  std::size_t prompt_tokens_;
  Block open_ = Block::none;
  std::size_t index_ = 0;  // the next block's index
  bool any_tool_use_ = false;
};

}  // namespace dsv4::serve
