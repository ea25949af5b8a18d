#pragma once
// The id space of a Hugging Face `tokenizer.json` as DeepSeek ships it (spec §12, §16.6): a
// byte-level BPE model whose `model.vocab` maps token strings to ids 0..V-1, plus `added_tokens`
// (BOS/EOS/pad, role markers, placeholders) that may re-declare vocabulary entries and extend
// the id space past V.
//
// Ids are assigned the way the `tokenizers` library assigns them when it loads the file, and the
// file's own `id` fields must agree (that library ignores them and only warns): an added token
// whose content is already in model.vocab keeps the vocabulary id; each new one takes the next id
// from V upwards, in list order. Any disagreement (duplicate ids, gaps, a re-declared id with other
// content, out-of-order ids) is an error, because ids read from the file would then differ from
// the ones the model was trained with.
//
// This loader knows the ids only; the BPE encoder (merges, pre-tokenizer) builds on it later.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dsv4 {

struct TokenizerVocab {
  std::vector<std::string> id_to_token;  // the token's string as stored (ByteLevel alphabet for
                                         // vocabulary entries, plain text for added tokens)
  std::vector<std::uint8_t> is_added;    // 1 if the id is declared in added_tokens
  std::vector<std::uint8_t> is_special;  // 1 if that declaration has "special": true
  std::size_t size() const { return id_to_token.size(); }
};

// Reads and parses a tokenizer.json. Throws dsv4::Error naming the file on I/O or JSON errors.
nlohmann::json read_tokenizer_json(const std::string& path);

// Builds the id table from a parsed tokenizer.json; `source` (the file name) appears in every
// error message. Requires model.type "BPE" and a ByteLevel decoder, the only kind this engine
// decodes (spec §8.2 depends on it).
TokenizerVocab tokenizer_vocab_from_json(const nlohmann::json& doc, const std::string& source);

// read_tokenizer_json + tokenizer_vocab_from_json.
TokenizerVocab load_tokenizer_vocab(const std::string& path);

}  // namespace dsv4
