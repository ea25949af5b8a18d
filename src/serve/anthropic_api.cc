#include "serve/anthropic_api.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "serve/api_json.h"
#include "text/chat_message.h"

namespace dsv4::serve {

using api::bad;
using api::field;
using api::ojson;

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

ChatPart text_part(std::string text) { return ChatPart{ChatPart::Kind::Text, std::move(text), {}}; }

// A text block {"type": "text", "text": S}: S, checked for the image placeholder.
std::string block_text(const ojson& b, const std::string& at) {
  const ojson* t = field(b, "text");
  if (!t) bad(at + ".text", "a text block needs a string \"text\"");
  const std::string& s = api::as_string(*t, at + ".text");
  api::check_no_image_placeholder(s, at + ".text");
  return s;
}

// An image block {"type": "image", "source": {...}}: the source object as compact JSON (base64
// data or a URL; what the server does with it is its own business, as for OpenAI image parts).
ChatPart image_part(const ojson& b, const std::string& at) {
  const ojson* src = field(b, "source");
  if (!src) bad(at + ".source", "an image block needs a source");
  api::as_object(*src, at + ".source");
  ChatPart p;
  p.kind = ChatPart::Kind::Image;
  p.image.source = src->dump();
  return p;
}

const std::string& block_type(const ojson& b, const std::string& at) {
  api::as_object(b, at);
  const ojson* t = field(b, "type");
  if (!t) bad(at + ".type", "a content block needs a string \"type\"");
  return api::as_string(*t, at + ".type");
}

// tool_result content: absent (one empty text part, as a tool message's missing content), a
// string, or blocks (text, image; any other block is kept as an unsupported part).
std::vector<ChatPart> tool_result_content(const ojson& b, const std::string& at) {
  std::vector<ChatPart> parts;
  const ojson* c = field(b, "content");
  if (!c) {
    parts.push_back(text_part(""));
    return parts;
  }
  if (c->is_string()) {
    api::check_no_image_placeholder(c->get_ref<const std::string&>(), at + ".content");
    parts.push_back(text_part(c->get<std::string>()));
    return parts;
  }
  if (!c->is_array())
    bad(at + ".content", fmt::format("must be a string or an array of blocks, not {}", api::json_kind(*c)));
  for (std::size_t k = 0; k < c->size(); ++k) {
    const std::string bat = fmt::format("{}.content[{}]", at, k);
    const std::string& type = block_type((*c)[k], bat);
    if (type == "text") parts.push_back(text_part(block_text((*c)[k], bat)));
    else if (type == "image") parts.push_back(image_part((*c)[k], bat));
    else parts.push_back(ChatPart{ChatPart::Kind::Unsupported, type, {}});
  }
  if (parts.empty()) parts.push_back(text_part(""));
  return parts;
}

// A user message's blocks, in order. tool_result blocks become tool messages; the text and image
// blocks around them become user messages, split at the tool results so that the order is kept
// (Anthropic puts tool results first; text after them is the user's next words).
void convert_user(const ojson& content, const std::string& at, std::vector<ChatMessage>& out) {
  if (content.is_string()) {
    api::check_no_image_placeholder(content.get_ref<const std::string&>(), at + ".content");
    out.push_back(chat_text_message(ChatRole::User, content.get<std::string>()));
    return;
  }
  if (!content.is_array())
    bad(at + ".content", fmt::format("must be a string or an array of blocks, not {}", api::json_kind(content)));
  ChatMessage user;
  user.role = ChatRole::User;
  bool produced = false;
  auto flush_user = [&] {
    if (user.content.empty()) return;
    out.push_back(std::move(user));
    user = ChatMessage{};
    user.role = ChatRole::User;
    produced = true;
  };
  for (std::size_t k = 0; k < content.size(); ++k) {
    const std::string bat = fmt::format("{}.content[{}]", at, k);
    const ojson& b = content[k];
    const std::string& type = block_type(b, bat);
    if (type == "text") {
      user.content.push_back(text_part(block_text(b, bat)));
    } else if (type == "image") {
      user.content.push_back(image_part(b, bat));
    } else if (type == "tool_result") {
      flush_user();
      ChatMessage tool;
      tool.role = ChatRole::Tool;
      const ojson* id = field(b, "tool_use_id");
      if (!id) bad(bat + ".tool_use_id", "a tool_result block needs a tool_use_id");
      tool.tool_call_id = api::as_string(*id, bat + ".tool_use_id");
      // is_error is validated but not rendered: the encoder has no error flag, and the result's
      // text is what tells the model what went wrong.
      api::opt_bool(b, "is_error", bat);
      tool.content = tool_result_content(b, bat);
      out.push_back(std::move(tool));
      produced = true;
    } else if (type == "tool_use" || type == "thinking" || type == "redacted_thinking") {
      bad(bat + ".type", fmt::format("a {} block belongs in an assistant message", type));
    } else {
      // document, search_result, ...: no rendering; the encoder writes "[Unsupported TYPE]".
      user.content.push_back(ChatPart{ChatPart::Kind::Unsupported, type, {}});
    }
  }
  flush_user();
  if (!produced) out.push_back(chat_text_message(ChatRole::User, ""));  // content: [] keeps its turn
}

// An assistant message: text blocks → content parts, thinking → reasoning (concatenated),
// tool_use → tool calls; redacted_thinking has nothing to render and is skipped.
ChatMessage convert_assistant(const ojson& content, const std::string& at) {
  ChatMessage a;
  a.role = ChatRole::Assistant;
  if (content.is_string()) {
    api::check_no_image_placeholder(content.get_ref<const std::string&>(), at + ".content");
    a.content.push_back(text_part(content.get<std::string>()));
    return a;
  }
  if (!content.is_array())
    bad(at + ".content", fmt::format("must be a string or an array of blocks, not {}", api::json_kind(content)));
  for (std::size_t k = 0; k < content.size(); ++k) {
    const std::string bat = fmt::format("{}.content[{}]", at, k);
    const ojson& b = content[k];
    const std::string& type = block_type(b, bat);
    if (type == "text") {
      a.content.push_back(text_part(block_text(b, bat)));
    } else if (type == "thinking") {
      const ojson* t = field(b, "thinking");
      if (!t) bad(bat + ".thinking", "a thinking block needs a string \"thinking\"");
      const std::string& s = api::as_string(*t, bat + ".thinking");
      api::check_no_image_placeholder(s, bat + ".thinking");
      a.reasoning = a.reasoning.value_or("") + s;
    } else if (type == "redacted_thinking") {
      continue;
    } else if (type == "tool_use") {
      ChatToolCall call;
      const ojson* id = field(b, "id");
      if (!id) bad(bat + ".id", "a tool_use block needs an id");
      call.id = api::as_string(*id, bat + ".id");
      const ojson* name = field(b, "name");
      if (!name) bad(bat + ".name", "a tool_use block needs a name");
      call.name = api::as_string(*name, bat + ".name");
      if (call.name.empty()) bad(bat + ".name", "must not be empty");
      const ojson* input = field(b, "input");
      call.arguments = input ? api::as_object(*input, bat + ".input") : ojson::object();
      a.tool_calls.push_back(std::move(call));
    } else {
      bad(bat + ".type", fmt::format("block type \"{}\" is not supported in an assistant message", type));
    }
  }
  return a;
}

std::vector<ChatMessage> convert_messages(const ojson& body) {
  const ojson* msgs = field(body, "messages");
  if (!msgs) bad("messages", "is required");
  api::as_array(*msgs, "messages");
  if (msgs->empty()) bad("messages", "must contain at least one message");
  std::vector<ChatMessage> out;
  for (std::size_t i = 0; i < msgs->size(); ++i) {
    const std::string at = fmt::format("messages[{}]", i);
    const ojson& m = api::as_object((*msgs)[i], at);
    const ojson* role = field(m, "role");
    if (!role) bad(at + ".role", "is required");
    const std::string& r = api::as_string(*role, at + ".role");
    const ojson* content = field(m, "content");
    if (!content) bad(at + ".content", "is required");
    if (r == "user") {
      convert_user(*content, at, out);
    } else if (r == "assistant") {
      ChatMessage a = convert_assistant(*content, at);
      // A final assistant message is a prefill: the reply continues it (Anthropic's semantics),
      // which the encoder renders as a turn without EOS (wo_eos, spec §10).
      if (i + 1 == msgs->size() && a.tool_calls.empty()) a.wo_eos = true;
      out.push_back(std::move(a));
    } else {
      bad(at + ".role", fmt::format("must be \"user\" or \"assistant\", not \"{}\"", r));
    }
  }
  return out;
}

// system: a string or text blocks → a system message at index 0 (none for an empty string).
void parse_system(const ojson& body, std::vector<ChatMessage>& messages) {
  const ojson* s = field(body, "system");
  if (!s) return;
  ChatMessage sys;
  sys.role = ChatRole::System;
  if (s->is_string()) {
    if (s->get_ref<const std::string&>().empty()) return;
    api::check_no_image_placeholder(s->get_ref<const std::string&>(), "system");
    sys.content.push_back(text_part(s->get<std::string>()));
  } else if (s->is_array()) {
    for (std::size_t k = 0; k < s->size(); ++k) {
      const std::string at = fmt::format("system[{}]", k);
      const std::string& type = block_type((*s)[k], at);
      if (type != "text") bad(at + ".type", fmt::format("system blocks must be text blocks, not \"{}\"", type));
      sys.content.push_back(text_part(block_text((*s)[k], at)));
    }
    if (sys.content.empty()) return;
  } else {
    bad("system", fmt::format("must be a string or an array of text blocks, not {}", api::json_kind(*s)));
  }
  messages.insert(messages.begin(), std::move(sys));
}

// tools: [{name, description?, input_schema}] → OpenAI-style function objects {name,
// description, parameters}, the form the encoder renders. Server tools (a `type` other than
// "custom") have no implementation here.
std::vector<ojson> parse_tools(const ojson& body) {
  std::vector<ojson> out;
  const ojson* v = field(body, "tools");
  if (!v) return out;
  api::as_array(*v, "tools");
  std::set<std::string> names;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string at = fmt::format("tools[{}]", i);
    const ojson& t = api::as_object((*v)[i], at);
    if (auto type = api::opt_string(t, "type", at); type && *type != "custom")
      bad(at + ".type", fmt::format("server tools (\"{}\") are not supported; only custom tools are", *type));
    const ojson* name = field(t, "name");
    if (!name) bad(at + ".name", "is required");
    const std::string& n = api::as_string(*name, at + ".name");
    if (n.empty()) bad(at + ".name", "must not be empty");
    if (!names.insert(n).second) bad(at + ".name", fmt::format("duplicate tool name \"{}\"", n));
    const ojson* schema = field(t, "input_schema");
    if (!schema) bad(at + ".input_schema", "is required");
    api::as_object(*schema, at + ".input_schema");
    ojson f;
    f["name"] = n;
    if (auto d = api::opt_string(t, "description", at)) f["description"] = *d;
    f["parameters"] = *schema;
    out.push_back(std::move(f));
  }
  return out;
}

