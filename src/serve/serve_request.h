#pragma once
// What the HTTP APIs hand the engine, and what the engine hands back, independent of which API
// (OpenAI chat, OpenAI completions, Anthropic messages) the request came through.
//
//   HTTP body --(openai_api / anthropic_api: parse_*)--> ServeRequest
//   ServeRequest --(server: render + tokenize)--> prompt ids --(BatchScheduler)--> tokens
//   tokens --(StreamDetokenizer, OutputParser)--> ParseDelta / text --(*StreamWriter)--> SSE events
//   the finished request --------------------------------------------> ServeResult --(*_response)--> JSON
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/generator.h"
#include "runtime/sampler.h"
#include "text/chat_format.h"
#include "text/chat_message.h"
#include "text/output_parser.h"

namespace dsv4::serve {

enum class ApiKind { openai_chat, openai_completion, anthropic_messages };

enum class ToolChoice { automatic, none, required, named };

struct ServeRequest {
  ApiKind api = ApiKind::openai_chat;
  std::string model;  // as the client named it ("" when absent: the served model)
  // Chat APIs: the conversation (tools already placed on a system message, as the encoder wants
  // them) and how it renders (thinking / effort; add_generation_prompt is the server's).
  std::vector<ChatMessage> messages;
  ChatOptions chat;
  bool has_tools = false;  // the request declared tools (and tool_choice is not none)
  ToolChoice tool_choice = ToolChoice::automatic;
  std::string tool_name;   // ToolChoice::named
  // Completions: the raw prompt, tokenized as is (no chat format, no BOS unless written).
  std::string prompt_text;
  // Sampling, max_new_tokens and stop strings from the request; the server adds EOS to
  // stop_tokens and bounds max_new_tokens by the context.
  GenerationParams gen;
  bool max_tokens_given = false;  // whether the client set a token limit
  bool logprobs = false;          // report log-probabilities (gen.top_logprobs alternatives)
  bool stream = false;
  bool include_usage = false;     // OpenAI stream_options.include_usage
  bool json_object = false;       // response_format {"type": "json_object"}
  bool ignore_eos = false;        // vLLM's extension: EOS does not end generation
};

// One generated token as the APIs report it (logprobs).
struct ServeToken {
  std::int32_t id = 0;
  std::string text;  // the token's own text (its bytes; may be a partial UTF-8 character)
  double logprob = 0.0;
  std::vector<std::pair<std::string, double>> top;  // alternatives: text, logprob
};

// Why generation ended, in API-neutral terms.
enum class ServeFinish { stop, length, tool_calls, cancelled };

struct ServeUsage {
  std::size_t prompt_tokens = 0;
  std::size_t completion_tokens = 0;
};

// A finished request.
struct ServeResult {
  std::string id;            // "chatcmpl-…", "cmpl-…" or "msg_…"
  std::int64_t created = 0;  // Unix seconds
  std::string model;
  ParsedOutput parsed;       // chat APIs: reasoning, content, tool calls
  std::string text;          // completions: the generated text
  std::vector<ServeToken> tokens;  // when logprobs were asked for
  ServeFinish finish = ServeFinish::stop;
  std::string stop_sequence;       // the stop string that ended it, if one did (Anthropic)
  ServeUsage usage;
};

}  // namespace dsv4::serve
