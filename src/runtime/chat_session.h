#pragma once
// A multi-turn conversation held in one sequence: each turn prefills only what is new.
//
// The sequence's cache is the truth: it holds exactly the token ids of history(), which are the
// first turn's rendered prompt, then for every turn the generated ids and the next turn's
// rendered continuation (the previous reply closed with the end-of-sentence token when the model
// did not produce it itself, then the new user turn in the V4.1 format, rendered by
// render_chat_continuation). A generated reply is kept as the model produced it, token for
// token, not re-tokenized; so the next turn's output is the same as that of one fresh prefill of
// history() (the forward pass gives the same logits however the positions were fed).
//
// Messages: messages() is the conversation as OpenAI-style messages (the assistant's replies
// parsed into reasoning, content and tool calls). A transcript (save/load) holds both; loading one
// renders the messages afresh and prefills them at the next turn.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/generator.h"
#include "text/chat_format.h"
#include "text/output_parser.h"

namespace dsv4 {

struct ChatTurn {
  GenerationResult generation;
  ParsedOutput parsed;            // the reply split into reasoning, content and tool calls
  std::vector<std::int32_t> prefill_ids;  // what this turn fed before generating
};

struct ChatCallbacks {
  std::function<void(std::size_t, std::size_t)> on_prefill;
  std::function<void(const ParseDelta&)> on_delta;  // streamed reply, already split
};

class ChatSession {
 public:
  // model and tokenizer must outlive the session; ctx = the sequence's context in tokens.
  ChatSession(Model& model, const Tokenizer& tokenizer, ChatOptions options, std::size_t ctx);

  // Adds a user message and generates the reply. Throws dsv4::Error when the turn does not fit
  // the context (the session is unchanged then).
  ChatTurn turn(const std::string& user_text, const GenerationParams& p, const ChatCallbacks& cb = {},
                const std::atomic<bool>* cancel = nullptr);

  // An optional system prompt for a conversation that has not started yet.
  void set_system(const std::string& text);
  // Changes thinking / effort for the turns to come (the cached turns stay as they were).
  void set_options(const ChatOptions& o) { options_ = o; }
  const ChatOptions& options() const { return options_; }

  // Forgets the conversation and the cache.
  void reset();

  const std::vector<ChatMessage>& messages() const { return messages_; }
  // The ids in the cache (in order), and those rendered but not yet fed.
  const std::vector<std::int32_t>& history() const { return history_; }
  const std::vector<std::int32_t>& pending() const { return pending_; }
  std::size_t cached_tokens() const { return static_cast<std::size_t>(seq_->pos()); }
  std::size_t context() const { return seq_->max_len(); }
  const std::vector<ChatTurn>& turns() const { return turns_; }

  // {"messages": [...OpenAI messages...], "history_ids": [...], "turns": [{prefill_ids,
  //  generated_ids, finish_reason}], "options": {...}}
  nlohmann::ordered_json transcript() const;
  // Replaces the conversation by a transcript's (or any messages file's) messages; the cache is
  // cleared and the next turn prefills their full rendering.
  void load(const nlohmann::ordered_json& doc, const std::string& source);

 private:
  std::vector<std::int32_t> encode(const std::string& text) const;

  Model& model_;
  const Tokenizer& tok_;
  ChatOptions options_;
  std::unique_ptr<SequenceState> seq_;
  std::vector<ChatMessage> messages_;
  std::vector<std::int32_t> history_;  // fed
  std::vector<std::int32_t> pending_;  // to feed before the next user turn's rendering
  std::vector<ChatTurn> turns_;
  std::int32_t eos_ = -1;
};

}  // namespace dsv4
