#pragma once
// The added tokens of a tokenizer.json ("added_tokens": BOS/EOS, role markers, placeholders)
// found in text before pre-tokenization, as the `tokenizers` library's AddedVocabulary does it
// (tokenizers 0.23.2, added_vocabulary.rs, extract_and_normalize with an identity normalizer):
//
//   1. tokens with "normalized": false are searched in the whole text;
//   2. tokens with "normalized": true are searched in each stretch of text between the matches of
//      step 1 (the normalizer would run on those stretches first; DeepSeek's is empty).
// Each search is a leftmost-longest, non-overlapping scan (Aho-Corasick, MatchKind::LeftmostLongest),
// after which each match is post-processed in order:
//   - "encode special tokens" mode skips matches of special tokens (the text stays ordinary);
//   - single_word drops a match that has a word character (Unicode \w) right before or after it;
//   - lstrip / rstrip widen the match over the whitespace before / after it (never back over
//     the previous match);
// and the text between the kept matches is what the pre-tokenizer and BPE see. A dropped match's
// text is not searched again for shorter tokens (the scan has moved past it), as in the library.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dsv4 {

struct AddedToken {
  std::string content;
  std::int32_t id = 0;
  bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = false;
};

// A stretch of the input: text[begin, end) is ordinary text (id < 0) or one added token (its id).
// Widened token stretches (lstrip/rstrip) may, in the library's corner cases, overlap the next
// token's; only the ordinary stretches' text is ever tokenized.
struct TextSegment {
  std::size_t begin = 0, end = 0;
  std::int32_t id = -1;
};

// Reads tokenizer.json's "added_tokens". Call it after tokenizer_vocab_from_json has accepted the
// file: that checks the entries and that each "id" is the one the library assigns.
std::vector<AddedToken> added_tokens_from_json(const nlohmann::json& doc, const std::string& source);

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // Splits `text` (valid UTF-8) into segments, in order, appending them to `out`. With
  // `special_as_text`, special tokens are not matched (the library's encode_special_tokens).
  void split(std::string_view text, bool special_as_text, std::vector<TextSegment>& out) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // A byte trie over token contents, searched leftmost-longest.
  class Trie {
   public:
    void add(std::string_view key, std::int32_t token);
    // The next match starting at or after `from`: sets begin/end/token and returns true.
    bool next(std::string_view text, std::size_t from, std::size_t& begin, std::size_t& end, std::int32_t& token) const;
    bool empty() const { return nodes_.size() <= 1; }

   private:
    struct Node {
      std::int32_t token = -1;  // index into tokens_ if a token ends here
      std::vector<std::pair<std::uint8_t, std::int32_t>> kids;
    };
    std::vector<Node> nodes_{1};
    bool first_[256] = {};
  };

  void find_matches(std::string_view text, const Trie& trie, bool special_as_text, std::size_t offset,
                    std::vector<TextSegment>& out) const;

  std::vector<AddedToken> tokens_;
  Trie raw_, normalized_;
};

}  // namespace dsv4
