#pragma once
// Parsing of the token-id and feeding-mode flags shared by logits, run and perplexity.
#include <cstdint>
#include <string>
#include <vector>

namespace dsv4::cli {

// "0,5,9" (commas, spaces or newlines) or "@FILE"; dsv4::Error for anything else or no ids.
std::vector<std::int64_t> parse_ids(std::string text);
// --mode: "prefill" → 0 (one call), "decode" → 1, "chunk:N" → N.
std::size_t parse_mode(const std::string& mode);

}  // namespace dsv4::cli
