#pragma once
// The inputs of logits, run and perplexity: token-id lists, the feeding mode, text files.
#include <cstdint>
#include <string>
#include <vector>

namespace dsv4::cli {

// "0,5,9" (commas, spaces or newlines) or "@FILE"; dsv4::Error for anything else or no ids.
std::vector<std::int64_t> parse_ids(std::string text);
// --mode: "prefill" → 0 (one call), "decode" → 1, "chunk:N" → N.
std::size_t parse_mode(const std::string& mode);
// The whole content of a file, or of standard input for "-"; `flag` names the option in errors.
std::string read_text_input(const std::string& path, const std::string& flag);

}  // namespace dsv4::cli
