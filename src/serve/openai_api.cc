#include "serve/openai_api.h"

#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "serve/api_json.h"
#include "text/chat_effort.h"
#include "text/chat_message.h"
#include "util/error.h"

namespace dsv4::serve {

using api::bad;
using api::field;
using api::ojson;

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// ---- Fields shared by chat and completions ----

void parse_model(const ojson& body, ServeRequest& r) {
  if (auto m = api::opt_string(body, "model")) r.model = *m;
}

// n (and completions' best_of): one choice per request.
void parse_single_choice(const ojson& body, const char* name) {
  if (const ojson* v = field(body, name)) {
    if (api::as_integer(*v, name) != 1) bad(name, fmt::format("{} > 1 is not supported; it must be 1", name));
  }
}

void parse_sampling(const ojson& body, ServeRequest& r) {
  SamplingParams& s = r.gen.sampling;
  if (auto t = api::opt_number(body, "temperature", 0.0, 2.0)) s.temperature = *t;
  if (auto p = api::opt_number(body, "top_p", 0.0, 1.0)) {
    if (*p <= 0.0) bad("top_p", "must be greater than 0 and at most 1");
    s.top_p = *p;
  }
  // top_k: -1 is "off", as in vLLM; 0 is off too (SamplingParams).
  if (auto k = api::opt_integer(body, "top_k", -1, kInt64Max)) s.top_k = *k < 0 ? 0 : static_cast<std::size_t>(*k);
  if (auto m = api::opt_number(body, "min_p", 0.0, 1.0)) s.min_p = *m;
  if (const ojson* v = field(body, "seed")) {
    // Any 64-bit integer: a negative seed keeps its two's-complement bits.
    if (!v->is_number_integer()) bad("seed", fmt::format("must be an integer, not {}", api::json_kind(*v)));
    s.seed = v->is_number_unsigned() ? v->get<std::uint64_t>() : static_cast<std::uint64_t>(v->get<std::int64_t>());
  }
  if (auto p = api::opt_number(body, "presence_penalty", -2.0, 2.0)) s.presence_penalty = *p;
  if (auto f = api::opt_number(body, "frequency_penalty", -2.0, 2.0)) s.frequency_penalty = *f;
  if (auto p = api::opt_number(body, "repetition_penalty", 0.0, std::numeric_limits<double>::max())) {
    if (*p <= 0.0) bad("repetition_penalty", "must be greater than 0");
    s.repetition_penalty = *p;
  }
  api::validate_sampling(s);
}

// stop: a string or up to 4 strings, none empty (an empty stop string would end at once).
void parse_stop(const ojson& body, ServeRequest& r) {
  const ojson* v = field(body, "stop");
  if (!v) return;
  if (v->is_string()) {
    if (v->get_ref<const std::string&>().empty()) bad("stop", "must not be an empty string");
    r.gen.stop_strings.push_back(v->get<std::string>());
    return;
  }
  if (!v->is_array()) bad("stop", fmt::format("must be a string or an array of strings, not {}", api::json_kind(*v)));
  if (v->size() > 4) bad("stop", fmt::format("at most 4 stop sequences are allowed, not {}", v->size()));
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string param = fmt::format("stop[{}]", i);
    const std::string& s = api::as_string((*v)[i], param);
    if (s.empty()) bad(param, "must not be an empty string");
    r.gen.stop_strings.push_back(s);
  }
}

// max_tokens / max_completion_tokens (the newer name wins when both are given). Absent: the
// limit stays 0, "not set", and the server fills it from the context.
void parse_max_tokens(const ojson& body, ServeRequest& r) {
  r.gen.max_new_tokens = 0;
  r.max_tokens_given = false;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (auto n = api::opt_integer(body, name, 1, kInt64Max)) {
      r.gen.max_new_tokens = static_cast<std::size_t>(*n);
      r.max_tokens_given = true;
    }
  }
  // vLLM's extension, used by load generators: EOS does not end the reply.
  r.ignore_eos = api::opt_bool(body, "ignore_eos").value_or(false);
}

// stream, and stream_options (OpenAI answers 400 to stream_options without stream).
void parse_stream(const ojson& body, ServeRequest& r) {
  r.stream = api::opt_bool(body, "stream").value_or(false);
  const ojson* so = field(body, "stream_options");
  if (!so) return;
  api::as_object(*so, "stream_options");
  if (!r.stream) bad("stream_options", "is only allowed when stream is true");
  r.include_usage = api::opt_bool(*so, "include_usage", "stream_options").value_or(false);
}

