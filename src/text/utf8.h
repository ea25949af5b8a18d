#pragma once
// Strict UTF-8 (RFC 3629, the rules of Rust's `str` and of ICU): no overlong forms, no
// surrogates (U+D800..U+DFFF), nothing above U+10FFFF. The text layer decides "is this a partial
// byte token?" with these rules, so they must match the `tokenizers` library's
// String::from_utf8_lossy exactly (spec §8.2).
#include <cstddef>
#include <string>
#include <string_view>

namespace dsv4 {

// Decodes the code point starting at s[pos] and advances pos past it. Returns false (pos
// unchanged) if the bytes there are not a complete, well-formed UTF-8 sequence.
bool utf8_next(std::string_view s, std::size_t& pos, char32_t& out);

// True if all of s is well-formed UTF-8.
bool utf8_valid(std::string_view s);

// Appends the UTF-8 encoding of c (which must be a Unicode scalar value).
void utf8_append(std::string& out, char32_t c);

}  // namespace dsv4
