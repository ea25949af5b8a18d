#pragma once
// The JSON text of a tool call's `arguments` (spec chat-encoding.md §11.1, §11.2), written piece
// by piece so that a streaming parser can hand out fragments that concatenate to the final string.
//
// Layout, as R's parser and vLLM produce it for well-formed output: `{"k1": V1, "k2": V2}`, keys
// in parameter order, separators ", " and ": ", strings escaped like Python's
// json.dumps(ensure_ascii=False): `"` `\` and the controls \b \f \n \r \t get short escapes, other
// bytes below 0x20 are \u00xx (lower-case hex), everything else (non-ASCII, '/', DEL) is written
// raw. The result is always valid JSON: bytes that are not well-formed UTF-8 are written as
// U+FFFD, one per maximal ill-formed subpart (as String::from_utf8_lossy does), and a
// `string="false"` value goes in verbatim only when it is valid JSON.
#include <string>
#include <string_view>

namespace dsv4 {

// Appends `bytes` as the inside of a JSON string (no quotes). As long as a split never falls
// inside a sequence that could still become a character (incomplete_utf8_suffix holds those
// back), escaping the pieces separately gives the same bytes as escaping the whole.
void append_json_string_body(std::string& out, std::string_view bytes);

// `"` + body + `"`.
std::string json_quote(std::string_view bytes);

// True if `text` is one complete JSON value (RFC 8259; surrounding whitespace allowed), as
// nlohmann::json accepts it, and with no NUL byte. A number too large for a double (1e999) is
// rejected by that reader.
bool is_json_text(std::string_view text);

// `text` without leading and trailing JSON whitespace (space, tab, LF, CR).
std::string_view trim_json_space(std::string_view text);

// How a `string="false"` (or untyped) parameter value enters the arguments: the trimmed text
// verbatim when it is valid JSON (so numbers keep their exact digits), else the raw value as a
// JSON string. Returns false in the second case, which the caller reports as a warning.
bool append_json_typed_value(std::string& out, std::string_view raw);

}  // namespace dsv4