// tool_choice: {type: auto | any | tool | none, name (tool), disable_parallel_tool_use?}.
void parse_tool_choice(const ojson& body, const std::set<std::string>& declared, ServeRequest& r) {
  const ojson* v = field(body, "tool_choice");
  if (!v) return;
  api::as_object(*v, "tool_choice");
  auto type = api::opt_string(*v, "type", "tool_choice");
  if (!type) bad("tool_choice.type", "is required");
  api::opt_bool(*v, "disable_parallel_tool_use", "tool_choice");
  if (*type == "auto") r.tool_choice = ToolChoice::automatic;
  else if (*type == "none") r.tool_choice = ToolChoice::none;
  else if (*type == "any") r.tool_choice = ToolChoice::required;
  else if (*type == "tool") r.tool_choice = ToolChoice::named;
  else bad("tool_choice.type", fmt::format("must be \"auto\", \"any\", \"tool\" or \"none\", not \"{}\"", *type));
  if ((r.tool_choice == ToolChoice::required || r.tool_choice == ToolChoice::named) && declared.empty())
    bad("tool_choice", "is only allowed when tools are declared");
  if (r.tool_choice == ToolChoice::named) {
    auto name = api::opt_string(*v, "name", "tool_choice");
    if (!name || name->empty()) bad("tool_choice.name", "a tool choice of type \"tool\" needs a name");
    if (!declared.count(*name))
      bad("tool_choice.name", fmt::format("\"{}\" is not among the declared tools", *name));
    r.tool_name = *name;
  }
}

