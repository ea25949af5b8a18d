#include "text/chat_format.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <string_view>

#include "text/chat_dsml.h"
#include "util/error.h"

namespace dsv4 {
namespace {

namespace tok = chat_token;

// One element of a user turn after merging (§8): a part of a user message, or a whole tool
// message (rendered as <tool_result>…</tool_result>).
struct Piece {
  const ChatPart* part = nullptr;     // set for a user message's part
  const ChatMessage* tool = nullptr;  // set for a tool result
};

// A message of the processed list: tool messages are gone, merged into user turns.
struct Turn {
  ChatRole role = ChatRole::User;  // never Tool
  const ChatMessage* msg = nullptr;  // the message; for a user turn, the one that opened it
  std::vector<Piece> pieces;         // user turns only
  std::string task;                  // user/developer: the opening message's task
  std::size_t first_src = 0, last_src = 0;  // the input messages it came from (inclusive)
};

// §2 step 2: consecutive user and tool messages collapse into one user turn; a user message is
// not appended to a turn that carries a task (and an appended message's own task is lost: R's
// quirk, §10).
std::vector<Turn> merge_turns(const std::vector<const ChatMessage*>& msgs) {
  std::vector<Turn> turns;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const ChatMessage& m = *msgs[i];
    const bool into_last = !turns.empty() && turns.back().role == ChatRole::User;
    if (m.role == ChatRole::Tool) {
      if (!into_last) turns.push_back(Turn{ChatRole::User, &m, {}, "", i, i});
      turns.back().pieces.push_back(Piece{nullptr, &m});
      turns.back().last_src = i;
    } else if (m.role == ChatRole::User) {
      if (!into_last || !turns.back().task.empty()) turns.push_back(Turn{ChatRole::User, &m, {}, m.task, i, i});
      for (const ChatPart& p : m.content) turns.back().pieces.push_back(Piece{&p, nullptr});
      turns.back().last_src = i;
    } else {
      turns.push_back(Turn{m.role, &m, {}, m.role == ChatRole::Developer ? m.task : "", i, i});
    }
  }
  return turns;
}

// §2 step 3: within a user turn holding several tool results, order them stably by the position
// of their tool_call_id among the ids of the latest preceding assistant with tool calls; unknown
// ids sort as 0; other pieces keep their slots.
void order_tool_results(std::vector<Turn>& turns) {
  std::map<std::string, std::size_t> order;
  for (Turn& t : turns) {
    if (t.role == ChatRole::Assistant && !t.msg->tool_calls.empty()) {
      order.clear();
      for (std::size_t k = 0; k < t.msg->tool_calls.size(); ++k)
        if (!t.msg->tool_calls[k].id.empty()) order[t.msg->tool_calls[k].id] = k;
      continue;
    }
    if (t.role != ChatRole::User) continue;
    std::vector<std::size_t> slots;
    for (std::size_t k = 0; k < t.pieces.size(); ++k)
      if (t.pieces[k].tool != nullptr) slots.push_back(k);
    if (slots.size() < 2 || order.empty()) continue;
    std::vector<Piece> results;
    for (std::size_t k : slots) results.push_back(t.pieces[k]);
    auto key = [&](const Piece& p) {
      auto it = order.find(p.tool->tool_call_id);
      return it == order.end() ? std::size_t{0} : it->second;
    };
    std::stable_sort(results.begin(), results.end(), [&](const Piece& a, const Piece& b) { return key(a) < key(b); });
    for (std::size_t k = 0; k < slots.size(); ++k) t.pieces[slots[k]] = results[k];
  }
}

// A user-like turn opens an assistant turn after it (§5): user, developer, or a system message
// that is not at index 0.
bool user_like(const std::vector<Turn>& turns, std::size_t i) {
  ChatRole r = turns[i].role;
  return r == ChatRole::User || r == ChatRole::Developer || (r == ChatRole::System && i > 0);
}

// "Last user index" L (§2); -1 when there is none.
std::ptrdiff_t last_user_index(const std::vector<Turn>& turns) {
  for (std::size_t i = turns.size(); i-- > 0;)
    if (user_like(turns, i)) return static_cast<std::ptrdiff_t>(i);
  return -1;
}

// §6: in thinking mode with drop_thinking, every message before L that is not a user, system,
// tool (already merged) or latest_reminder message, nor an assistant, is deleted: that is,
// developer messages. Assistants before L lose their reasoning, which the renderer applies by
// index (§4.6).
void drop_early_developers(std::vector<Turn>& turns) {
  std::ptrdiff_t L = last_user_index(turns);
  std::vector<Turn> kept;
  for (std::size_t i = 0; i < turns.size(); ++i)
    if (!(turns[i].role == ChatRole::Developer && static_cast<std::ptrdiff_t>(i) < L)) kept.push_back(turns[i]);
  turns = std::move(kept);
}

class Renderer {
 public:
  Renderer(const std::vector<Turn>& turns, const ChatOptions& opts, bool drop)
      : turns_(turns), opts_(opts), drop_(drop), L_(last_user_index(turns)) {}

