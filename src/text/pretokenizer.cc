#include "text/pretokenizer.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "text/unicode_classes.h"
#include "util/error.h"

namespace dsv4 {

// Spelled as in the JSON file (JSON and C++ string escapes coincide here; the main pattern holds
// real CR and LF characters inside its classes).
const char* const kDeepSeekDigitsPattern = "\\p{N}{1,3}";
const char* const kDeepSeekCjkPattern = "[一-龥぀-ゟ゠-ヿ]+";
const char* const kDeepSeekMainPattern =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
    "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

namespace {

using nlohmann::json;

std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

constexpr const char* kSupported =
    "only DeepSeek's Sequence of Split(\\p{N}{1,3}), Split(CJK/kana), Split(main pattern), all Isolated, "
    "then ByteLevel without prefix space is supported";

void check_split(const json& st, const std::string& where, const char* pattern, const std::string& source) {
  const auto pat = st.find("pattern");
  if (pat == st.end() || !pat->is_object() || !pat->contains("Regex") || !(*pat)["Regex"].is_string())
    fail("{}: {}.pattern is {}; expected {{\"Regex\": {}}} ({})", source, where,
         pat == st.end() ? std::string("missing") : show(*pat), json(pattern).dump(), kSupported);
  const std::string& re = (*pat)["Regex"].get_ref<const std::string&>();
  if (re != pattern)
    fail("{}: {}.pattern.Regex is {}; this position of the sequence must be {} ({})", source, where, json(re).dump(),
         json(pattern).dump(), kSupported);
  const json behavior = st.value("behavior", json());
  if (behavior != "Isolated")
    fail("{}: {}.behavior is {}; only \"Isolated\" is supported", source, where, show(behavior));
  const json invert = st.value("invert", json(false));
  if (invert != false) fail("{}: {}.invert is {}; only false is supported", source, where, show(invert));
}

void check_byte_level(const json& st, const std::string& where, const std::string& source) {
  const json prefix = st.value("add_prefix_space", json(false));
  if (prefix != false)
    fail("{}: {}.add_prefix_space is {}; only false is supported (DeepSeek adds no prefix space)", source, where,
         show(prefix));
  const json use_regex = st.value("use_regex", json(false));
  if (use_regex != false)
    fail("{}: {}.use_regex is {}; only false is supported (the splitting is done by the Split steps)", source, where,
         show(use_regex));
}

// ---------------------------------------------------------------------------------------------
// The scanner. Positions are byte offsets; every position handed around is at a character
// boundary of valid input. On invalid UTF-8 a malformed byte counts as one character of class 0,
// which keeps every read in bounds.

constexpr std::uint8_t kLM = kClassLetter | kClassMark;
constexpr std::uint8_t kPS = kClassPunct | kClassSymbol;

inline bool ascii_punct(std::uint8_t b) {  // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]
  return (b >= 0x21 && b <= 0x2F) || (b >= 0x3A && b <= 0x40) || (b >= 0x5B && b <= 0x60) || (b >= 0x7B && b <= 0x7E);
}
inline bool ascii_alpha(std::uint8_t b) { return static_cast<std::uint8_t>((b | 0x20) - 'a') < 26; }

class Scanner {
 public:
  Scanner(std::string_view text, std::vector<std::uint32_t>& ends)
      : s_(reinterpret_cast<const std::uint8_t*>(text.data())), n_(text.size()), t_(unicode_class_table()),
        ends_(ends) {}

  void run() {
    std::size_t p = 0;
    while (p < n_) {
      std::size_t len;
      const std::uint8_t c = cls(p, n_, len);
      std::size_t q = p + len;
      if (c & kClassNumber) {
        // \p{N}{1,3}: groups of three from the left; they stay whole through the main pattern.
        int count = 1;
        while (true) {
          if (count == 3) {
            ends_.push_back(static_cast<std::uint32_t>(q));
            count = 0;
          }
          if (q >= n_ || !(cls(q, n_, len) & kClassNumber)) break;
          q += len;
          ++count;
        }
        if (count > 0) ends_.push_back(static_cast<std::uint32_t>(q));
      } else if (c & kClassCjk) {
        while (q < n_ && (cls(q, n_, len) & kClassCjk)) q += len;
        main_pattern(p, q);
      } else {
        while (q < n_ && !(cls(q, n_, len) & (kClassNumber | kClassCjk))) q += len;
        main_pattern(p, q);
      }
      p = q;
    }
  }

 private:
  // Class flags and byte length of the character at p (p < e). Never reads at or past e.
  std::uint8_t cls(std::size_t p, std::size_t e, std::size_t& len) const {
    const std::uint8_t b0 = s_[p];
    if (b0 < 0x80) {
      len = 1;
      return t_.ascii[b0];
    }
    char32_t c;
    if (b0 >= 0xF0 && p + 3 < e) {
      len = 4;
      c = (char32_t(b0 & 0x07) << 18) | (char32_t(s_[p + 1] & 0x3F) << 12) | (char32_t(s_[p + 2] & 0x3F) << 6) |
          char32_t(s_[p + 3] & 0x3F);
    } else if (b0 >= 0xE0 && b0 < 0xF0 && p + 2 < e) {
      len = 3;
      c = (char32_t(b0 & 0x0F) << 12) | (char32_t(s_[p + 1] & 0x3F) << 6) | char32_t(s_[p + 2] & 0x3F);
    } else if (b0 >= 0xC0 && b0 < 0xE0 && p + 1 < e) {
      len = 2;
      c = (char32_t(b0 & 0x1F) << 6) | char32_t(s_[p + 1] & 0x3F);
    } else {
      len = 1;
      return 0;
    }
    return unicode_class(t_, c);
  }

