#pragma once
// The pre-tokenizer of DeepSeek's tokenizer.json (V3, V4, V4.1 ship the same one), written as a
// hand-made scanner that splits exactly where the `tokenizers` library's regexes split:
//
//   Sequence[ Split(/\p{N}{1,3}/, Isolated),
//             Split(/[一-龥぀-ゟ゠-ヿ]+/, Isolated),
//             Split(/[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
//                    |[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
//                    | ?[\p{P}\p{S}]+[\r\n]*
//                    |\s*[\r\n]+
//                    |\s+(?!\S)
//                    |\s+/, Isolated),
//             ByteLevel(add_prefix_space=false, use_regex=false) ]
//
// Each Split runs on every piece the previous one produced, and "Isolated" keeps both the
// matches and the text between them as pieces. Consequences the scanner relies on:
//   - digit runs are cut into groups of three from the left, and those groups are final (the
//     later patterns find nothing in a string of \p{N});
//   - the CJK/kana runs and the rest are separate strings for the third pattern, so its
//     lookahead (?!\S) sees the end of such a string, never the text beyond it;
//   - the third pattern is leftmost-first (Perl/Oniguruma semantics): at each position the first
//     alternative that matches wins; a character no alternative matches at its position (e.g. a
//     lone ZWJ before an emoji) is left in the "gap" piece running to the next match.
// ByteLevel only maps bytes to the GPT-2 alphabet; the BPE model works on raw bytes instead.
// Character classes: unicode_classes.h (Unicode 16.0, like the reference).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dsv4 {

// The three Split regexes exactly as DeepSeek's tokenizer.json spells them.
extern const char* const kDeepSeekDigitsPattern;
extern const char* const kDeepSeekCjkPattern;
extern const char* const kDeepSeekMainPattern;

// Throws dsv4::Error naming `source` and the offending field unless `pre` (the value of
// tokenizer.json's "pre_tokenizer") is the DeepSeek sequence above; no other pre-tokenizer is
// supported.
void check_deepseek_pretokenizer(const nlohmann::json& pre, const std::string& source);

// Splits `text` into pieces and appends the end offset of each piece to `ends`: the pieces are
// text[0, ends[0]), text[ends[0], ends[1]), ... and cover the whole text. `text` must be valid
// UTF-8 (Tokenizer::encode checks); on other input the split is unspecified but memory-safe.
// Throws dsv4::Error if text is 4 GiB or longer (offsets are 32-bit).
void pretokenize(std::string_view text, std::vector<std::uint32_t>& ends);

// The same pieces as strings (for tests and tools).
std::vector<std::string_view> pretokenize(std::string_view text);

}  // namespace dsv4