// ---- Chat-only fields ----

// parse_chat_messages reports "messages: messages[3].content: must be ..."; the ApiError keeps
// the message without the doubled source and names the precise field when there is one.
std::vector<ChatMessage> parse_messages(const ojson& body) {
  const ojson* m = field(body, "messages");
  if (!m) bad("messages", "is required");
  api::as_array(*m, "messages");
  if (m->empty()) bad("messages", "must contain at least one message");
  try {
    return parse_chat_messages(*m, "messages");
  } catch (const dsv4::Error& e) {
    std::string msg = e.what();
    std::string param = "messages";
    const std::string source = "messages: ";
    if (msg.rfind(source + "messages[", 0) == 0) {
      msg.erase(0, source.size());
      if (auto colon = msg.find(": "); colon != std::string::npos) param = msg.substr(0, colon);
    }
    throw ApiError(ApiErrorKind::invalid_request, msg, param);
  }
}

// tools: [{"type": "function", "function": {name, description?, parameters?, ...}}] → the
// function objects as sent (their key order reaches the prompt, as in the reference encoder).
std::vector<ojson> parse_tools(const ojson& body) {
  std::vector<ojson> out;
  const ojson* v = field(body, "tools");
  if (!v) return out;
  api::as_array(*v, "tools");
  std::set<std::string> names;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string at = fmt::format("tools[{}]", i);
    const ojson& t = api::as_object((*v)[i], at);
    const ojson* type = field(t, "type");
    if (!type) bad(at + ".type", "is required (\"function\")");
    if (api::as_string(*type, at + ".type") != "function")
      bad(at + ".type", fmt::format("only \"function\" tools are supported, not \"{}\"", type->get<std::string>()));
    const ojson* f = field(t, "function");
    if (!f) bad(at + ".function", "is required");
    api::as_object(*f, at + ".function");
    const ojson* name = field(*f, "name");
    if (!name) bad(at + ".function.name", "is required");
    const std::string& n = api::as_string(*name, at + ".function.name");
    if (n.empty()) bad(at + ".function.name", "must not be empty");
    if (!names.insert(n).second) bad(at + ".function.name", fmt::format("duplicate tool name \"{}\"", n));
    api::opt_string(*f, "description", at + ".function");
    if (const ojson* p = field(*f, "parameters")) api::as_object(*p, at + ".function.parameters");
    out.push_back(*f);
  }
  return out;
}

// tool_choice: "auto" | "none" | "required" | {"type": "function", "function": {"name": N}}.
void parse_tool_choice(const ojson& body, ServeRequest& r) {
  const ojson* v = field(body, "tool_choice");
  if (!v) return;
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    if (s == "auto") r.tool_choice = ToolChoice::automatic;
    else if (s == "none") r.tool_choice = ToolChoice::none;
    else if (s == "required") r.tool_choice = ToolChoice::required;
    else bad("tool_choice", fmt::format("must be \"auto\", \"none\", \"required\" or a function object, not \"{}\"", s));
    return;
  }
  if (!v->is_object())
    bad("tool_choice", fmt::format("must be a string or an object, not {}", api::json_kind(*v)));
  const ojson* type = field(*v, "type");
  if (!type || api::as_string(*type, "tool_choice.type") != "function")
    bad("tool_choice.type", "must be \"function\"");
  const ojson* f = field(*v, "function");
  if (!f) bad("tool_choice.function", "is required");
  api::as_object(*f, "tool_choice.function");
  auto name = api::opt_string(*f, "name", "tool_choice.function");
  if (!name || name->empty()) bad("tool_choice.function.name", "must be a non-empty string");
  r.tool_choice = ToolChoice::named;
  r.tool_name = *name;
}

// An effort name as the OpenAI field reasoning_effort gives it. Beyond the encoder's table
// (low, high, max, xhigh, or 1..100 as digits): "medium" is taken as high = 75, as DeepSeek's own
// API maps it (spec §13.3), and "minimal" as low, the nearest lower entry. ("none" is handled by
// the caller: it switches thinking off.)
ReasoningEffort openai_effort(const std::string& name, const std::string& param) {
  const std::string mapped = name == "medium" ? "high" : name == "minimal" ? "low" : name;
  try {
    return parse_effort(mapped);
  } catch (const dsv4::Error& e) {
    bad(param, e.what());
  }
}

