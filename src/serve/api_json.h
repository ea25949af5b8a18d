#pragma once
// Internal helpers shared by openai_api.cc and anthropic_api.cc: reading typed request fields
// (every failure an ApiError(invalid_request) that names the field) and writing model output into
// JSON that always dumps (only valid UTF-8 strings, finite numbers).
//
// Conventions of every reader:
//   - `param` is the field's path as the client wrote it ("temperature", "stream_options.
//     include_usage", "messages[2].content") and is both the message prefix and ApiError::param.
//   - An explicit JSON null counts as absent: clients (and SDKs) send null for "not given".
//   - Booleans are not numbers, and an integer field rejects 2.0 (nlohmann keeps it a float).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/api_error.h"
#include "serve/serve_request.h"

namespace dsv4::serve::api {

using ojson = nlohmann::ordered_json;

// A request body: a JSON object nested at most `max_depth` levels. The depth is checked on the
// text before parsing, because the library's dump and comparison recurse: a body of a million
// '[' would otherwise exhaust a handler thread's stack when it is rendered into the prompt.
// Throws ApiError(invalid_request) naming what is wrong.
ojson parse_request_json(std::string_view text, std::size_t max_depth = 128);

// ApiError(invalid_request, "<param>: <what>", param).
[[noreturn]] void bad(const std::string& param, std::string_view what);

// The body must be a JSON object.
void require_object(const ojson& body);

// The field's value, or nullptr when it is absent or null.
const ojson* field(const ojson& obj, const char* name);

// "a string" / "an integer" / ... : the JSON type as an error message names it.
std::string json_kind(const ojson& v);

bool as_bool(const ojson& v, const std::string& param);
double as_number(const ojson& v, const std::string& param);
// Integers only; unsigned values beyond int64 saturate to INT64_MAX.
std::int64_t as_integer(const ojson& v, const std::string& param);
const std::string& as_string(const ojson& v, const std::string& param);
const ojson& as_object(const ojson& v, const std::string& param);
const ojson& as_array(const ojson& v, const std::string& param);

// Optional typed fields of `obj` (nullopt when absent or null).
std::optional<bool> opt_bool(const ojson& obj, const char* name, const std::string& prefix = {});
std::optional<double> opt_number(const ojson& obj, const char* name, double lo, double hi, const std::string& prefix = {});
std::optional<std::int64_t> opt_integer(const ojson& obj, const char* name, std::int64_t lo, std::int64_t hi,
                                        const std::string& prefix = {});
std::optional<std::string> opt_string(const ojson& obj, const char* name, const std::string& prefix = {});

// SamplingParams::validate() with its dsv4::Error as an ApiError; the param is the parameter the
// message starts with ("top_p must be in (0, 1]" → "top_p").
void validate_sampling(const SamplingParams& s);

// Rejects text holding the image placeholder token: images must come as image parts (spec §9),
// and inside text the placeholder would silently become an image.
void check_no_image_placeholder(const std::string& text, const std::string& param);

// The response id after its prefix ("chatcmpl-abc" → "abc", "msg_abc" → "abc"): the stable part
// tool-call ids are built from. An id without '-' or '_' is used whole.
std::string id_suffix(const std::string& id);

// Model output as a JSON string: invalid UTF-8 becomes U+FFFD (from_utf8_lossy).
std::string json_text(std::string_view bytes);
// A log-probability as JSON can carry it: -inf / NaN (a masked token) become -9999.0, the value
// OpenAI reports for "practically impossible".
double json_logprob(double lp);
// The raw bytes of a token as a JSON array of integers 0..255.
ojson byte_array(std::string_view bytes);

// Character offsets of tokens in the text they decode to, for OpenAI completions' text_offset.
// A token's offset is the index (in code points of the lossy-decoded text) of the character its
// first byte belongs to, so a token that completes a split character points at that character.
// `chars` (characters decoded so far) and `pending` (the trailing bytes of an incomplete
// character) carry the state from token to token; both start empty. Returns the offset of a token
// with these bytes and advances past it.
std::size_t next_text_offset(std::size_t& chars, std::string& pending, std::string_view token_bytes);

// The system message at index 0 that tools and response_format go on: messages[0] if it is a
// system message, else a new empty one inserted at index 0 (as sglang and the vLLM wrapper do
// when there is no system message).
ChatMessage& leading_system_message(std::vector<ChatMessage>& messages);

}  // namespace dsv4::serve::api
