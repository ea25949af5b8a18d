#pragma once
// Strict JSON parsing for files a user hands us (safetensors headers, shard indexes).
//
// nlohmann::json silently keeps the last value when an object repeats a key, so a safetensors
// header naming one tensor twice would parse "fine" and lose a tensor. parse_strict_json rejects
// repeated keys in any object, bounds the nesting depth (the formats we read are at most a few
// levels deep, and a bound keeps hostile inputs cheap), and turns every parse failure into a
// dsv4::Error, so callers never see an nlohmann exception.
#include <nlohmann/json.hpp>
#include <string_view>

namespace dsv4 {

// Deepest nesting parse_strict_json accepts unless told otherwise (objects and arrays both count).
inline constexpr int kStrictJsonMaxDepth = 16;

// Parses `text` as exactly one JSON value (surrounding whitespace allowed, nothing else).
// Throws dsv4::Error whose message starts with `what` (e.g. "safetensors file 'x': header") for:
// invalid JSON or UTF-8 (including any NUL byte, which nlohmann would take as end of input), a
// key repeated within one object (the message names the key and the path of keys leading to its
// object), or nesting deeper than `max_depth`.
nlohmann::json parse_strict_json(std::string_view text, std::string_view what,
                                 int max_depth = kStrictJsonMaxDepth);

}  // namespace dsv4