// Thinking is off by default (the model's chat mode). It is switched on by a reasoning effort
// (top-level reasoning_effort or chat_template_kwargs.reasoning_effort), and on or off explicitly
// by chat_template_kwargs.thinking (or vLLM's alias enable_thinking) or DeepSeek's top-level
// thinking {"type": "enabled" | "disabled"}; an explicit switch beats the effort's implicit "on".
// reasoning_effort "none" always means off (vLLM). The top-level effort overrides the kwargs' one.
void parse_thinking(const ojson& body, ServeRequest& r) {
  std::optional<bool> explicit_thinking;
  auto set_switch = [&](bool on, const std::string& param) {
    if (explicit_thinking && *explicit_thinking != on) bad(param, "contradicts another thinking switch in the request");
    explicit_thinking = on;
  };
  std::optional<ReasoningEffort> effort;
  if (const ojson* kw = field(body, "chat_template_kwargs")) {
    api::as_object(*kw, "chat_template_kwargs");
    for (const char* key : {"thinking", "enable_thinking"})
      if (auto on = api::opt_bool(*kw, key, "chat_template_kwargs")) set_switch(*on, std::string("chat_template_kwargs.") + key);
    if (const ojson* e = field(*kw, "reasoning_effort")) {
      try {
        effort = parse_effort_json(*e);
      } catch (const dsv4::Error& err) {
        bad("chat_template_kwargs.reasoning_effort", err.what());
      }
    }
  }
  if (const ojson* t = field(body, "thinking")) {
    api::as_object(*t, "thinking");
    auto type = api::opt_string(*t, "type", "thinking");
    if (type == "enabled") set_switch(true, "thinking.type");
    else if (type == "disabled") set_switch(false, "thinking.type");
    else bad("thinking.type", "must be \"enabled\" or \"disabled\"");
  }
  bool effort_off = false;
  if (auto e = api::opt_string(body, "reasoning_effort")) {
    if (*e == "none") effort_off = true;
    else effort = openai_effort(*e, "reasoning_effort");
  }
  r.chat.effort = effort;
  r.chat.thinking = effort_off ? false : explicit_thinking.value_or(effort.has_value());
}

// response_format: text (nothing) | json_object (rendered on the leading system message, the
// encoder's response-format block) | json_schema (not supported: there is no constrained
// decoding to enforce a schema).
void parse_response_format(const ojson& body, ServeRequest& r) {
  const ojson* v = field(body, "response_format");
  if (!v) return;
  api::as_object(*v, "response_format");
  auto type = api::opt_string(*v, "type", "response_format");
  if (!type) bad("response_format.type", "is required");
  if (*type == "text") return;
  if (*type == "json_schema")
    bad("response_format.type",
        "json_schema is not supported (no constrained decoding); use {\"type\": \"json_object\"} and describe the "
        "schema in the prompt");
  if (*type != "json_object")
    bad("response_format.type", fmt::format("must be \"text\" or \"json_object\", not \"{}\"", *type));
  ChatMessage& sys = api::leading_system_message(r.messages);
  if (sys.response_format)
    bad("response_format", "messages[0] already carries a response_format; send it once");
  sys.response_format = ojson{{"type", "json_object"}};
  r.json_object = true;
}

// ---- Responses ----