  std::size_t run_of(std::size_t p, std::size_t e, std::uint8_t mask) const {
    std::size_t len;
    while (p < e && (cls(p, e, len) & mask)) p += len;
    return p;
  }

  // The main pattern on the string text[b, e): leftmost-first matches, gaps kept as pieces.
  void main_pattern(std::size_t b, std::size_t e) {
    std::size_t gap = b, p = b;
    while (p < e) {
      std::size_t len;
      const std::size_t m = match_at(p, e, len);
      if (m == p) {
        p += len;  // nothing matches here: the character joins the gap
        continue;
      }
      if (gap < p) ends_.push_back(static_cast<std::uint32_t>(p));
      ends_.push_back(static_cast<std::uint32_t>(m));
      p = gap = m;
    }
    if (gap < e) ends_.push_back(static_cast<std::uint32_t>(e));
  }

  // End of the match of the main pattern starting at p within [p, e), or p if none; `len0` gets
  // the length of the character at p.
  std::size_t match_at(std::size_t p, std::size_t e, std::size_t& len0) const {
    const std::uint8_t c0 = cls(p, e, len0);
    const std::size_t q = p + len0;
    std::size_t len1 = 0;
    const std::uint8_t c1 = q < e ? cls(q, e, len1) : 0;
    const std::uint8_t b0 = s_[p];

    // 1. [ASCII punctuation][A-Za-z]+
    if (b0 < 0x80 && ascii_punct(b0) && q < e && ascii_alpha(s_[q])) {
      std::size_t r = q + 1;
      while (r < e && ascii_alpha(s_[r])) ++r;
      return r;
    }
    // 2. [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ — the optional character is taken greedily, so a
    // space, digit, mark, symbol-less control... before a letter run belongs to it.
    if (!(c0 & (kClassCrLf | kClassLetter | kPS)) && (c1 & kLM)) return run_of(q + len1, e, kLM);
    if (c0 & kLM) return run_of(q, e, kLM);
    // 3. ' '?[\p{P}\p{S}]+[\r\n]*
    {
      const bool space = b0 == ' ';
      const std::uint8_t ck = space ? c1 : c0;
      const std::size_t k = space ? q : p;
      if (k < e && (ck & kPS)) {
        std::size_t r = run_of(k, e, kPS);
        while (r < e && (s_[r] == '\r' || s_[r] == '\n')) ++r;
        return r;
      }
    }
    if (!(c0 & kClassSpace)) return p;
    // 4.-6. A whitespace run text[p, r). \s*[\r\n]+ ends after its last CR/LF (\s* backtracks to
    // it); otherwise \s+(?!\S) takes the whole run at the end of the string and all but the last
    // character before a non-space; a single space before a non-space is \s+.
    std::size_t r = q, last = p, crlf_end = (c0 & kClassCrLf) ? q : 0;
    while (r < e) {
      std::size_t len;
      const std::uint8_t c = cls(r, e, len);
      if (!(c & kClassSpace)) break;
      if (c & kClassCrLf) crlf_end = r + len;
      last = r;
      r += len;
    }
    if (crlf_end != 0) return crlf_end;
    if (r == e) return r;
    if (last > p) return last;
    return r;
  }

  const std::uint8_t* s_;
  std::size_t n_;
  const UnicodeClassTable& t_;
  std::vector<std::uint32_t>& ends_;
};

}  // namespace

void check_deepseek_pretokenizer(const json& pre, const std::string& source) {
  if (pre.is_null()) fail("{}: pre_tokenizer is missing or null; {}", source, kSupported);
  if (!pre.is_object()) fail("{}: pre_tokenizer must be an object, got {}", source, show(pre));
  const json type = pre.value("type", json());
  if (type != "Sequence") fail("{}: pre_tokenizer.type is {}; {}", source, show(type), kSupported);
  const auto steps = pre.find("pretokenizers");
  if (steps == pre.end() || !steps->is_array())
    fail("{}: pre_tokenizer.pretokenizers must be an array, got {}", source,
         steps == pre.end() ? std::string("nothing") : show(*steps));
  static const char* const kSplits[] = {kDeepSeekDigitsPattern, kDeepSeekCjkPattern, kDeepSeekMainPattern};
  if (steps->size() != 4)
    fail("{}: pre_tokenizer.pretokenizers has {} steps, expected 4 ({})", source, steps->size(), kSupported);
  for (std::size_t i = 0; i < 4; ++i) {
    const json& st = (*steps)[i];
    const std::string where = fmt::format("pre_tokenizer.pretokenizers[{}]", i);
    if (!st.is_object()) fail("{}: {} must be an object, got {}", source, where, show(st));
    const json kind = st.value("type", json());
    const char* want = i < 3 ? "Split" : "ByteLevel";
    if (kind != want) fail("{}: {}.type is {}; expected \"{}\" here ({})", source, where, show(kind), want, kSupported);
    if (i < 3) check_split(st, where, kSplits[i], source);
    else check_byte_level(st, where, source);
  }
}

void pretokenize(std::string_view text, std::vector<std::uint32_t>& ends) {
  if (text.size() >= std::numeric_limits<std::uint32_t>::max())
    fail("pretokenize: the text is {} bytes; at most 4 GiB - 2 is supported", text.size());
  Scanner(text, ends).run();
}

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::uint32_t> ends;
  pretokenize(text, ends);
  std::vector<std::string_view> out;
  out.reserve(ends.size());
  std::uint32_t b = 0;
  for (std::uint32_t e : ends) {
    out.push_back(text.substr(b, e - b));
    b = e;
  }
  return out;
}

}  // namespace dsv4
