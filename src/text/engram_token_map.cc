#include "text/engram_token_map.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/uversion.h>

#include <memory>
#include <unordered_map>

#include "text/byte_level.h"
#include "text/utf8.h"
#include "util/error.h"

// The normalizer of reference-spec.md §8.2 on ICU. Built and tested against Debian 12's ICU 72.1
// (Unicode 15.0); unicode_version() reports the ICU actually linked. ICU's own whole-string
// lowercasing follows Python (final sigma; "İ" -> "i̇"), which is not what the reference used,
// so lowercasing here is per code point (see lowercase()).
namespace dsv4 {
namespace {

constexpr const char* kNormalizationUnicode = "9.0";
constexpr char32_t kSentinel = 0xE000;  // private use: protects a lone " " from Strip (§8.2)

// The ICU objects of the normalizer, built once. Normalizer2 instances and frozen UnicodeSets are
// immutable and safe to share between threads.
class Normalizer {
 public:
  Normalizer() {
    UErrorCode ec = U_ZERO_ERROR;
    const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(ec);
    const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(ec);
    // [:age=9.0:] is cumulative in ICU: every code point assigned in Unicode 9.0 or earlier.
    const std::string age = std::string("[:age=") + kNormalizationUnicode + ":]";
    assigned_ = std::make_unique<icu::UnicodeSet>(icu::UnicodeString::fromUTF8(age), ec);
    marks_ = std::make_unique<icu::UnicodeSet>(
        icu::UnicodeString::fromUTF8("[[:M:]&" + age + "]"), ec);
    if (U_FAILURE(ec)) fail("ICU: cannot set up the Engram normalizer: {}", u_errorName(ec));
    assigned_->freeze();
    marks_->freeze();
    // A FilteredNormalizer2 normalizes the spans inside the set and copies the rest unchanged,
    // which is how a Unicode 9.0 normalizer treats characters it does not know.
    nfkc_ = std::make_unique<icu::FilteredNormalizer2>(*nfkc, *assigned_);
    nfd_ = std::make_unique<icu::FilteredNormalizer2>(*nfd, *assigned_);
  }

  // The whole §8.2 Sequence; `utf8` must be valid UTF-8.
  std::string normalize(std::string_view utf8) const {
    bool ascii = true;
    for (char ch : utf8) ascii = ascii && static_cast<unsigned char>(ch) < 0x80;
    if (ascii) {
      // NFKC/NFD leave ASCII alone and it has no marks: only lowercasing applies.
      std::string lower(utf8);
      for (char& ch : lower) ch = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch + 32) : ch;
      return whitespace_steps(lower);
    }
    std::u32string cps;
    cps.reserve(utf8.size());
    unicode_steps(utf8, cps);
    return whitespace_steps(cps);
  }

 private:
  // NFKC, NFD, StripAccents (drop Mark characters), Lowercase.
  void unicode_steps(std::string_view utf8, std::u32string& out) const {
    UErrorCode ec = U_ZERO_ERROR;
    const icu::UnicodeString src = icu::UnicodeString::fromUTF8(
        icu::StringPiece(utf8.data(), static_cast<std::int32_t>(utf8.size())));
    const icu::UnicodeString d = nfd_->normalize(nfkc_->normalize(src, ec), ec);
    if (U_FAILURE(ec)) fail("ICU: normalization failed: {}", u_errorName(ec));
    for (std::int32_t i = 0; i < d.length(); i = d.moveIndex32(i, 1)) {
      const UChar32 c = d.char32At(i);
      if (marks_->contains(c)) continue;
      lowercase(c, out);
    }
  }

  // Rust's char::to_lowercase: the full lowercase mapping of one character with no context
  // (so no final-sigma rule). Lowercasing a one-character string with the root locale gives
  // exactly that: Final_Sigma needs a preceding cased letter, and the other conditional rules
  // are language-specific.
  static void lowercase(UChar32 c, std::u32string& out) {
    if (c < 0x80) {
      out.push_back(static_cast<char32_t>(c >= 'A' && c <= 'Z' ? c + 32 : c));
      return;
    }
    UChar in[2];
    std::int32_t in_len = 0;
    U16_APPEND_UNSAFE(in, in_len, c);
    UChar buf[8];
    UErrorCode ec = U_ZERO_ERROR;
    const std::int32_t n = u_strToLower(buf, 8, in, in_len, "", &ec);
    if (U_FAILURE(ec)) fail("ICU: lowercasing U+{:04X} failed: {}", static_cast<std::uint32_t>(c), u_errorName(ec));
    for (std::int32_t i = 0; i < n;) {
      UChar32 l;
      U16_NEXT_UNSAFE(buf, i, l);
      out.push_back(static_cast<char32_t>(l));
    }
  }