  void render(std::size_t begin, RenderedChat& out) {
    out_ = &out;
    for (std::size_t i = begin; i < turns_.size(); ++i) {
      if (i == 0) index0_prefix();
      turn(i);
      transition(i);
    }
  }

 private:
  std::string& text() { return out_->text; }

  void image(const ChatImage& img) {
    text() += tok::kImage;
    out_->images.push_back(img);
  }

  // Text, image or unsupported part (§8, §9).
  void part(const ChatPart& p) {
    switch (p.kind) {
      case ChatPart::Kind::Text: text() += p.text; return;
      case ChatPart::Kind::Image: image(p.image); return;
      case ChatPart::Kind::Unsupported: text() += "[Unsupported " + p.text + "]"; return;
    }
  }

  void parts(const std::vector<ChatPart>& ps) {
    for (std::size_t k = 0; k < ps.size(); ++k) {
      if (k > 0) text() += "\n\n";
      part(ps[k]);
    }
  }

  // The message's tools and response-format blocks (§4.1, §4.3), each after "\n\n".
  void schema_blocks(const ChatMessage& m) {
    if (!m.tools.empty()) text() += "\n\n" + render_tools_block(m.tools, opts_.profile);
    if (m.response_format) text() += "\n\n" + render_response_format_block(*m.response_format);
  }

  // Before message 0 (§3). V4.1: "<｜System｜>" once, shared by the effort line (thinking mode)
  // and the system text; V4: the 0731 preamble of the effort (none for low).
  void index0_prefix() {
    if (opts_.profile == ChatProfile::V41) {
      if (opts_.thinking || turns_[0].role == ChatRole::System) text() += tok::kSystem;
      if (opts_.thinking) text() += effort_line(opts_.effort ? opts_.effort->value : kDefaultReasoningEffort);
    }
  }

  void turn(std::size_t i) {
    const Turn& t = turns_[i];
    const ChatMessage& m = *t.msg;
    switch (t.role) {
      case ChatRole::System:
        if (i > 0 && opts_.profile == ChatProfile::V41) text() += tok::kSystem;
        parts(m.content);
        schema_blocks(m);
        return;
      case ChatRole::Developer:
        text() += tok::kUser;
        parts(m.content);
        schema_blocks(m);
        return;
      case ChatRole::LatestReminder:
        text() += tok::kLatestReminder;
        parts(m.content);
        return;
      case ChatRole::User:
        text() += tok::kUser;
        for (std::size_t k = 0; k < t.pieces.size(); ++k) {
          if (k > 0) text() += "\n\n";
          if (t.pieces[k].part != nullptr) {
            part(*t.pieces[k].part);
          } else {
            text() += "<tool_result>";
            parts(t.pieces[k].tool->content);
            text() += "</tool_result>";
          }
        }
        return;
      case ChatRole::Assistant:
        assistant(i);
        return;
      case ChatRole::Tool:
        break;
    }
    fail("internal: an unmerged tool message reached the renderer (spec §4.5)");
  }

  // THINK + content + CALLS + EOS (§4.6). The opening "<think>" came with the previous turn's
  // transition.
  void assistant(std::size_t i) {
    const ChatMessage& m = *turns_[i].msg;
    const bool after_task = i > 0 && !turns_[i - 1].task.empty();  // task outputs have no thinking
    if (opts_.thinking && !after_task && (!drop_ || static_cast<std::ptrdiff_t>(i) > L_))
      text() += m.reasoning.value_or("") + std::string(tok::kThinkClose);
    parts(m.content);
    if (!m.tool_calls.empty()) text() += "\n\n" + render_tool_calls_block(m.tool_calls, opts_.profile);
    if (!m.wo_eos) text() += tok::kEos;
  }

