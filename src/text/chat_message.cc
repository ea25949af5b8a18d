#include "text/chat_message.h"

#include <array>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <utility>

#include "text/chat_json.h"
#include "text/chat_tokens.h"
#include "util/error.h"

namespace dsv4 {

using ojson = nlohmann::ordered_json;

std::string_view chat_role_name(ChatRole r) {
  switch (r) {
    case ChatRole::System: return "system";
    case ChatRole::Developer: return "developer";
    case ChatRole::User: return "user";
    case ChatRole::Assistant: return "assistant";
    case ChatRole::Tool: return "tool";
    case ChatRole::LatestReminder: return "latest_reminder";
  }
  return "?";
}

ChatMessage chat_text_message(ChatRole role, std::string text) {
  ChatMessage m;
  m.role = role;
  m.content.push_back(ChatPart{ChatPart::Kind::Text, std::move(text), {}});
  return m;
}

std::optional<std::string_view> chat_task_token(std::string_view task) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kTasks{{
      {"action", "<｜action｜>"},
      {"query", "<｜query｜>"},
      {"authority", "<｜authority｜>"},
      {"domain", "<｜domain｜>"},
      {"title", "<｜title｜>"},
      {"read_url", "<｜read_url｜>"},
  }};
  for (const auto& [name, token] : kTasks)
    if (name == task) return token;
  return std::nullopt;
}

namespace {

// A located field of one message: "SOURCE: messages[I].FIELD".
struct Where {
  const std::string& source;
  std::size_t index;
  std::string at(std::string_view field) const { return fmt::format("{}: messages[{}].{}", source, index, field); }
};

const char* type_name(const ojson& j) { return j.type_name(); }

// The image placeholder is a part of its own; inside text it would silently become an image.
void check_no_placeholder(const std::string& text, const std::string& where) {
  if (text.find(chat_token::kImage) != std::string::npos)
    fail("{}: contains the image placeholder {}; send images as separate image parts (spec §9)", where,
         chat_token::kImage);
}

std::string optional_string(const ojson& m, const char* key, const Where& w) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return {};
  if (!it->is_string()) fail("{}: must be a string, not {}", w.at(key), type_name(*it));
  return it->get<std::string>();
}

bool optional_bool(const ojson& m, const char* key, const Where& w) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return false;
  if (!it->is_boolean()) fail("{}: must be true or false, not {}", w.at(key), type_name(*it));
  return it->get<bool>();
}

ChatImage image_source(const ojson& v, const std::string& where) {
  if (v.is_string()) return {v.get<std::string>()};
  if (v.is_object()) {
    if (auto u = v.find("url"); u != v.end() && u->is_string()) return {u->get<std::string>()};
    if (!v.empty()) return {python_json_dumps(v)};
  }
  fail("{}: an image part needs a source (a URL string, or an object with \"url\") (spec §9)", where);
}

ChatPart parse_part(const ojson& p, ChatRole role, const std::string& where) {
  if (!p.is_object()) fail("{}: a content part must be an object, not {}", where, type_name(p));
  auto t = p.find("type");
  if (t == p.end() || !t->is_string()) fail("{}.type: a content part needs a string \"type\"", where);
  const std::string& type = t->get_ref<const std::string&>();
  if (type == "text") {
    auto x = p.find("text");
    if (x == p.end() || !x->is_string()) fail("{}.text: a text part needs a string \"text\"", where);
    check_no_placeholder(x->get<std::string>(), where + ".text");
    return {ChatPart::Kind::Text, x->get<std::string>(), {}};
  }
  if (type == "image_url" || type == "image") {
    // The OpenAI form keeps the source under "image_url"; other clients use "image", "url",
    // "source" or "data". The first one present (and not null) is the record.
    for (const char* key : {"image_url", "image", "url", "source", "data"}) {
      auto s = p.find(key);
      if (s != p.end() && !s->is_null()) return {ChatPart::Kind::Image, {}, image_source(*s, where + "." + key)};
    }
    fail("{}: an image part needs a source (image_url, image, url, source or data) (spec §9)", where);
  }
  // Only user turns (and tool results inside them) have a rendering for unknown parts (§8, §9).
  if (role != ChatRole::User && role != ChatRole::Tool)
    fail("{}.type: part type '{}' is not supported on a {} message (only text and image parts are)", where, type,
         chat_role_name(role));
  return {ChatPart::Kind::Unsupported, type, {}};
}

