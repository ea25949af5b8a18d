#pragma once
// Between an API request and the scheduler: a ServeRequest becomes prompt ids and generation
// parameters (prepare), and a job's events become the API's answer, either one JSON body at the
// end or server-sent events as tokens arrive (ResponseWriter).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/anthropic_api.h"
#include "serve/batch_scheduler.h"
#include "serve/openai_api.h"
#include "serve/serve_request.h"
#include "text/output_parser.h"
#include "text/tokenizer.h"

namespace dsv4::serve {

struct ServedModel {
  std::string name;              // the id /v1/models lists and requests must name
  std::size_t ctx_per_seq = 0;   // positions per sequence
  std::size_t default_max_tokens = 0;  // when a request sets none: 0 = up to the context's end
};

// A request ready to run.
struct PreparedRequest {
  ServeRequest req;
  std::vector<std::int32_t> prompt;
  // Text that the server appended to the rendered prompt as the start of the reply (tool_choice
  // required / named: the DSML calls opener, and the invoke header for a named tool). The output
  // parser reads it before the generated text, so the forced call is parsed as the model's own.
  std::string forced_prefix;
  OutputParserOptions parser;
  std::string id;          // response id
  std::int64_t created = 0;
  std::string model;
};

// Renders (chat APIs) or takes (completions) the prompt, tokenizes it, and fills the generation
// parameters: EOS as stop token, max_new_tokens from the request or the context. Throws ApiError
// (not_found for another model's name, invalid_request for what the chat encoder rejects).
PreparedRequest prepare(ServeRequest req, const Tokenizer& tok, const ServedModel& served);

// The finished request in API-neutral form.
ServeResult make_result(const PreparedRequest& pr, const GenerationResult& g, const Tokenizer& tok);

// The whole non-streamed body of a finished request.
nlohmann::ordered_json response_body(const PreparedRequest& pr, const ServeResult& r);

// The error body in the shape of the request's API.
nlohmann::ordered_json error_body(ApiKind api, const ApiError& e);

// Turns a job's events into the request's wire format (SSE) as they arrive.
class ResponseWriter {
 public:
  ResponseWriter(const PreparedRequest& pr, const Tokenizer& tok);
  std::string begin();
  std::string on_event(const JobEvent& e);
  // The last events; `g` is the job's result.
  std::string on_done(const JobEvent& e, const GenerationResult& g);

 private:
  std::string emit(const ParseDelta& d, const std::vector<ServeToken>& lp);
  std::string emit_text(const std::string& text, const std::vector<ServeToken>& lp);
  const PreparedRequest& pr_;
  const Tokenizer& tok_;
  OutputParser parser_;
  std::unique_ptr<OpenAIChatStream> chat_;
  std::unique_ptr<OpenAICompletionStream> completion_;
  std::unique_ptr<AnthropicStream> anthropic_;
  bool saw_tool_call_ = false;
};

// A token as the APIs report it, with its raw_top alternatives' texts.
ServeToken serve_token(const SampledToken& t, const Tokenizer& tok);

}  // namespace dsv4::serve