  // §5: what follows turn i.
  void transition(std::size_t i) {
    const Turn& t = turns_[i];
    const bool last = i + 1 == turns_.size();
    if (!last) {
      ChatRole next = turns_[i + 1].role;
      if (next != ChatRole::Assistant && next != ChatRole::LatestReminder) return;
    }
    if (!t.task.empty()) {
      std::string_view token = *chat_task_token(t.task);
      if (t.task == "action")
        text() += std::string(tok::kAssistant) + std::string(opts_.thinking ? tok::kThinkOpen : tok::kThinkClose) +
                  std::string(token);
      else
        text() += token;
      return;
    }
    if (user_like(turns_, i)) {
      text() += tok::kAssistant;
      const bool open = opts_.thinking && (!drop_ || static_cast<std::ptrdiff_t>(i) >= L_);
      text() += open ? tok::kThinkOpen : tok::kThinkClose;
      return;
    }
    // vLLM's add_generation_prompt: R writes no header after an assistant or the index-0 system.
    if (last && opts_.add_generation_prompt &&
        ((t.role == ChatRole::Assistant && !t.msg->wo_eos) || (t.role == ChatRole::System && i == 0)))
      text() += generation_prefix(opts_);
  }

  const std::vector<Turn>& turns_;
  const ChatOptions& opts_;
  const bool drop_;
  const std::ptrdiff_t L_;
  RenderedChat* out_ = nullptr;
};

// R validates the effort even in chat mode (§3).
void check_effort(const ChatOptions& opts) {
  if (!opts.effort) return;
  const ReasoningEffort& e = *opts.effort;
  if (opts.profile == ChatProfile::V41) {
    effort_from_int(e.value);  // range check of a hand-built value
    return;
  }
  if (e.name.empty()) fail("the V4 profile takes an effort name (low, high, max), not the number {}", e.value);
  if (e.name != "low" && e.name != "high" && e.name != "max" && e.name != "xhigh")
    fail("reasoning effort '{}' is not one of the V4 profile's low, high, max", e.name);
  if (opts.thinking && e.name != "low")
    fail("the V4 (0731) profile's '{}' effort preamble is not specified (spec chat-encoding.md covers V4.1); only "
         "'low', which adds no preamble, is supported",
         e.name);
}

// The shared core: process context + added together, render the turns that came from `added`.
RenderedChat render_from(const std::vector<ChatMessage>& context, const std::vector<ChatMessage>& added,
                         const ChatOptions& opts) {
  check_effort(opts);
  std::vector<const ChatMessage*> all;
  for (const auto& m : context) all.push_back(&m);
  for (const auto& m : added) all.push_back(&m);
  std::vector<Turn> turns = merge_turns(all);
  order_tool_results(turns);
  bool drop = opts.drop_thinking;
  for (const ChatMessage* m : all) drop = drop && m->tools.empty();
  if (opts.thinking && drop) drop_early_developers(turns);

  const std::size_t ctx = context.size();
  std::size_t begin = turns.size();
  for (std::size_t i = 0; i < turns.size(); ++i) {
    if (turns[i].first_src < ctx && turns[i].last_src >= ctx)
      fail("added message {} merges into the context's last user turn (a user or tool message right after a user "
           "turn or tool result); render the whole conversation instead",
           turns[i].last_src - ctx);
    if (turns[i].first_src >= ctx) {
      begin = i;
      break;
    }
  }
  RenderedChat out;
  if (opts.add_bos && context.empty()) out.text += tok::kBos;
  Renderer(turns, opts, drop).render(begin, out);
  return out;
}

}  // namespace

RenderedChat render_chat_prompt(const std::vector<ChatMessage>& messages, const ChatOptions& opts) {
  return render_from({}, messages, opts);
}

std::string render_chat(const std::vector<ChatMessage>& messages, const ChatOptions& opts) {
  return render_chat_prompt(messages, opts).text;
}

RenderedChat render_chat_continuation(const std::vector<ChatMessage>& context, const std::vector<ChatMessage>& added,
                                      const ChatOptions& opts) {
  return render_from(context, added, opts);
}

ChatAppend append_chat(const std::vector<ChatMessage>& context, const std::vector<ChatMessage>& added,
                       const ChatOptions& opts) {
  RenderedChat kept = render_chat_prompt(context, opts);
  std::vector<ChatMessage> all = context;
  all.insert(all.end(), added.begin(), added.end());
  RenderedChat full = render_chat_prompt(all, opts);
  ChatAppend r;
  r.prefix_kept = full.text.compare(0, kept.text.size(), kept.text) == 0;
  if (!r.prefix_kept) {
    r.appended = std::move(full);
    return r;
  }
  // Same bytes up to kept.text.size(), so the first kept.images.size() records are the same too.
  r.appended.text = full.text.substr(kept.text.size());
  r.appended.images.assign(full.images.begin() + static_cast<std::ptrdiff_t>(kept.images.size()), full.images.end());
  return r;
}

std::string generation_prefix(const ChatOptions& opts) {
  return std::string(tok::kAssistant) + std::string(opts.thinking ? tok::kThinkOpen : tok::kThinkClose);
}

}  // namespace dsv4
