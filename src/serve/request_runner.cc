#include "serve/request_runner.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <random>

#include "text/chat_format.h"
#include "text/chat_tokens.h"
#include "text/output_markup.h"
#include "util/error.h"

namespace dsv4::serve {
namespace {

// Response ids: a prefix, the time and a per-process counter, so they are unique per server
// without a random source shared between threads.
std::string new_id(ApiKind api) {
  static std::atomic<std::uint64_t> counter{0};
  const auto n = counter.fetch_add(1);
  const auto t = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  const char* prefix = api == ApiKind::openai_chat ? "chatcmpl-" : api == ApiKind::openai_completion ? "cmpl-" : "msg_";
  return fmt::format("{}{:x}{:04x}", prefix, t, n & 0xffff);
}

ServeFinish serve_finish(FinishReason f, bool tool_calls) {
  switch (f) {
    case FinishReason::kStopToken: return tool_calls ? ServeFinish::tool_calls : ServeFinish::stop;
    case FinishReason::kStopString: return ServeFinish::stop;
    case FinishReason::kLength:
    case FinishReason::kContext: return ServeFinish::length;
    case FinishReason::kCancelled: return ServeFinish::cancelled;
  }
  return ServeFinish::stop;
}

std::string stop_sequence(const PreparedRequest& pr, const GenerationResult& g) {
  if (g.finish != FinishReason::kStopString || g.stop_index >= pr.req.gen.stop_strings.size()) return {};
  return pr.req.gen.stop_strings[g.stop_index];
}

ServeUsage usage(const PreparedRequest& pr, const GenerationResult& g) {
  return {pr.prompt.size(), g.ids.size()};
}

}  // namespace

ServeToken serve_token(const SampledToken& t, const Tokenizer& tok) {
  ServeToken s;
  s.id = t.id;
  s.text = std::string(tok.token_bytes(t.id));
  s.logprob = t.logprob;
  for (const TokenLogprob& a : t.top) s.top.emplace_back(std::string(tok.token_bytes(a.id)), a.logprob);
  return s;
}

PreparedRequest prepare(ServeRequest req, const Tokenizer& tok, const ServedModel& served) {
  PreparedRequest pr;
  if (!req.model.empty() && req.model != served.name)
    throw ApiError(ApiErrorKind::not_found,
                   fmt::format("the model '{}' does not exist; this server serves '{}'", req.model, served.name), "model");
  pr.model = served.name;
  pr.id = new_id(req.api);
  pr.created = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch()).count();
  std::string text;
  if (req.api == ApiKind::openai_completion) {
    // A raw continuation, tokenized as written; BOS first unless the prompt starts with it (as
    // `dsv4 run` without --chat does).
    const auto bos = tok.bos_id() ? tok.bos_id() : tok.token_to_id(chat_token::kBos);
    if (bos && req.prompt_text.rfind(chat_token::kBos, 0) != 0) pr.prompt.push_back(*bos);
    text = req.prompt_text;
  } else {
    ChatOptions co = req.chat;
    if (req.tool_choice == ToolChoice::required || req.tool_choice == ToolChoice::named) {
      // The reply must be a call: answer in chat mode and start it with the calls block.
      co.thinking = false;
      const DsmlTags tags = dsml_tags(co.profile);
      pr.forced_prefix = fmt::format("\n\n{}\n", tags.calls_open);
      if (req.tool_choice == ToolChoice::named)
        pr.forced_prefix += fmt::format("{} name=\"{}\">\n", tags.invoke_open, req.tool_name);
      req.chat = co;
    }
    co.add_generation_prompt = true;
    RenderedChat rc;
    try {
      rc = render_chat_prompt(req.messages, co);
    } catch (const Error& e) {
      throw ApiError(ApiErrorKind::invalid_request, e.what(), "messages");
    }
    if (!rc.images.empty())
      throw ApiError(ApiErrorKind::invalid_request, "image inputs are not supported by this server yet", "messages");
    text = rc.text + pr.forced_prefix;
    pr.parser.dsml = co.profile;
    // A final assistant message without EOS (a prefill the client wrote) is continued in its
    // content: the encoder has closed its reasoning already.
    const bool continues = !req.messages.empty() && req.messages.back().role == ChatRole::Assistant &&
                           req.messages.back().wo_eos;
    pr.parser.thinking_started = co.thinking && !continues;
    pr.parser.call_streaming = CallStreaming::incremental;
  }
  try {
    tok.encode_append(text, pr.prompt);
  } catch (const Error& e) {
    throw ApiError(ApiErrorKind::invalid_request, e.what(), req.api == ApiKind::openai_completion ? "prompt" : "messages");
  }
  if (pr.prompt.empty()) throw ApiError(ApiErrorKind::invalid_request, "the prompt is empty", "prompt");
  GenerationParams& g = req.gen;
  if (const auto eos = tok.eos_id() ? tok.eos_id() : tok.token_to_id(chat_token::kEos); eos && !req.ignore_eos)
    g.stop_tokens = {*eos};
  if (!req.max_tokens_given) {
    // Up to the context's end (the last sampled token is never fed), or the server's default.
    const std::size_t room = served.ctx_per_seq + 1 > pr.prompt.size() ? served.ctx_per_seq + 1 - pr.prompt.size() : 1;
    g.max_new_tokens = served.default_max_tokens ? std::min(served.default_max_tokens, room) : room;
  }
  if (req.logprobs == false) g.top_logprobs = 0;
  pr.req = std::move(req);
  return pr;
}

