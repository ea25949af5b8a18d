#include "runtime/chat_session.h"

#include <algorithm>

#include "text/chat_tokens.h"
#include "util/error.h"

namespace dsv4 {
namespace {

nlohmann::ordered_json message_json(const ChatMessage& m) {
  nlohmann::ordered_json j;
  j["role"] = std::string(chat_role_name(m.role));
  std::string text;
  for (const ChatPart& p : m.content)
    if (p.kind == ChatPart::Kind::Text) text += p.text;
  j["content"] = text;
  if (m.reasoning) j["reasoning_content"] = *m.reasoning;
  if (!m.tool_calls.empty()) {
    nlohmann::ordered_json calls = nlohmann::ordered_json::array();
    for (const ChatToolCall& c : m.tool_calls)
      calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments.dump()}}}});
    j["tool_calls"] = calls;
  }
  return j;
}

}  // namespace

ChatSession::ChatSession(Model& model, const Tokenizer& tokenizer, ChatOptions options, std::size_t ctx)
    : model_(model), tok_(tokenizer), options_(options), seq_(model.new_sequence(ctx)) {
  std::optional<std::int32_t> eos = tok_.eos_id();
  if (!eos) eos = tok_.token_to_id(chat_token::kEos);
  if (!eos) fail("the tokenizer has no end-of-sentence token ({}), which closes every assistant turn", chat_token::kEos);
  eos_ = *eos;
}

std::vector<std::int32_t> ChatSession::encode(const std::string& text) const { return tok_.encode(text); }

void ChatSession::set_system(const std::string& text) {
  if (!turns_.empty() || !history_.empty())
    fail("the system prompt can only be set before the first turn (use /reset first)");
  messages_.erase(std::remove_if(messages_.begin(), messages_.end(),
                                 [](const ChatMessage& m) { return m.role == ChatRole::System; }),
                  messages_.end());
  if (!text.empty()) messages_.insert(messages_.begin(), chat_text_message(ChatRole::System, text));
}

void ChatSession::reset() {
  seq_->reset();
  messages_.clear();
  history_.clear();
  pending_.clear();
  turns_.clear();
}

ChatTurn ChatSession::turn(const std::string& user_text, const GenerationParams& p, const ChatCallbacks& cb,
                           const std::atomic<bool>* cancel) {
  const ChatMessage user = chat_text_message(ChatRole::User, user_text);
  std::vector<std::int32_t> prompt = pending_;
  if (history_.empty() && seq_->pos() == 0) {
    std::vector<ChatMessage> all = messages_;
    all.push_back(user);
    ChatOptions o = options_;
    o.add_bos = true;
    prompt = encode(render_chat(all, o));
  } else {
    const std::vector<ChatMessage> added{user};
    const std::vector<std::int32_t> more = encode(render_chat_continuation(messages_, added, options_).text);
    prompt.insert(prompt.end(), more.begin(), more.end());
  }
  if (history_.size() + prompt.size() + 1 > seq_->max_len())
    fail("this turn needs {} more tokens but the context has room for {} (context {} tokens, {} in use); "
         "/reset or raise -c",
         prompt.size() + 1, seq_->max_len() - history_.size(), seq_->max_len(), history_.size());

  OutputParserOptions po;
  po.thinking_started = options_.thinking;
  OutputParser parser(po);
  GenerationCallbacks gcb;
  gcb.on_prefill = cb.on_prefill;
  auto on_text = [&](const std::string& text) {
    if (text.empty()) return;
    const ParseDelta d = parser.feed(text);
    if (cb.on_delta && !d.empty()) cb.on_delta(d);
  };
  gcb.on_token = [&](const SampledToken&, const std::string& text) { on_text(text); };
  gcb.on_text = on_text;
  Generator gen(model_, tok_);
  ChatTurn t;
  t.generation = gen.generate(*seq_, prompt, p, gcb, cancel);
  const ParseDelta last = parser.finish();
  if (cb.on_delta && !last.empty()) cb.on_delta(last);
  t.parsed = parser.result();

  // What is now in the cache, and what the next turn must feed first.
  const GenerationResult& g = t.generation;
  t.prefill_ids.assign(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(g.prompt_fed));
  history_.insert(history_.end(), t.prefill_ids.begin(), t.prefill_ids.end());
  pending_.assign(prompt.begin() + static_cast<std::ptrdiff_t>(g.prompt_fed), prompt.end());
  const std::size_t fed_gen = g.has_pending ? g.ids.size() - 1 : g.ids.size();
  history_.insert(history_.end(), g.ids.begin(), g.ids.begin() + static_cast<std::ptrdiff_t>(fed_gen));
  if (g.has_pending) pending_.push_back(g.ids.back());
  if (g.ids.empty() || g.ids.back() != eos_ || g.finish != FinishReason::kStopToken) pending_.push_back(eos_);

  messages_.push_back(user);
  ChatMessage reply;
  reply.role = ChatRole::Assistant;
  reply.content = {ChatPart{ChatPart::Kind::Text, t.parsed.content, {}}};
  if (options_.thinking) reply.reasoning = t.parsed.reasoning_content;
  for (const ParsedToolCall& c : t.parsed.tool_calls) {
    ChatToolCall tc;
    tc.id = "call_" + std::to_string(turns_.size()) + "_" + std::to_string(reply.tool_calls.size());
    tc.name = c.name;
    tc.arguments = nlohmann::ordered_json::parse(c.arguments);
    reply.tool_calls.push_back(std::move(tc));
  }
  messages_.push_back(std::move(reply));
  turns_.push_back(t);
  return t;
}

nlohmann::ordered_json ChatSession::transcript() const {
  nlohmann::ordered_json j;
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages_) msgs.push_back(message_json(m));
  j["messages"] = msgs;
  j["history_ids"] = history_;
  nlohmann::ordered_json turns = nlohmann::ordered_json::array();
  for (const ChatTurn& t : turns_)
    turns.push_back({{"prefill_ids", t.prefill_ids},
                     {"generated_ids", t.generation.ids},
                     {"finish_reason", finish_reason_name(t.generation.finish)}});
  j["turns"] = turns;
  j["options"] = {{"thinking", options_.thinking}};
  return j;
}

void ChatSession::load(const nlohmann::ordered_json& doc, const std::string& source) {
  std::vector<ChatMessage> msgs = parse_chat_file(doc, source);
  reset();
  messages_ = std::move(msgs);
}

}  // namespace dsv4
