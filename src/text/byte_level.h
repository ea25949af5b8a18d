#pragma once
// The GPT-2 "ByteLevel" alphabet used by DeepSeek's byte-level BPE tokenizer (spec §12): every
// byte 0..255 is written as one printable Unicode character so that vocabulary entries are valid
// text. Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68
// bytes (controls, space, DEL, NBSP, soft hyphen, ...) are shifted in byte order onto
// U+0100..U+0143, e.g. ' ' (0x20) -> 'Ġ' (U+0120) and '\n' (0x0A) -> 'Ċ' (U+010A).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dsv4 {

// Code point that stands for byte b.
char32_t byte_level_char(std::uint8_t b);

// Byte that code point c stands for, or nullopt if c is not one of the 256 alphabet characters.
std::optional<std::uint8_t> byte_level_byte(char32_t c);

// Bytes -> alphabet text (UTF-8). Every byte becomes one alphabet character. This is the
// pre-tokenizer direction; the BPE encoder will use it.
std::string byte_level_encode(std::string_view bytes);

// Alphabet text (UTF-8) -> the raw bytes it stands for, or nullopt when `token` is not valid
// UTF-8 or contains a character outside the alphabet.
std::optional<std::string> byte_level_to_bytes(std::string_view token);

// What the Hugging Face `tokenizers` ByteLevel decoder does with one token: the raw bytes if every
// character is in the alphabet, otherwise the token's own UTF-8 bytes unchanged (that is how added
// tokens such as "<｜User｜>" survive decoding). The result need not be valid UTF-8: a token may
// hold part of a multi-byte character.
std::string byte_level_decode(std::string_view token);

}  // namespace dsv4
