#include "cli_inputs.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "util/error.h"

namespace dsv4::cli {

std::vector<std::int64_t> parse_ids(std::string text) {
  if (!text.empty() && text[0] == '@') {
    std::ifstream f(text.substr(1));
    if (!f) fail("--ids: cannot read {}", text.substr(1));
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  for (char& ch : text)
    if (ch == ',' || ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
  std::istringstream in(text);
  std::vector<std::int64_t> ids;
  std::string tok;
  while (in >> tok) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(tok, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != tok.size()) fail("--ids: '{}' is not a token id", tok);
    ids.push_back(v);
  }
  if (ids.empty()) fail("--ids: no token ids given");
  return ids;
}

// Chunk size of --mode: 0 = the whole prompt in one call.
std::size_t parse_mode(const std::string& mode) {
  if (mode == "prefill") return 0;
  if (mode == "decode") return 1;
  if (mode.rfind("chunk:", 0) == 0) {
    const std::string n = mode.substr(6);
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(n, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == n.size() && v >= 1) return static_cast<std::size_t>(v);
  }
  fail("--mode must be prefill, decode or chunk:N with N ≥ 1, not '{}'", mode);
}

std::string read_text_input(const std::string& path, const std::string& flag) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{} {}: cannot read the file", flag, path);
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace dsv4::cli
