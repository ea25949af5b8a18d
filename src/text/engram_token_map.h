#pragma once
// The Engram compressed token map (reference-spec.md §8.2, §16.6): tokens that read alike after
// normalization ("The", " the", "THE", "ｔｈｅ") share one compressed id, and the n-gram hashes of
// §8.3 are computed over these ids. The model was trained with a table made by the reference's
// Python code out of the Hugging Face `tokenizers` (Rust) library, so every step here follows
// that library's behaviour, not Python's or ICU's defaults where they differ:
//
//   text = decode([t], skip_special_tokens=False): the ByteLevel decoder maps the token's
//          characters to bytes (a token with a character outside the byte alphabet, such as an
//          added "<｜User｜>", passes through as its own UTF-8), then String::from_utf8_lossy.
//   key  = the raw token string if text has U+FFFD (a partial UTF-8 byte token), otherwise
//          normalize(text), or text itself if that is empty.
//   normalize = the `tokenizers` normalizer Sequence NFKC, NFD, StripAccents, Lowercase,
//          Replace(/[ \t\r\n]+/, " "), Replace(/^ $/, U+E000), Strip, Replace(U+E000, " ").
//   Keys get dense ids 0, 1, 2, ... in order of first appearance over t = 0 .. N-1.
//
// Where the library differs from Python's str methods (measured with tokenizers 0.23.2, see
// tests/text/engram_token_map_test.cc):
//   - Lowercase maps each character on its own (Rust char::to_lowercase): no final-sigma rule,
//     "ΟΣ" -> "οσ" (Python: "ος").
//   - Strip removes Unicode White_Space (Rust char::is_whitespace), which excludes U+001C..U+001F
//     that Python's str.strip() also removes.
//   - NFKC, NFD and StripAccents use Unicode 9.0 tables (the unicode-normalization-alignments
//     crate): characters assigned after 9.0 are left unchanged and are never stripped as marks.
//     This file reproduces that with ICU filtered to [:age=9.0:]. Lowercase uses Rust's own,
//     newer tables (Unicode 16 in 0.23.2); here it uses ICU's (see unicode_version()). A character
//     whose General_Category changed after 9.0 follows ICU's category.
// For the DeepSeek V3 and V4.1 vocabularies none of these differences changes any key.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer_vocab.h"

namespace dsv4 {

struct EngramTokenMap {
  std::vector<std::int32_t> compressed_id;  // indexed by token id, 0 .. tokenizer size - 1
  std::int32_t compressed_vocab_size = 0;   // number of distinct keys

  // Compressed id of token `token_id`. Throws dsv4::Error for ids the tokenizer does not have,
  // e.g. ids between the tokenizer's length and the model's vocab_size (spec §16.6).
  std::int32_t lookup(std::int64_t token_id) const;
  // The compressed id used for padding and blocked n-gram positions (spec §8.3): lookup(pad_id).
  std::int32_t pad_compressed(std::int32_t pad_id) const;
};

EngramTokenMap build_engram_token_map(const TokenizerVocab& vocab);
// Loads the tokenizer.json at `tokenizer_json_path` and builds its map.
EngramTokenMap build_engram_token_map(const std::string& tokenizer_json_path);

// The key of one token id (the string whose first appearance defines its compressed id).
std::string engram_token_key(const TokenizerVocab& vocab, std::size_t token_id);

// The normalizer alone, on UTF-8 text. Throws dsv4::Error if `utf8` is not valid UTF-8.
std::string engram_normalize(std::string_view utf8);

// The Unicode version of the linked ICU (used for Lowercase and White_Space). Built and tested
// with Debian 12's ICU 72.1, Unicode 15.0.
std::string unicode_version();
// The Unicode version of the NFKC/NFD/mark tables the normalizer emulates: "9.0".
std::string engram_normalization_unicode_version();

}  // namespace dsv4
