#pragma once
// JSON text exactly as Python's `json.dumps(value, ensure_ascii=False)` writes it, the layout the
// reference encoder puts into prompts (spec chat-encoding.md §7.1): separators ", " and ": ", no
// indentation, keys in the order held, non-ASCII written raw, `/` not escaped, strings escaped as
// \" \\ \n \r \t \b \f and \u00xx for the other control characters, floats in Python's repr form
// (shortest round-trip digits; exponent form when the decimal exponent is < -4 or >= 16, e.g.
// 1e-05, 1e+16; otherwise fixed with at least one fractional digit, e.g. 100.0).
//
// Values must be nlohmann::ordered_json so that object keys keep the order they were received in
// (nlohmann::json sorts them, which would change the prompt).
//
// Known differences from Python, none reachable from a parsed file in practice: an integer beyond
// 64 bits has already become a double in nlohmann (Python keeps it exact); lone surrogates cannot
// occur because nlohmann rejects them when parsing, so R's ensure_ascii=True fallback never applies.
#include <string>

#include <nlohmann/json.hpp>

namespace dsv4 {

std::string python_json_dumps(const nlohmann::ordered_json& value);

// Python's repr() of a double (the float part of the layout above); NaN and infinities as
// Python's json writes them (NaN, Infinity, -Infinity).
std::string python_float_repr(double v);

}  // namespace dsv4