  // Replace(/[ \t\r\n]+/, " "), Replace(/^ $/, U+E000), Strip, Replace(U+E000, " "), on code
  // points (char32_t) or, for ASCII-only text, on bytes (char), where U+E000 cannot occur.
  template <class C>
  static std::string whitespace_steps(const std::basic_string<C>& cps) {
    constexpr bool wide = sizeof(C) > 1;
    std::basic_string<C> s;
    s.reserve(cps.size());
    bool in_run = false;
    for (C c : cps) {
      const bool ws = c == C(' ') || c == C('\t') || c == C('\r') || c == C('\n');
      if (ws && in_run) continue;
      s.push_back(ws ? C(' ') : c);
      in_run = ws;
    }
    if (s.size() == 1 && s[0] == C(' ')) return " ";  // the U+E000 round trip of a lone space
    // Strip: Unicode White_Space at both ends (Rust char::is_whitespace).
    const auto white = [](C c) { return u_isUWhiteSpace(static_cast<UChar32>(c)) != 0; };
    std::size_t b = 0, e = s.size();
    while (b < e && white(s[b])) ++b;
    while (e > b && white(s[e - 1])) --e;
    if constexpr (!wide) {
      return std::string(s, b, e - b);
    } else {
      std::string out;
      out.reserve(e - b);
      for (std::size_t i = b; i < e; ++i) utf8_append(out, s[i] == kSentinel ? U' ' : s[i]);
      return out;
    }
  }

  std::unique_ptr<icu::UnicodeSet> assigned_;
  std::unique_ptr<icu::UnicodeSet> marks_;
  std::unique_ptr<const icu::Normalizer2> nfkc_;  // FilteredNormalizer2s
  std::unique_ptr<const icu::Normalizer2> nfd_;
};

const Normalizer& normalizer() {
  static const Normalizer n;
  return n;
}

bool has_replacement_char(std::string_view utf8) { return utf8.find("\xEF\xBF\xBD") != std::string_view::npos; }

// §8.2 key of one token, given the shared normalizer.
std::string token_key(const Normalizer& norm, const std::string& token) {
  std::string text = byte_level_decode(token);
  // from_utf8_lossy puts U+FFFD in for any invalid sequence; a valid U+FFFD counts as well.
  if (!utf8_valid(text) || has_replacement_char(text)) return token;
  std::string key = norm.normalize(text);
  return key.empty() ? text : key;
}

}  // namespace

std::int32_t EngramTokenMap::lookup(std::int64_t token_id) const {
  if (token_id < 0 || static_cast<std::uint64_t>(token_id) >= compressed_id.size())
    fail("token id {} has no Engram compressed id: the tokenizer defines ids 0..{} only (spec §16.6)", token_id,
         static_cast<std::int64_t>(compressed_id.size()) - 1);
  return compressed_id[static_cast<std::size_t>(token_id)];
}

std::int32_t EngramTokenMap::pad_compressed(std::int32_t pad_id) const { return lookup(pad_id); }

std::string engram_token_key(const TokenizerVocab& vocab, std::size_t token_id) {
  if (token_id >= vocab.size())
    fail("token id {} is outside the tokenizer's {} ids", token_id, vocab.size());
  return token_key(normalizer(), vocab.id_to_token[token_id]);
}

EngramTokenMap build_engram_token_map(const TokenizerVocab& vocab) {
  if (vocab.size() > static_cast<std::size_t>(INT32_MAX)) fail("tokenizer has {} ids, beyond int32", vocab.size());
  const Normalizer& norm = normalizer();
  EngramTokenMap map;
  map.compressed_id.resize(vocab.size());
  std::unordered_map<std::string, std::int32_t> key_to_new;
  key_to_new.reserve(vocab.size());
  for (std::size_t t = 0; t < vocab.size(); ++t) {
    auto [it, inserted] = key_to_new.try_emplace(token_key(norm, vocab.id_to_token[t]),
                                                 static_cast<std::int32_t>(key_to_new.size()));
    map.compressed_id[t] = it->second;
  }
  map.compressed_vocab_size = static_cast<std::int32_t>(key_to_new.size());
  return map;
}

EngramTokenMap build_engram_token_map(const std::string& tokenizer_json_path) {
  return build_engram_token_map(load_tokenizer_vocab(tokenizer_json_path));
}

std::string engram_normalize(std::string_view utf8) {
  if (!utf8_valid(utf8)) fail("engram_normalize: the input is not valid UTF-8");
  return normalizer().normalize(utf8);
}

std::string unicode_version() {
  UVersionInfo v;
  u_getUnicodeVersion(v);
  char buf[U_MAX_VERSION_STRING_LENGTH];
  u_versionToString(v, buf);
  return buf;
}

std::string engram_normalization_unicode_version() { return kNormalizationUnicode; }

}  // namespace dsv4