std::vector<ChatPart> parse_content(const ojson& m, ChatRole role, const Where& w) {
  std::vector<ChatPart> parts;
  auto c = m.find("content");
  if (c == m.end() || c->is_null()) {
    if (role == ChatRole::User || role == ChatRole::Tool) parts.push_back({});
    return parts;
  }
  if (c->is_string()) {
    check_no_placeholder(c->get<std::string>(), w.at("content"));
    parts.push_back({ChatPart::Kind::Text, c->get<std::string>(), {}});
    return parts;
  }
  if (!c->is_array())
    fail("{}: must be a string, a list of parts or null, not {}", w.at("content"), type_name(*c));
  for (std::size_t k = 0; k < c->size(); ++k)
    parts.push_back(parse_part((*c)[k], role, w.at(fmt::format("content[{}]", k))));
  return parts;
}

// One OpenAI tool entry {"type":"function","function":{...}} → its function object.
ojson tool_function(const ojson& t, const std::string& where) {
  if (!t.is_object()) fail("{}: a tool must be an object, not {}", where, type_name(t));
  if (auto ty = t.find("type"); ty != t.end() && !(ty->is_string() && *ty == "function"))
    fail("{}.type: only \"function\" tools are supported", where);
  auto f = t.find("function");
  if (f == t.end() || !f->is_object())
    fail("{}: expected the OpenAI form {{\"type\": \"function\", \"function\": {{...}}}}", where);
  return *f;
}

std::vector<ojson> parse_tools(const ojson& tools, const std::string& where) {
  std::vector<ojson> out;
  if (tools.is_null()) return out;
  if (!tools.is_array()) fail("{}: must be a list of tools, not {}", where, type_name(tools));
  for (std::size_t k = 0; k < tools.size(); ++k) out.push_back(tool_function(tools[k], fmt::format("{}[{}]", where, k)));
  return out;
}

ChatToolCall parse_tool_call(const ojson& tc, const std::string& where) {
  if (!tc.is_object()) fail("{}: a tool call must be an object, not {}", where, type_name(tc));
  if (auto ty = tc.find("type"); ty != tc.end() && !ty->is_null() && !(ty->is_string() && *ty == "function"))
    fail("{}.type: only \"function\" tool calls are supported", where);
  ChatToolCall call;
  if (auto id = tc.find("id"); id != tc.end() && !id->is_null()) {
    if (!id->is_string()) fail("{}.id: must be a string, not {}", where, type_name(*id));
    call.id = id->get<std::string>();
  }
  // OpenAI nests name and arguments under "function"; the encoder's internal form is flat.
  const ojson* body = &tc;
  std::string at = where;
  if (auto f = tc.find("function"); f != tc.end()) {
    if (!f->is_object()) fail("{}.function: must be an object, not {}", where, type_name(*f));
    body = &*f;
    at += ".function";
  }
  auto name = body->find("name");
  if (name == body->end() || !name->is_string()) fail("{}.name: a tool call needs a string name", at);
  call.name = name->get<std::string>();
  auto args = body->find("arguments");
  call.arguments = tool_arguments_object(args == body->end() ? ojson() : *args, at + ".arguments");
  return call;
}

ChatRole parse_role(const ojson& m, const Where& w) {
  auto r = m.find("role");
  if (r == m.end() || !r->is_string()) fail("{}: every message needs a string role", w.at("role"));
  const std::string& s = r->get_ref<const std::string&>();
  for (ChatRole role : {ChatRole::System, ChatRole::Developer, ChatRole::User, ChatRole::Assistant, ChatRole::Tool,
                        ChatRole::LatestReminder})
    if (s == chat_role_name(role)) return role;
  fail("{}: unknown role '{}' (expected system, developer, user, assistant, tool or latest_reminder)", w.at("role"),
       s);
}

bool present(const ojson& m, const char* key) {
  auto it = m.find(key);
  return it != m.end() && !it->is_null();
}