// thinking: {type: "enabled", budget_tokens} → thinking mode with the default effort (the budget
// is not a knob of this model; Anthropic's minimum of 1024 is not enforced, any positive budget
// is accepted); {type: "disabled"} or absent → chat mode.
void parse_thinking(const ojson& body, ServeRequest& r) {
  r.chat.thinking = false;
  const ojson* t = field(body, "thinking");
  if (!t) return;
  api::as_object(*t, "thinking");
  auto type = api::opt_string(*t, "type", "thinking");
  if (type == "enabled") {
    api::opt_integer(*t, "budget_tokens", 1, kInt64Max, "thinking");
    r.chat.thinking = true;
  } else if (type != "disabled") {
    bad("thinking.type", "must be \"enabled\" or \"disabled\"");
  }
}

void parse_sampling(const ojson& body, ServeRequest& r) {
  SamplingParams& s = r.gen.sampling;
  if (auto t = api::opt_number(body, "temperature", 0.0, 1.0)) s.temperature = *t;
  if (auto p = api::opt_number(body, "top_p", 0.0, 1.0)) {
    if (*p <= 0.0) bad("top_p", "must be greater than 0 and at most 1");
    s.top_p = *p;
  }
  if (auto k = api::opt_integer(body, "top_k", 0, kInt64Max)) s.top_k = static_cast<std::size_t>(*k);
  api::validate_sampling(s);
  if (const ojson* v = field(body, "stop_sequences")) {
    api::as_array(*v, "stop_sequences");
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string at = fmt::format("stop_sequences[{}]", i);
      const std::string& seq = api::as_string((*v)[i], at);
      if (seq.empty()) bad(at, "must not be empty");
      r.gen.stop_strings.push_back(seq);
    }
  }
}