ojson usage_json(const ServeUsage& u) {
  return ojson{{"prompt_tokens", u.prompt_tokens},
               {"completion_tokens", u.completion_tokens},
               {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
ojson chat_logprobs(const std::vector<ServeToken>& tokens) {
  ojson content = ojson::array();
  for (const ServeToken& t : tokens) {
    ojson top = ojson::array();
    for (const auto& [text, lp] : t.top)
      top.push_back(ojson{{"token", api::json_text(text)}, {"logprob", api::json_logprob(lp)}, {"bytes", api::byte_array(text)}});
    content.push_back(ojson{{"token", api::json_text(t.text)},
                            {"logprob", api::json_logprob(t.logprob)},
                            {"bytes", api::byte_array(t.text)},
                            {"top_logprobs", std::move(top)}});
  }
  return ojson{{"content", std::move(content)}};
}

// Completions logprobs: {tokens, token_logprobs, top_logprobs: [{text: logprob}], text_offset}.
// Two alternatives with the same text (after U+FFFD replacement) keep the first, the likelier.
ojson completion_logprobs(const std::vector<ServeToken>& tokens, std::size_t& chars, std::string& pending) {
  ojson toks = ojson::array(), lps = ojson::array(), tops = ojson::array(), offsets = ojson::array();
  for (const ServeToken& t : tokens) {
    toks.push_back(api::json_text(t.text));
    lps.push_back(api::json_logprob(t.logprob));
    ojson top = ojson::object();
    for (const auto& [text, lp] : t.top) {
      std::string key = api::json_text(text);
      if (!top.contains(key)) top[key] = api::json_logprob(lp);
    }
    tops.push_back(std::move(top));
    offsets.push_back(api::next_text_offset(chars, pending, t.text));
  }
  return ojson{{"tokens", std::move(toks)},
               {"token_logprobs", std::move(lps)},
               {"top_logprobs", std::move(tops)},
               {"text_offset", std::move(offsets)}};
}

// A whole (non-streamed) response around its one choice.
ojson response_json(const ServeResult& r, const char* object, ojson choice) {
  ojson out;
  out["id"] = r.id;
  out["object"] = object;
  out["created"] = r.created;
  out["model"] = api::json_text(r.model);
  out["choices"] = ojson::array({std::move(choice)});
  out["usage"] = usage_json(r.usage);
  return out;
}

// The last chunk of a stream with include_usage: no choices, the usage (OpenAI's shape).
ojson usage_chunk(const std::string& id, const char* object, std::int64_t created, const std::string& model,
                  const ServeUsage& u) {
  ojson c;
  c["id"] = id;
  c["object"] = object;
  c["created"] = created;
  c["model"] = model;
  c["choices"] = ojson::array();
  c["usage"] = usage_json(u);
  return c;
}

// A finish that ended normally after tool calls is a tool-call finish, whatever the caller said.
const char* chat_finish_reason(ServeFinish f, bool any_calls) {
  if (f == ServeFinish::stop && any_calls) return "tool_calls";
  return openai_finish_reason(f);
}

}  // namespace

// ---- Requests ----

ServeRequest parse_openai_chat(const ojson& body) {
  api::require_object(body);
  ServeRequest r;
  r.api = ApiKind::openai_chat;
  parse_model(body, r);
  r.messages = parse_messages(body);
  r.chat.thinking = false;
  parse_thinking(body, r);

  std::vector<ojson> tools = parse_tools(body);
  parse_tool_choice(body, r);
  // Tools a system message of the conversation already carries (an extension parse_chat_messages
  // accepts) count as declared too.
  std::set<std::string> declared;
  bool message_tools = false;
  for (const ChatMessage& m : r.messages)
    for (const ojson& f : m.tools) {
      message_tools = true;
      if (auto n = f.find("name"); n != f.end() && n->is_string()) declared.insert(n->get<std::string>());
    }
  for (const ojson& f : tools) declared.insert(f.at("name").get<std::string>());
  if ((r.tool_choice == ToolChoice::required || r.tool_choice == ToolChoice::named) && declared.empty())
    bad("tool_choice", "is only allowed when tools are declared");
  if (r.tool_choice == ToolChoice::named && !declared.count(r.tool_name))
    bad("tool_choice", fmt::format("names the function \"{}\", which is not among the declared tools", r.tool_name));
  // tool_choice "none": the model must not call tools, so they are not put in the prompt.
  if (!tools.empty() && r.tool_choice != ToolChoice::none) {
    ChatMessage& sys = api::leading_system_message(r.messages);
    if (!sys.tools.empty()) bad("tools", "messages[0] already carries tools; send the tools once");
    sys.tools = std::move(tools);
  }
  r.has_tools = r.tool_choice != ToolChoice::none && (!declared.empty() || message_tools);

  parse_response_format(body, r);
  parse_sampling(body, r);
  parse_stop(body, r);
  parse_max_tokens(body, r);
  parse_single_choice(body, "n");

  r.logprobs = api::opt_bool(body, "logprobs").value_or(false);
  if (auto k = api::opt_integer(body, "top_logprobs", 0, 20)) {
    if (!r.logprobs) bad("top_logprobs", "requires logprobs to be true");
    r.gen.top_logprobs = static_cast<std::size_t>(*k);
  }
  parse_stream(body, r);
  return r;
}

ServeRequest parse_openai_completion(const ojson& body) {
  api::require_object(body);
  ServeRequest r;
  r.api = ApiKind::openai_completion;
  parse_model(body, r);

  const ojson* p = field(body, "prompt");
  if (!p) bad("prompt", "is required");
  if (p->is_array()) {
    if (p->empty()) bad("prompt", "must not be an empty array");
    const ojson& first = (*p)[0];
    if (first.is_number_integer() || first.is_array()) bad("prompt", "token-id prompts are not supported; send text");
    if (p->size() != 1) bad("prompt", "a batch of several prompts is not supported; send one prompt per request");
    r.prompt_text = api::as_string(first, "prompt[0]");
  } else if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
  } else {
    bad("prompt", fmt::format("must be a string, not {}", api::json_kind(*p)));
  }
  if (r.prompt_text.empty()) bad("prompt", "must not be empty");

  parse_sampling(body, r);
  parse_stop(body, r);
  parse_max_tokens(body, r);
  parse_single_choice(body, "n");
  parse_single_choice(body, "best_of");
  if (api::opt_bool(body, "echo").value_or(false)) bad("echo", "echo=true is not supported");
  if (auto s = api::opt_string(body, "suffix"); s && !s->empty()) bad("suffix", "is not supported");
  // logprobs here is the number of alternatives (0..5); present means "report log-probabilities".
  if (auto k = api::opt_integer(body, "logprobs", 0, 5)) {
    r.logprobs = true;
    r.gen.top_logprobs = static_cast<std::size_t>(*k);
  }
  parse_stream(body, r);
  return r;
}

// ---- Errors ----

ojson openai_error_json(const ApiError& e) {
  const char* type = "server_error";
  const char* code = nullptr;
  switch (e.kind()) {
    case ApiErrorKind::invalid_request: type = "invalid_request_error"; break;
    case ApiErrorKind::authentication: type = "authentication_error"; code = "invalid_api_key"; break;
    case ApiErrorKind::not_found: type = "not_found_error"; break;
    case ApiErrorKind::context_overflow: type = "invalid_request_error"; code = "context_length_exceeded"; break;
    case ApiErrorKind::overloaded: type = "rate_limit_error"; code = "rate_limit_exceeded"; break;
    case ApiErrorKind::server: type = "server_error"; break;
  }
  ojson err;
  err["message"] = api::json_text(e.what());
  err["type"] = type;
  err["param"] = e.param().empty() ? ojson(nullptr) : ojson(api::json_text(e.param()));
  err["code"] = code ? ojson(code) : ojson(nullptr);
  return ojson{{"error", std::move(err)}};
}

const char* openai_finish_reason(ServeFinish f) {
  switch (f) {
    case ServeFinish::stop: return "stop";
    case ServeFinish::length: return "length";
    case ServeFinish::tool_calls: return "tool_calls";
    case ServeFinish::cancelled: return "stop";
  }
  return "stop";
}

std::string tool_call_id(const std::string& response_id, std::size_t index) {
  return fmt::format("call_{}_{}", api::id_suffix(response_id), index);
}

// ---- Non-streaming responses ----

ojson openai_chat_response(const ServeResult& r) {
  const ParsedOutput& p = r.parsed;
  ojson msg;
  msg["role"] = "assistant";
  // content is null only for a pure tool-call turn, as OpenAI reports it.
  msg["content"] = p.content.empty() && !p.tool_calls.empty() ? ojson(nullptr) : ojson(api::json_text(p.content));
  if (!p.reasoning_content.empty()) msg["reasoning_content"] = api::json_text(p.reasoning_content);
  if (!p.tool_calls.empty()) {
    ojson calls = ojson::array();
    for (std::size_t i = 0; i < p.tool_calls.size(); ++i)
      calls.push_back(ojson{{"id", tool_call_id(r.id, i)},
                            {"type", "function"},
                            {"function", {{"name", api::json_text(p.tool_calls[i].name)},
                                          {"arguments", api::json_text(p.tool_calls[i].arguments)}}}});
    msg["tool_calls"] = std::move(calls);
  }
  ojson choice;
  choice["index"] = 0;
  choice["message"] = std::move(msg);
  choice["logprobs"] = r.tokens.empty() ? ojson(nullptr) : chat_logprobs(r.tokens);
  choice["finish_reason"] = chat_finish_reason(r.finish, !p.tool_calls.empty());
  return response_json(r, "chat.completion", std::move(choice));
}

ojson openai_completion_response(const ServeResult& r) {
  ojson choice;
  choice["index"] = 0;
  choice["text"] = api::json_text(r.text);
  if (r.tokens.empty()) {
    choice["logprobs"] = nullptr;
  } else {
    std::size_t chars = 0;
    std::string pending;
    choice["logprobs"] = completion_logprobs(r.tokens, chars, pending);
  }
  choice["finish_reason"] = openai_finish_reason(r.finish);
  return response_json(r, "text_completion", std::move(choice));
}

// ---- Streaming: chat ----

OpenAIChatStream::OpenAIChatStream(std::string id, std::int64_t created, std::string model, bool include_usage)
    : id_(std::move(id)), model_(api::json_text(model)), created_(created), include_usage_(include_usage) {}

ojson OpenAIChatStream::chunk(ojson delta) const {
  ojson choice;
  choice["index"] = 0;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  ojson c;
  c["id"] = id_;
  c["object"] = "chat.completion.chunk";
  c["created"] = created_;
  c["model"] = model_;
  c["choices"] = ojson::array({std::move(choice)});
  if (include_usage_) c["usage"] = nullptr;  // OpenAI: null on every chunk but the last
  return c;
}

ojson OpenAIChatStream::begin() { return chunk(ojson{{"role", "assistant"}, {"content", ""}}); }

std::vector<ojson> OpenAIChatStream::delta(const ParseDelta& d, const std::vector<ServeToken>& logprobs) {
  std::vector<ojson> out;
  if (!d.reasoning.empty()) out.push_back(chunk(ojson{{"reasoning_content", api::json_text(d.reasoning)}}));
  if (!d.content.empty()) out.push_back(chunk(ojson{{"content", api::json_text(d.content)}}));
  for (const ToolCallDelta& t : d.tool_calls) {
    if (!t.begins && t.arguments.empty()) continue;  // e.g. a bare end marker: nothing to say
    ojson call;
    call["index"] = t.index;
    ojson fn;
    if (t.begins) {
      ++calls_;
      call["id"] = tool_call_id(id_, t.index);
      call["type"] = "function";
      fn["name"] = api::json_text(t.name);
    }
    fn["arguments"] = api::json_text(t.arguments);
    call["function"] = std::move(fn);
    out.push_back(chunk(ojson{{"tool_calls", ojson::array({std::move(call)})}}));
  }
  if (!logprobs.empty()) {
    // The tokens' log-probabilities ride on the first chunk of what they produced, or on an
    // empty delta when they produced nothing visible yet (held back, or markup).
    if (out.empty()) out.push_back(chunk(ojson::object()));
    out.front()["choices"][0]["logprobs"] = chat_logprobs(logprobs);
  }
  return out;
}

std::vector<ojson> OpenAIChatStream::finish(ServeFinish f, const ServeUsage& u) {
  std::vector<ojson> out;
  ojson last = chunk(ojson::object());
  last["choices"][0]["finish_reason"] = chat_finish_reason(f, calls_ > 0);
  out.push_back(std::move(last));
  if (include_usage_) out.push_back(usage_chunk(id_, "chat.completion.chunk", created_, model_, u));
  return out;
}

// ---- Streaming: completions ----

OpenAICompletionStream::OpenAICompletionStream(std::string id, std::int64_t created, std::string model,
                                               bool include_usage)
    : id_(std::move(id)), model_(api::json_text(model)), created_(created), include_usage_(include_usage) {}

ojson OpenAICompletionStream::chunk(ojson choice) const {
  ojson c;
  c["id"] = id_;
  c["object"] = "text_completion";
  c["created"] = created_;
  c["model"] = model_;
  c["choices"] = ojson::array({std::move(choice)});
  if (include_usage_) c["usage"] = nullptr;
  return c;
}

std::vector<ojson> OpenAICompletionStream::delta(const std::string& text, const std::vector<ServeToken>& logprobs) {
  std::vector<ojson> out;
  if (text.empty() && logprobs.empty()) return out;
  ojson choice;
  choice["index"] = 0;
  choice["text"] = api::json_text(text);
  choice["logprobs"] = logprobs.empty() ? ojson(nullptr) : completion_logprobs(logprobs, text_chars_, text_pending_);
  choice["finish_reason"] = nullptr;
  out.push_back(chunk(std::move(choice)));
  return out;
}

std::vector<ojson> OpenAICompletionStream::finish(ServeFinish f, const ServeUsage& u) {
  std::vector<ojson> out;
  ojson choice;
  choice["index"] = 0;
  choice["text"] = "";
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = openai_finish_reason(f);
  out.push_back(chunk(std::move(choice)));
  if (include_usage_) out.push_back(usage_chunk(id_, "text_completion", created_, model_, u));
  return out;
}

}  // namespace dsv4::serve
