#include "text/utf8_lossy.h"

#include <cstdint>
#include <cstring>

#include "text/utf8.h"

namespace dsv4 {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Length of the sequence lead byte b starts (0 if b cannot start one) and the allowed range of
// the byte after it (Unicode Table 3-7).
int lead_info(std::uint8_t b, std::uint8_t& lo, std::uint8_t& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) {
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
    return 4;
  }
  return 0;
}

// How many bytes from s[p] are a prefix of a well-formed sequence (at least 1 if s[p] is a
// valid lead byte), and the full length of that sequence in `need`.
std::size_t valid_prefix(const std::uint8_t* s, std::size_t n, std::size_t p, int& need) {
  std::uint8_t lo, hi;
  need = lead_info(s[p], lo, hi);
  if (need == 0) return 0;
  std::size_t k = 1;
  while (k < static_cast<std::size_t>(need) && p + k < n) {
    const std::uint8_t b = s[p + k];
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
    ++k;
  }
  return k;
}

}  // namespace

std::size_t utf8_first_invalid(std::string_view sv) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(sv.data());
  const std::size_t n = sv.size();
  std::size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      std::uint64_t v;
      std::memcpy(&v, s + i, 8);
      if ((v & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    char32_t c;
    if (!utf8_next(sv, i, c)) return i;
  }
  return n;
}

void utf8_lossy_append(std::string_view bytes, std::string& out) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  out.reserve(out.size() + n);
  std::size_t p = 0;
  while (p < n) {
    // Copy the valid run in one go, then replace one maximal subpart.
    const std::size_t bad = p + utf8_first_invalid(bytes.substr(p));
    out.append(bytes.data() + p, bad - p);
    if (bad >= n) break;
    int need;
    const std::size_t k = valid_prefix(s, n, bad, need);
    out.append(kReplacement, 3);
    p = bad + (k == 0 ? 1 : k);
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  utf8_lossy_append(bytes, out);
  return out;
}

std::size_t utf8_incomplete_suffix(std::string_view bytes) {
  const auto* s = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  // The last lead byte within the final four bytes; continuation bytes before it cannot be part
  // of an incomplete sequence that reaches the end.
  for (std::size_t back = 1; back <= 4 && back <= n; ++back) {
    const std::size_t p = n - back;
    if ((s[p] & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    int need;
    const std::size_t k = valid_prefix(s, n, p, need);
    // Incomplete only if every byte up to the end is a valid continuation and more are needed.
    return (need > 1 && k == back && back < static_cast<std::size_t>(need)) ? back : 0;
  }
  return 0;
}

}  // namespace dsv4
