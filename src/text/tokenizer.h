#pragma once
// The byte-level BPE tokenizer of a Hugging Face tokenizer.json as DeepSeek ships it (V3, V4,
// V4.1; spec §12), encoding and decoding exactly as the `tokenizers` library (0.23.2) does:
//
//   encode(text) = added tokens found first (added_tokens.h), the text between them
//                  pre-tokenized (pretokenizer.h) and each piece BPE-merged (bpe.h); then the
//                  post-processor's template, if any (DeepSeek's ByteLevel post-processor adds
//                  nothing, so no BOS: a prompt writes "<｜begin▁of▁sentence｜>" as text).
//   decode(ids)  = each id's token through the ByteLevel decoder (alphabet characters -> bytes,
//                  other tokens as their own UTF-8), the bytes joined, then
//                  String::from_utf8_lossy (utf8_lossy.h); skip_special drops special tokens.
//
// Input text must be valid UTF-8: the library only accepts Rust `str`, so there is no reference
// behaviour for anything else, and encode() throws dsv4::Error naming the first bad byte offset
// instead of guessing (callers that hold arbitrary bytes can run them through utf8_lossy()
// first, which is what Python's errors="replace" would do).
//
// Differences from the library, all on inputs it does not define or that DeepSeek files do not
// use: ids outside 0..size()-1 make decode() throw (the library drops them silently); the
// normalizer must be empty, the pre-tokenizer DeepSeek's, no truncation or padding; any other
// configuration is rejected at load time with a dsv4::Error saying what is unsupported.
//
// A Tokenizer is immutable after loading and safe to use from several threads at once; each
// concurrent encode() borrows its own word cache from an internal pool.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "text/added_tokens.h"
#include "text/tokenizer_vocab.h"

namespace dsv4 {

struct EncodeOptions {
  // The library's add_special_tokens: apply the post-processor's template (a TemplateProcessing
  // "single" template's BOS/EOS ids). DeepSeek's files have none, so this changes nothing there.
  bool add_special_tokens = true;
  // The library's encode_special_tokens: special added tokens (special: true) are not matched,
  // their strings are tokenized as ordinary text. Non-special added tokens (e.g. "<｜User｜>" in
  // V3, "<｜System｜>" in V4.1) are still matched, exactly as in the library.
  bool special_tokens_as_text = false;
};

class Tokenizer {
 public:
  // Loads a tokenizer.json. If a tokenizer_config.json sits beside it, its bos_token and
  // eos_token name bos_id() and eos_id(). Throws dsv4::Error naming the file and field for
  // unreadable, malformed or unsupported files.
  static Tokenizer from_file(const std::string& path);
  // A model directory's tokenizer: DIR/tokenizer.json.
  static Tokenizer from_model_dir(const std::string& dir);
  // From a parsed tokenizer.json; `source` names it in error messages.
  static Tokenizer from_json(const nlohmann::json& doc, const std::string& source);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<std::int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Appends to `out` instead.
  void encode_append(std::string_view text, std::vector<std::int32_t>& out, const EncodeOptions& options = {}) const;

  std::string decode(std::span<const std::int32_t> ids, bool skip_special_tokens = false) const;
  // The raw bytes the ByteLevel decoder writes for `id` (may be part of a UTF-8 character).
  // Throws dsv4::Error for an id outside 0..size()-1.
  std::string_view token_bytes(std::int32_t id) const;

  // Ids 0..size()-1: the vocabulary plus the added tokens (128,815 for V3, 129,280 for V4.1).
  std::size_t size() const;
  bool contains(std::int64_t id) const { return id >= 0 && static_cast<std::uint64_t>(id) < size(); }
  // The token's string as stored (ByteLevel alphabet for vocabulary entries); throws for bad ids.
  const std::string& id_to_token(std::int32_t id) const;
  // The id of a token string (added tokens first, then the vocabulary), as the library's
  // token_to_id.
  std::optional<std::int32_t> token_to_id(std::string_view token) const;
  bool is_special(std::int32_t id) const;  // declared in added_tokens with "special": true
  bool is_added(std::int32_t id) const;

  const TokenizerVocab& vocab() const;
  const std::vector<AddedToken>& added_tokens() const;
  std::optional<std::int32_t> bos_id() const;
  std::optional<std::int32_t> eos_id() const;

  // The pre-tokenizer's pieces of text that holds no added tokens (for tests and tools).
  static std::vector<std::string_view> pretokenize(std::string_view text);

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dsv4