ojson usage_json(std::size_t input_tokens, std::size_t output_tokens) {
  return ojson{{"input_tokens", input_tokens}, {"output_tokens", output_tokens}};
}

// A stop that came after tool calls is a tool_use stop, whatever the caller said.
const char* stop_reason(ServeFinish f, bool by_sequence, bool any_calls) {
  if (f == ServeFinish::stop && !by_sequence && any_calls) return "tool_use";
  return anthropic_stop_reason(f, by_sequence);
}

}  // namespace

ServeRequest parse_anthropic_messages(const ojson& body) {
  api::require_object(body);
  ServeRequest r;
  r.api = ApiKind::anthropic_messages;
  if (auto m = api::opt_string(body, "model")) r.model = *m;
  const ojson* mt = field(body, "max_tokens");
  if (!mt) bad("max_tokens", "is required");
  r.gen.max_new_tokens = static_cast<std::size_t>(*api::opt_integer(body, "max_tokens", 1, kInt64Max));
  r.max_tokens_given = true;

  r.messages = convert_messages(body);
  parse_system(body, r.messages);

  std::vector<ojson> tools = parse_tools(body);
  std::set<std::string> declared;
  for (const ojson& f : tools) declared.insert(f.at("name").get<std::string>());
  parse_tool_choice(body, declared, r);
  // tool_choice none: the model must not call tools, so they stay out of the prompt.
  if (!tools.empty() && r.tool_choice != ToolChoice::none) {
    api::leading_system_message(r.messages).tools = std::move(tools);
    r.has_tools = true;
  }

  parse_thinking(body, r);
  parse_sampling(body, r);
  r.stream = api::opt_bool(body, "stream").value_or(false);
  return r;
}

