#pragma once
// Turning the raw bytes of decoded tokens into text, as the `tokenizers` library's ByteLevel
// decoder does with Rust's String::from_utf8_lossy: every ill-formed sequence becomes one U+FFFD
// per "maximal subpart" (the longest prefix of a valid sequence, or a single byte), the
// replacement practice of Unicode §3.9 / WHATWG. Byte tokens can split a character, so the
// streaming detokenizer also needs to know where the last character is still incomplete.
#include <cstddef>
#include <string>
#include <string_view>

namespace dsv4 {

// String::from_utf8_lossy.
std::string utf8_lossy(std::string_view bytes);
void utf8_lossy_append(std::string_view bytes, std::string& out);

// Length of the incomplete sequence at the end of `bytes`: the number of trailing bytes that are
// a proper prefix of a well-formed UTF-8 sequence (1..3), or 0 if `bytes` ends at a character
// boundary or with bytes that can never become valid. More bytes can only change how those
// trailing bytes decode; everything before them decodes the same whatever follows, so
// utf8_lossy(a + b) == utf8_lossy(a[0, n - k)) + utf8_lossy(a[n - k, n) + b) with k this value.
std::size_t utf8_incomplete_suffix(std::string_view bytes);

// Byte offset of the first ill-formed sequence in s, or s.size() if s is valid UTF-8. Fast on
// ASCII (eight bytes at a time).
std::size_t utf8_first_invalid(std::string_view s);

}  // namespace dsv4
