#pragma once
// The conversation model the chat encoder renders (spec chat-encoding.md §2, §4, §8–§10), and its
// parsing from OpenAI-style JSON.
//
// A message keeps only what the encoder reads. Content is normalized to parts: a string becomes
// one text part, a list becomes its parts (text, image/image_url, anything else kept as an
// "unsupported" part that renders "[Unsupported TYPE]"). Tool schemas are kept as the unwrapped
// OpenAI `function` objects, tool-call arguments as the object the DSML block renders.
//
// Every parse error is a dsv4::Error that names the source, the message index and the field,
// e.g. "chat.json: messages[3].tool_calls[0].function.name: must be a string".
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dsv4 {

// `developer` is not a role of the released encoder; it is the ports' compatibility alias (spec
// §4.3), rendered as a user turn. `latest_reminder` is R's own role (§4.4).
enum class ChatRole { System, Developer, User, Assistant, Tool, LatestReminder };

std::string_view chat_role_name(ChatRole r);

struct ChatImage {
  std::string source;  // the URL, path or data as given; a non-string source as compact JSON
};

struct ChatPart {
  enum class Kind { Text, Image, Unsupported };
  Kind kind = Kind::Text;
  std::string text;  // Text: the text. Unsupported: the part's `type` (rendered "[Unsupported TYPE]")
  ChatImage image;   // Image only
};

struct ChatToolCall {
  std::string id;  // used only to order tool results (§8)
  std::string name;
  // The parameters to render, in their JSON order: always an object (see tool_arguments_object).
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
};

struct ChatMessage {
  ChatRole role = ChatRole::User;
  // Missing or null content is an empty list, except for user and tool messages, whose missing
  // content is one empty text part: R treats it as "" and a merged user turn still gets its
  // "\n\n" separator for it (§8).
  std::vector<ChatPart> content;
  std::optional<std::string> reasoning;  // assistant: reasoning_content (or its alias `reasoning`)
  std::vector<ChatToolCall> tool_calls;  // assistant
  bool wo_eos = false;                   // assistant: no trailing EOS (prefix continuation, §10)
  std::string tool_call_id;              // tool
  std::string task;                      // user/developer: "" or a quick-instruction task (§10)
  std::vector<nlohmann::ordered_json> tools;           // system/developer: function objects
  std::optional<nlohmann::ordered_json> response_format;  // system/developer
};

// A plain-text message (content as one text part).
ChatMessage chat_text_message(ChatRole role, std::string text);

// The task names of §10 and their marker tokens; nullopt for an unknown name.
std::optional<std::string_view> chat_task_token(std::string_view task);

// Parses a JSON array of messages. `source` names the input in errors. Accepted fields:
//   role (required): system | developer | user | assistant | tool | latest_reminder
//   content: string, null, or a list of parts {"type":"text","text":S},
//            {"type":"image_url","image_url":{"url":S}|S}, {"type":"image","image"|"image_url"|
//            "url"|"source"|"data":...}; any other type is kept as unsupported. Only user and
//            tool messages may hold unsupported parts; on other roles they are an error.
//   reasoning_content, or its alias reasoning (assistant; string or null; if both are strings
//            they must agree)
//   tool_calls (assistant): [{"id"?, "type"?: "function", "function": {"name", "arguments"}}]
//            or the flat {"name", "arguments"} form; arguments a JSON string, an object or absent
//   wo_eos, or its alias prefix (assistant; bool)
//   tool_call_id (tool; string)
//   task (user/developer; one of the §10 names)
//   tools (system/developer; OpenAI {"type":"function","function":{...}} entries)
//   response_format (system/developer; any JSON value)
// Other fields (name, mask, id, ...) are ignored, as the encoder ignores them. A developer
// message must have non-empty content. `<｜deepseek_image｜>` inside any text is an error: images
// must be separate parts (§9).
std::vector<ChatMessage> parse_chat_messages(const nlohmann::ordered_json& messages, const std::string& source);

// Parses a messages file (CASES.md): a bare array of messages, or an object with "messages" and
// optionally a top-level "tools" array. Top-level tools go onto the first system message; if there
// is none, an empty system message carrying them is inserted at index 0. Other top-level keys
// (thinking_mode, reasoning_effort, ...) are ignored: options come from the caller, as in the
// harness that made the goldens.
std::vector<ChatMessage> parse_chat_file(const nlohmann::ordered_json& doc, const std::string& source);

// Reads and parses a messages file; "-" reads standard input.
std::vector<ChatMessage> load_chat_file(const std::string& path);

// The arguments object a historical tool call renders (spec §7.3, following R): an object is used
// as is; a string is parsed as JSON, and parsed once more if that gives a string (double-encoded
// JSON). A string that does not parse, or does not end as an object, becomes {"arguments": S} with
// the original string S. A null or absent value is an empty object. Any other JSON value (number,
// array, ...) is an error.
nlohmann::ordered_json tool_arguments_object(const nlohmann::ordered_json& raw, const std::string& where);

}  // namespace dsv4
