#pragma once
// Reasoning effort (spec chat-encoding.md §3): an integer 1..100, or a name from the released
// V4.1 table low → 50, high → 75, max → 100. The default is high = 75.
//
// Choices on the open points (§3, §14):
//   - `xhigh` is accepted as 75, the compatibility alias deepseek-recipe, vLLM (#58316) and sglang
//     (#39929) use. It renders exactly what `high` renders.
//   - `medium`, `minimal` and `none` are rejected with an error that says why: they are not in R's
//     table, and the servers disagree on them (medium → 75 in one deployment, → high in DeepSeek's
//     API; none means chat mode, which is the caller's switch, not an effort).
//   - Names are case-sensitive, as in R. A number must be plain decimal digits; bools and floats
//     are rejected, as R rejects them (an OpenAI-style float fraction is a server concern).
//   - The pre-release table (low 25 / high 50 / xhigh 75 / max 100) is not used.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dsv4 {

inline constexpr int kDefaultReasoningEffort = 75;  // R's default, `high`

struct ReasoningEffort {
  int value = kDefaultReasoningEffort;  // 1..100: the number the V4.1 effort line writes
  std::string name;  // the name it was given by (low, high, max, xhigh), or "" for a number

  bool operator==(const ReasoningEffort&) const = default;
};

// "low" | "high" | "max" | "xhigh" | a decimal integer 1..100. Throws dsv4::Error otherwise.
ReasoningEffort parse_effort(std::string_view text);

// The JSON form (e.g. chat_template_kwargs.reasoning_effort): an integer 1..100 or a name as in
// parse_effort. Booleans, floats and other types are errors.
ReasoningEffort parse_effort_json(const nlohmann::ordered_json& v);

// An integer effort; throws unless 1 <= v <= 100.
ReasoningEffort effort_from_int(long long v);

// "Reasoning Effort: N (range 1-100, the higher the value, the more thorough the reasoning)\n\n".
std::string effort_line(int value);

}  // namespace dsv4
