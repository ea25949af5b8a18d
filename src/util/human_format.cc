#include "util/human_format.h"

#include <fmt/format.h>

namespace dsv4 {

std::string with_commas(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v));
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string human_bytes(std::uint64_t b) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (b < 1024) return fmt::format("{} B", b);
  double v = static_cast<double>(b) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace dsv4
