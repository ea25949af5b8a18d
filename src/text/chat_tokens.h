#pragma once
// The vocabulary of the DeepSeek V4 / V4.1 chat prompt (spec chat-encoding.md §1, §7): the
// special-token strings the encoder writes as text, and the two encoder profiles.
//
// Every marker below is one added token in the V4.1 tokenizer. `｜` is U+FF5C and `▁` is U+2581,
// never ASCII `|` / `_`; the literals are UTF-8. The prompt is plain text containing these
// markers; the tokenizer turns each into its single id (spec §2 step 4: no extra special tokens).
#include <string_view>

namespace dsv4 {

// Which encoder's grammar to render. V41 is the released DeepSeek-V4.1 encoder (R in the spec).
// V4 is the DeepSeek-V4 encoder of the "0731" profile the V4 goldens were made with; the V4.1
// grammar is the V4 grammar with three changes (CASES.md): spaced DSML tag names (` calls`,
// ` invoke`, ` parameter` instead of `tool_calls`, `invoke`, `parameter`), the `<｜System｜>`
// token, and the numeric effort line.
enum class ChatProfile { V41, V4 };

namespace chat_token {
inline constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
inline constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
inline constexpr std::string_view kSystem = "<｜System｜>";  // V4.1 only
inline constexpr std::string_view kUser = "<｜User｜>";
inline constexpr std::string_view kAssistant = "<｜Assistant｜>";
inline constexpr std::string_view kLatestReminder = "<｜latest_reminder｜>";
inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";
inline constexpr std::string_view kDsml = "｜DSML｜";
inline constexpr std::string_view kImage = "<｜deepseek_image｜>";
}  // namespace chat_token

// The DSML tag names of a profile: `<｜DSML｜ calls>` … in V4.1, `<｜DSML｜tool_calls>` … in V4.
// Each name is what follows `｜DSML｜` inside the tag, leading space included.
struct DsmlNames {
  std::string_view calls, invoke, parameter;
};

inline constexpr DsmlNames dsml_names(ChatProfile p) {
  return p == ChatProfile::V41 ? DsmlNames{" calls", " invoke", " parameter"}
                               : DsmlNames{"tool_calls", "invoke", "parameter"};
}

}  // namespace dsv4