ChatMessage parse_message(const ojson& m, const Where& w) {
  if (!m.is_object()) fail("{}: messages[{}]: a message must be an object, not {}", w.source, w.index, type_name(m));
  ChatMessage msg;
  msg.role = parse_role(m, w);
  msg.content = parse_content(m, msg.role, w);
  const bool schema_role = msg.role == ChatRole::System || msg.role == ChatRole::Developer;
  // Tools decide drop_thinking for the whole conversation (§2 step 5) but render only on system
  // and developer messages, so anywhere else they are rejected rather than silently half-used.
  for (const char* key : {"tools", "response_format"})
    if (!schema_role && present(m, key))
      fail("{}: only system and developer messages carry {}", w.at(key), key);
  if (schema_role) {
    if (auto t = m.find("tools"); t != m.end()) msg.tools = parse_tools(*t, w.at("tools"));
    if (present(m, "response_format")) msg.response_format = m.at("response_format");
  }
  if (msg.role == ChatRole::User || msg.role == ChatRole::Developer) {
    msg.task = optional_string(m, "task", w);
    if (!msg.task.empty() && !chat_task_token(msg.task))
      fail("{}: unknown task '{}' (expected action, query, authority, domain, title or read_url)", w.at("task"),
           msg.task);
  }
  if (msg.role == ChatRole::Developer) {
    // Rendered, the content is its parts joined by "\n\n": empty only for no parts or one empty text.
    bool empty = msg.content.empty() ||
                 (msg.content.size() == 1 && msg.content[0].kind == ChatPart::Kind::Text && msg.content[0].text.empty());
    if (empty)
      fail("{}: a developer message needs non-empty content (spec §4.3)", w.at("content"));
  }
  if (msg.role == ChatRole::Tool) msg.tool_call_id = optional_string(m, "tool_call_id", w);
  if (msg.role == ChatRole::Assistant) {
    std::string rc = optional_string(m, "reasoning_content", w);
    std::string alias = optional_string(m, "reasoning", w);
    if (present(m, "reasoning_content") && present(m, "reasoning") && rc != alias)
      fail("{}: reasoning_content and its alias reasoning differ; send one of them", w.at("reasoning"));
    if (present(m, "reasoning_content"))
      msg.reasoning = rc;
    else if (present(m, "reasoning"))
      msg.reasoning = alias;
    if (msg.reasoning) check_no_placeholder(*msg.reasoning, w.at("reasoning_content"));
    msg.wo_eos = optional_bool(m, "wo_eos", w) || optional_bool(m, "prefix", w);
    if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
      if (!tc->is_array()) fail("{}: must be a list, not {}", w.at("tool_calls"), type_name(*tc));
      for (std::size_t k = 0; k < tc->size(); ++k)
        msg.tool_calls.push_back(parse_tool_call((*tc)[k], w.at(fmt::format("tool_calls[{}]", k))));
    }
  }
  return msg;
}

}  // namespace

ojson tool_arguments_object(const ojson& raw, const std::string& where) {
  if (raw.is_object()) return raw;
  if (raw.is_null()) return ojson::object();
  if (!raw.is_string()) fail("{}: must be a JSON string or an object, not {}", where, type_name(raw));
  const std::string& s = raw.get_ref<const std::string&>();
  ojson parsed = ojson::parse(s, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_string()) parsed = ojson::parse(parsed.get<std::string>(), nullptr, false);  // double-encoded
  if (parsed.is_object()) return parsed;
  ojson wrapped = ojson::object();
  wrapped["arguments"] = s;
  return wrapped;
}

std::vector<ChatMessage> parse_chat_messages(const ojson& messages, const std::string& source) {
  if (!messages.is_array()) fail("{}: messages must be a list, not {}", source, type_name(messages));
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  for (std::size_t i = 0; i < messages.size(); ++i) out.push_back(parse_message(messages[i], Where{source, i}));
  return out;
}

std::vector<ChatMessage> parse_chat_file(const ojson& doc, const std::string& source) {
  if (doc.is_array()) return parse_chat_messages(doc, source);
  if (!doc.is_object())
    fail("{}: expected a list of messages or an object with \"messages\", not {}", source, type_name(doc));
  auto m = doc.find("messages");
  if (m == doc.end()) fail("{}: the object has no \"messages\" list", source);
  std::vector<ChatMessage> msgs = parse_chat_messages(*m, source);
  auto t = doc.find("tools");
  if (t == doc.end()) return msgs;
  std::vector<ojson> tools = parse_tools(*t, source + ": tools");
  if (tools.empty()) return msgs;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    if (msgs[i].role != ChatRole::System) continue;
    if (!msgs[i].tools.empty())
      fail("{}: top-level tools and messages[{}].tools are both given; send the tools once", source, i);
    msgs[i].tools = std::move(tools);
    return msgs;
  }
  ChatMessage sys;
  sys.role = ChatRole::System;
  sys.tools = std::move(tools);
  msgs.insert(msgs.begin(), std::move(sys));
  return msgs;
}

std::vector<ChatMessage> load_chat_file(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("'{}': cannot open the messages file", path);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const std::string source = path == "-" ? "<stdin>" : path;
  ojson doc;
  try {
    doc = ojson::parse(text);
  } catch (const ojson::parse_error& e) {
    fail("{}: not valid JSON: {}", source, e.what());
  }
  return parse_chat_file(doc, source);
}

}  // namespace dsv4
