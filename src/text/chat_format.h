#pragma once
// Rendering a conversation to the DeepSeek V4.1 prompt, byte for byte as the released reference
// encoder (R) does (spec chat-encoding.md §2–§10), with the V4 (0731) grammar as a second profile.
//
// Processing (§2): tool messages merge into user turns and tool results are ordered by call
// order (§8); drop_thinking is forced off when any message has tools; in thinking mode with
// drop_thinking, developer messages before the last user turn are deleted and earlier reasoning
// is not rendered (§6); then every turn is rendered (§4) followed by its transition (§5).
//
// Choices on the spec's open points (§14 and where the ports differ, §12):
//   - `developer` (ports only) is accepted in both profiles as a user turn with its tools; it never
//     changes what R renders for R's roles. It counts for the last-user index, as in the ports.
//   - Effort: see chat_effort.h (xhigh = 75; medium/minimal rejected).
//   - V4 profile effort: no preamble for `low` or no effort (what the goldens and the original V4
//     encoder's None render). The 0731 `high`/`max` preambles are not in the spec, so asking for
//     them in thinking mode is an error rather than a guess; numbers are rejected (V4 has names).
//   - A task's action suffix uses "<think>" in thinking mode at every turn, as the spec states.
//   - add_generation_prompt (vLLM extension, off by default = R): after a final assistant (one
//     without wo_eos) or a final index-0 system message, append generation_prefix(). A final
//     latest_reminder gets nothing: R's quirk already put the header before it (§5).
//   - wo_eos on a final assistant follows R: reasoning + "</think>" + content with no EOS (the
//     vLLM port's open "<think>" continuation is not reproduced).
#include <optional>
#include <string>
#include <vector>

#include "text/chat_effort.h"
#include "text/chat_message.h"
#include "text/chat_tokens.h"

namespace dsv4 {

struct ChatOptions {
  ChatProfile profile = ChatProfile::V41;
  bool thinking = true;  // R's thinking_mode: "thinking" (true) or "chat" (false)
  // nullopt: the default (V4.1: high = 75; V4: no preamble). Validated even in chat mode, as R
  // does, although nothing is rendered there.
  std::optional<ReasoningEffort> effort;
  bool drop_thinking = true;           // forced off when any message has tools (§2 step 5)
  bool add_bos = true;                 // R's add_default_bos_token (only without context)
  bool add_generation_prompt = false;  // vLLM extension, see above
};

struct RenderedChat {
  std::string text;
  std::vector<ChatImage> images;  // the record of every <｜deepseek_image｜> in `text`, in order (§9)
};

// The whole prompt: BOS (if add_bos), then every message. Throws dsv4::Error for options or
// messages the encoder rejects.
RenderedChat render_chat_prompt(const std::vector<ChatMessage>& messages, const ChatOptions& opts);
std::string render_chat(const std::vector<ChatMessage>& messages, const ChatOptions& opts);

// R's `context` form (§2), the incremental rendering of multi-turn chat: `context` is already in
// the KV cache; only `added` is rendered, with no BOS, and the effort line (index 0) lies inside
// the context. Merging, ordering and drop_thinking see the full list context + added, and each
// added message is rendered at its index in it. An added message that would merge into the
// context's last user turn (a user or tool message right after a user turn or tool result) is an
// error: the cached text of that turn would have to change.
//
// When does render_chat(context) + continuation == render_chat(context + added)? Exactly when the
// context's own rendering does not depend on what follows it:
//   - holds: chat mode; thinking with tools anywhere (all reasoning kept) or drop_thinking off;
//     thinking with drop_thinking when `added` only continues the current turn (e.g. the
//     assistant reply, or tool steps after the last user turn that add no new user turn);
//   - fails: thinking with drop_thinking (no tools) and an added user turn (or tool result) after
//     an assistant turn: the new last-user index turns the earlier user turn's "<think>" into
//     "</think>" and removes the earlier "reasoning</think>" (§6). R still renders only the new
//     turn; the KV cache then holds a prompt that no full render produces. append_chat() detects
//     this and says so.
RenderedChat render_chat_continuation(const std::vector<ChatMessage>& context, const std::vector<ChatMessage>& added,
                                      const ChatOptions& opts);

// What a kept prompt needs appended to equal a full re-render. If render_chat(context) is a byte
// prefix of render_chat(context + added), prefix_kept is true and `appended` is the rest (its
// images are those of the rest). Otherwise prefix_kept is false and `appended` is the full new
// prompt: the caller must re-prefill from scratch (or from the common prefix).
struct ChatAppend {
  bool prefix_kept = false;
  RenderedChat appended;
};
ChatAppend append_chat(const std::vector<ChatMessage>& context, const std::vector<ChatMessage>& added,
                       const ChatOptions& opts);

// The header that opens a new assistant turn: "<｜Assistant｜><think>" in thinking mode,
// "<｜Assistant｜></think>" in chat mode. A prompt ending with a user-like message already ends
// with it (§5); add_generation_prompt appends it after a final assistant.
std::string generation_prefix(const ChatOptions& opts);

}  // namespace dsv4
