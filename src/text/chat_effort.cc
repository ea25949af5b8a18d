#include "text/chat_effort.h"

#include <array>
#include <cstdint>
#include <utility>

#include "util/error.h"

namespace dsv4 {
namespace {

// The released table (R), plus the xhigh alias; see the header for the choice.
constexpr std::array<std::pair<std::string_view, int>, 4> kNamed{{
    {"low", 50},
    {"high", 75},
    {"max", 100},
    {"xhigh", 75},
}};

constexpr std::string_view kAccepted = "low, high, max, xhigh or an integer 1-100";

}  // namespace

ReasoningEffort effort_from_int(long long v) {
  if (v < 1 || v > 100) fail("reasoning effort {} is out of range: expected {}", v, kAccepted);
  return ReasoningEffort{static_cast<int>(v), ""};
}

ReasoningEffort parse_effort(std::string_view text) {
  for (const auto& [name, value] : kNamed)
    if (text == name) return ReasoningEffort{value, std::string(name)};
  if (text == "medium" || text == "minimal")
    fail("reasoning effort '{}' is not in the released V4.1 table; use {} (the servers disagree on what '{}' means)",
         text, kAccepted, text);
  if (text == "none") fail("reasoning effort 'none' is chat mode: ask for chat mode instead of an effort");
  bool digits = !text.empty() && text.size() <= 4;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (!digits) fail("reasoning effort '{}' is not valid: expected {}", text, kAccepted);
  long long v = 0;
  for (char c : text) v = v * 10 + (c - '0');
  return effort_from_int(v);
}

ReasoningEffort parse_effort_json(const nlohmann::ordered_json& v) {
  if (v.is_string()) return parse_effort(v.get<std::string>());
  if (v.is_number_unsigned()) {  // nlohmann stores non-negative integers as unsigned
    if (v.get<std::uint64_t>() > 100) fail("reasoning effort {} is out of range: expected {}", v.dump(), kAccepted);
    return effort_from_int(static_cast<long long>(v.get<std::uint64_t>()));
  }
  if (v.is_number_integer()) return effort_from_int(v.get<long long>());
  fail("reasoning effort must be a name or an integer, not {} {}: expected {}", v.type_name(), v.dump(), kAccepted);
}

std::string effort_line(int value) {
  return fmt::format("Reasoning Effort: {} (range 1-100, the higher the value, the more thorough the reasoning)\n\n",
                     value);
}

}  // namespace dsv4