ojson anthropic_error_json(const ApiError& e) {
  const char* type = "api_error";
  switch (e.kind()) {
    case ApiErrorKind::invalid_request:
    case ApiErrorKind::context_overflow: type = "invalid_request_error"; break;
    case ApiErrorKind::authentication: type = "authentication_error"; break;
    case ApiErrorKind::not_found: type = "not_found_error"; break;
    case ApiErrorKind::overloaded: type = "rate_limit_error"; break;  // our 429 (not Anthropic's 529)
    case ApiErrorKind::server: type = "api_error"; break;
  }
  return ojson{{"type", "error"}, {"error", {{"type", type}, {"message", api::json_text(e.what())}}}};
}

const char* anthropic_stop_reason(ServeFinish f, bool stopped_by_sequence) {
  switch (f) {
    case ServeFinish::tool_calls: return "tool_use";
    case ServeFinish::length: return "max_tokens";
    case ServeFinish::stop: return stopped_by_sequence ? "stop_sequence" : "end_turn";
    case ServeFinish::cancelled: return "end_turn";
  }
  return "end_turn";
}

const char* anthropic_stop_reason(const ServeResult& r) {
  return stop_reason(r.finish, !r.stop_sequence.empty(), !r.parsed.tool_calls.empty());
}

std::string tool_use_id(const std::string& response_id, std::size_t index) {
  return fmt::format("toolu_{}_{}", api::id_suffix(response_id), index);
}

namespace {

ojson tool_use_block(const ServeResult& r, std::size_t i) {
  const ParsedToolCall& c = r.parsed.tool_calls[i];
  // The parser's arguments are a JSON object; tool_arguments_object guards the exceptions.
  ojson input = tool_arguments_object(ojson(api::json_text(c.arguments)), "tool_use.input");
  return ojson{{"type", "tool_use"}, {"id", tool_use_id(r.id, i)}, {"name", api::json_text(c.name)},
               {"input", std::move(input)}};
}

// The blocks in the order the model produced them, read off the parser's spans: each run of
// reasoning is a thinking block, each run of content a text block, each call a tool_use block;
// markup inside a run does not split it. This is the block sequence the stream sends (the
// stream opens a block when the kind of text changes), so a client sees the same message either
// way. Returns false if the spans do not account for the fields byte for byte.
bool blocks_in_order(const ServeResult& r, ojson& content) {
  const ParsedOutput& p = r.parsed;
  struct Run {
    SpanKind kind;
    std::size_t call, bytes;
  };
  std::vector<Run> runs;
  for (const OutputSpan& s : p.spans) {
    if (s.kind == SpanKind::markup) continue;
    if (!runs.empty() && runs.back().kind == s.kind && (s.kind != SpanKind::tool_call || runs.back().call == s.call))
      runs.back().bytes += s.end - s.begin;
    else
      runs.push_back({s.kind, s.call, s.end - s.begin});
  }
  std::size_t rpos = 0, cpos = 0;
  std::vector<bool> call_done(p.tool_calls.size(), false);
  for (const Run& run : runs) {
    if (run.kind == SpanKind::reasoning) {
      if (rpos + run.bytes > p.reasoning_content.size()) return false;
      content.push_back(ojson{{"type", "thinking"},
                              {"thinking", api::json_text(std::string_view(p.reasoning_content).substr(rpos, run.bytes))},
                              {"signature", ""}});
      rpos += run.bytes;
    } else if (run.kind == SpanKind::content) {
      if (cpos + run.bytes > p.content.size()) return false;
      content.push_back(ojson{{"type", "text"}, {"text", api::json_text(std::string_view(p.content).substr(cpos, run.bytes))}});
      cpos += run.bytes;
    } else {
      if (run.call >= p.tool_calls.size() || call_done[run.call]) return false;
      call_done[run.call] = true;
      content.push_back(tool_use_block(r, run.call));
    }
  }
  return rpos == p.reasoning_content.size() && cpos == p.content.size() &&
         std::find(call_done.begin(), call_done.end(), false) == call_done.end();
}

}  // namespace