ServeResult make_result(const PreparedRequest& pr, const GenerationResult& g, const Tokenizer& tok) {
  ServeResult r;
  r.id = pr.id;
  r.created = pr.created;
  r.model = pr.model;
  if (pr.req.api == ApiKind::openai_completion) {
    r.text = g.text;
  } else {
    OutputParser parser(pr.parser);
    parser.feed(pr.forced_prefix);
    parser.feed(g.text);
    parser.finish();
    r.parsed = parser.result();
  }
  if (pr.req.logprobs)
    for (const SampledToken& t : g.tokens) r.tokens.push_back(serve_token(t, tok));
  r.finish = serve_finish(g.finish, !r.parsed.tool_calls.empty());
  r.stop_sequence = stop_sequence(pr, g);
  r.usage = usage(pr, g);
  return r;
}

nlohmann::ordered_json response_body(const PreparedRequest& pr, const ServeResult& r) {
  switch (pr.req.api) {
    case ApiKind::openai_chat: return openai_chat_response(r);
    case ApiKind::openai_completion: return openai_completion_response(r);
    case ApiKind::anthropic_messages: return anthropic_message_response(r);
  }
  return {};
}

nlohmann::ordered_json error_body(ApiKind api, const ApiError& e) {
  return api == ApiKind::anthropic_messages ? anthropic_error_json(e) : openai_error_json(e);
}

namespace {
std::string sse_data(const nlohmann::ordered_json& j) {
  return "data: " + j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n\n";
}
}  // namespace

ResponseWriter::ResponseWriter(const PreparedRequest& pr, const Tokenizer& tok)
    : pr_(pr), tok_(tok), parser_(pr.parser) {
  const bool usage = pr.req.include_usage;
  switch (pr.req.api) {
    case ApiKind::openai_chat: chat_ = std::make_unique<OpenAIChatStream>(pr.id, pr.created, pr.model, usage); break;
    case ApiKind::openai_completion:
      completion_ = std::make_unique<OpenAICompletionStream>(pr.id, pr.created, pr.model, usage);
      break;
    case ApiKind::anthropic_messages: anthropic_ = std::make_unique<AnthropicStream>(pr.id, pr.model, pr.prompt.size()); break;
  }
}

std::string ResponseWriter::begin() {
  std::string out;
  if (chat_) out += sse_data(chat_->begin());
  if (anthropic_)
    for (const SseEvent& e : anthropic_->begin()) out += e.wire();
  if (!completion_) {
    // The forced start of a tool call is the reply's own beginning: stream what it commits.
    const ParseDelta d = parser_.feed(pr_.forced_prefix);
    out += emit(d, {});
  }
  return out;
}

std::string ResponseWriter::emit(const ParseDelta& d, const std::vector<ServeToken>& lp) {
  std::string out;
  for (const ToolCallDelta& c : d.tool_calls)
    if (c.ends && c.complete) saw_tool_call_ = true;
  if (chat_) {
    if (d.reasoning.empty() && d.content.empty() && d.tool_calls.empty() && lp.empty()) return out;
    for (const auto& j : chat_->delta(d, lp)) out += sse_data(j);
  } else if (anthropic_) {
    for (const SseEvent& e : anthropic_->delta(d)) out += e.wire();
  }
  return out;
}

std::string ResponseWriter::emit_text(const std::string& text, const std::vector<ServeToken>& lp) {
  std::string out;
  if (text.empty() && lp.empty()) return out;
  for (const auto& j : completion_->delta(text, lp)) out += sse_data(j);
  return out;
}

std::string ResponseWriter::on_event(const JobEvent& e) {
  if (e.kind != JobEvent::Kind::token) return {};
  std::vector<ServeToken> lp;
  if (pr_.req.logprobs) lp.push_back(serve_token(e.token, tok_));
  if (completion_) return emit_text(e.text, lp);
  return emit(parser_.feed(e.text), lp);
}

std::string ResponseWriter::on_done(const JobEvent& e, const GenerationResult& g) {
  std::string out;
  if (completion_) {
    out += emit_text(e.text, {});
  } else {
    out += emit(parser_.feed(e.text), {});
    out += emit(parser_.finish(), {});
  }
  const ServeFinish f = serve_finish(g.finish, saw_tool_call_);
  const ServeUsage u = usage(pr_, g);
  if (chat_) {
    for (const auto& j : chat_->finish(f, u)) out += sse_data(j);
    out += "data: [DONE]\n\n";
  } else if (completion_) {
    for (const auto& j : completion_->finish(f, u)) out += sse_data(j);
    out += "data: [DONE]\n\n";
  } else {
    for (const SseEvent& ev : anthropic_->finish(f, stop_sequence(pr_, g), u)) out += ev.wire();
  }
  return out;
}

}  // namespace dsv4::serve
