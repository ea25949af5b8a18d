#pragma once
// The DSML text blocks of the chat prompt (spec chat-encoding.md §7): the tool-schema block of a
// system/developer message, the response-format block, and the tool calls of a historical
// assistant turn. Tag names follow the profile (chat_tokens.h): `<｜DSML｜ invoke …>` in V4.1,
// `<｜DSML｜invoke …>` in V4. JSON inside the blocks uses Python's json.dumps layout (chat_json.h).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/chat_message.h"
#include "text/chat_tokens.h"

namespace dsv4 {

// "## Tools\n\n…### Available Tool Schemas\n\n" + one JSON line per function object joined by
// "\n" + "\n\nYou MUST strictly follow … invoke tool calls.\n" (ends with exactly one LF, §7.1).
std::string render_tools_block(const std::vector<nlohmann::ordered_json>& functions, ChatProfile profile);

// "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n" + JSON,
// no trailing newline (§7.2).
std::string render_response_format_block(const nlohmann::ordered_json& response_format);

// "<｜DSML｜ calls>\n" + invokes joined by "\n" + "\n</｜DSML｜ calls>" (§7.3), without the "\n\n"
// that precedes it in a turn. Each invoke is `<｜DSML｜ invoke name="NAME">\n` + parameters joined
// by "\n" + `\n</｜DSML｜ invoke>`; a string value is written raw with string="true", any other
// value as compact JSON with string="false". Names and raw strings are inserted unescaped.
std::string render_tool_calls_block(const std::vector<ChatToolCall>& calls, ChatProfile profile);

}  // namespace dsv4