ojson anthropic_message_response(const ServeResult& r) {
  const ParsedOutput& p = r.parsed;
  ojson content = ojson::array();
  if (!blocks_in_order(r, content)) {
    // Spans that do not tile the fields (a result built by hand): thinking, text, tool calls.
    content = ojson::array();
    if (!p.reasoning_content.empty())
      content.push_back(ojson{{"type", "thinking"}, {"thinking", api::json_text(p.reasoning_content)}, {"signature", ""}});
    if (!p.content.empty()) content.push_back(ojson{{"type", "text"}, {"text", api::json_text(p.content)}});
    for (std::size_t i = 0; i < p.tool_calls.size(); ++i) content.push_back(tool_use_block(r, i));
  }
  const char* reason = anthropic_stop_reason(r);
  ojson out;
  out["id"] = r.id;
  out["type"] = "message";
  out["role"] = "assistant";
  out["model"] = api::json_text(r.model);
  out["content"] = std::move(content);
  out["stop_reason"] = reason;
  out["stop_sequence"] =
      std::string_view(reason) == "stop_sequence" ? ojson(api::json_text(r.stop_sequence)) : ojson(nullptr);
  out["usage"] = usage_json(r.usage.prompt_tokens, r.usage.completion_tokens);
  return out;
}

std::string SseEvent::wire() const {
  // The replace handler makes dump() total even if a caller put raw bytes into `data`.
  return "event: " + event + "\ndata: " + data.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n\n";
}

// ---- Streaming ----

AnthropicStream::AnthropicStream(std::string id, std::string model, std::size_t prompt_tokens)
    : id_(std::move(id)), model_(api::json_text(model)), prompt_tokens_(prompt_tokens) {}

std::vector<SseEvent> AnthropicStream::begin() {
  ojson msg;
  msg["id"] = id_;
  msg["type"] = "message";
  msg["role"] = "assistant";
  msg["model"] = model_;
  msg["content"] = ojson::array();
  msg["stop_reason"] = nullptr;
  msg["stop_sequence"] = nullptr;
  msg["usage"] = usage_json(prompt_tokens_, 0);
  return {SseEvent{"message_start", ojson{{"type", "message_start"}, {"message", std::move(msg)}}}};
}

void AnthropicStream::open(Block b, std::vector<SseEvent>& out, const ToolCallDelta* call) {
  ojson block;
  switch (b) {
    case Block::thinking: block = ojson{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}; break;
    case Block::text: block = ojson{{"type", "text"}, {"text", ""}}; break;
    case Block::tool_use:
      block = ojson{{"type", "tool_use"},
                    {"id", tool_use_id(id_, call ? call->index : 0)},
                    {"name", call ? api::json_text(call->name) : std::string()},
                    {"input", ojson::object()}};
      any_tool_use_ = true;
      break;
    case Block::none: return;
  }
  out.push_back(SseEvent{"content_block_start",
                         ojson{{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}}});
  open_ = b;
}

void AnthropicStream::close(std::vector<SseEvent>& out) {
  if (open_ == Block::none) return;
  // Anthropic ends a thinking block with its signature; ours is empty (nothing to verify).
  if (open_ == Block::thinking)
    out.push_back(SseEvent{"content_block_delta", ojson{{"type", "content_block_delta"},
                                                        {"index", index_},
                                                        {"delta", {{"type", "signature_delta"}, {"signature", ""}}}}});
  out.push_back(SseEvent{"content_block_stop", ojson{{"type", "content_block_stop"}, {"index", index_}}});
  ++index_;
  open_ = Block::none;
}

std::vector<SseEvent> AnthropicStream::delta(const ParseDelta& d) {
  std::vector<SseEvent> out;
  auto block_delta = [&](ojson delta) {
    out.push_back(SseEvent{"content_block_delta",
                           ojson{{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}}});
  };
  auto reasoning = [&](std::string_view text) {
    if (text.empty()) return;
    if (open_ != Block::thinking) {
      close(out);
      open(Block::thinking, out);
    }
    block_delta(ojson{{"type", "thinking_delta"}, {"thinking", api::json_text(text)}});
  };
  auto content = [&](std::string_view text) {
    if (text.empty()) return;
    if (open_ != Block::text) {
      close(out);
      open(Block::text, out);
    }
    block_delta(ojson{{"type", "text_delta"}, {"text", api::json_text(text)}});
  };
  std::vector<bool> sent(d.tool_calls.size(), false);
  auto call = [&](std::size_t index) {  // every fragment of call `index` in this delta, in order
    for (std::size_t i = 0; i < d.tool_calls.size(); ++i) {
      const ToolCallDelta& t = d.tool_calls[i];
      if (sent[i] || t.index != index) continue;
      sent[i] = true;
      if (t.begins) {
        close(out);
        open(Block::tool_use, out, &t);
      }
      // A fragment of a call whose block is not open (its start was never seen) has no block to
      // go to; the parser always begins a call before continuing it, so this only guards.
      if (open_ != Block::tool_use) continue;
      if (!t.arguments.empty())
        block_delta(ojson{{"type", "input_json_delta"}, {"partial_json", api::json_text(t.arguments)}});
      if (t.ends) close(out);
    }
  };
  // In the order the output came (the delta's spans), so that one delta holding, say, a call and
  // then text after it opens the blocks in that order, as the non-streamed message lists them.
  std::string_view rest_reasoning = d.reasoning, rest_content = d.content;
  for (const OutputSpan& sp : d.spans) {
    const std::size_t n = sp.end - sp.begin;
    if (sp.kind == SpanKind::reasoning && n <= rest_reasoning.size()) {
      reasoning(rest_reasoning.substr(0, n));
      rest_reasoning.remove_prefix(n);
    } else if (sp.kind == SpanKind::content && n <= rest_content.size()) {
      content(rest_content.substr(0, n));
      rest_content.remove_prefix(n);
    } else if (sp.kind == SpanKind::tool_call) {
      call(sp.call);
    }
  }
  // What the spans did not place (fragments with no bytes of their own, such as a call ended at
  // finish()), in field order.
  reasoning(rest_reasoning);
  content(rest_content);
  for (std::size_t i = 0; i < d.tool_calls.size(); ++i)
    if (!sent[i]) call(d.tool_calls[i].index);
  return out;
}

std::vector<SseEvent> AnthropicStream::finish(ServeFinish f, const std::string& stop_sequence, const ServeUsage& u) {
  std::vector<SseEvent> out;
  close(out);
  const char* reason = stop_reason(f, !stop_sequence.empty(), any_tool_use_);
  ojson delta;
  delta["stop_reason"] = reason;
  delta["stop_sequence"] =
      std::string_view(reason) == "stop_sequence" ? ojson(api::json_text(stop_sequence)) : ojson(nullptr);
  out.push_back(SseEvent{"message_delta", ojson{{"type", "message_delta"},
                                                {"delta", std::move(delta)},
                                                {"usage", {{"output_tokens", u.completion_tokens}}}}});
  out.push_back(SseEvent{"message_stop", ojson{{"type", "message_stop"}}});
  return out;
}

}  // namespace dsv4::serve
