// libFuzzer target for the streaming output parser (text/output_parser.h). The first byte picks
// the options (bit 0 thinking, bit 1 incremental call streaming, bit 2 the V4 0731 tags), the
// next eight give a cycle of chunk lengths 1..32; the rest is the model output. The output is
// parsed in one piece and in those chunks, and the two results must be identical, the deltas
// must add up to the result, no delta may split a UTF-8 character of a valid input, and the
// result must account for every input byte (check_output_spans). Any mismatch aborts; the parser
// itself must never throw. Build with -DDSV4_BUILD_FUZZERS=ON and CXX=clang++; seed corpus in
// fuzz/corpus/output_parser/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "text/output_parser.h"
#include "text/utf8.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "output_parser_fuzz: %s %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 9) return 0;
  dsv4::OutputParserOptions o;
  o.thinking_started = (data[0] & 1) != 0;
  o.call_streaming =
      (data[0] & 2) != 0 ? dsv4::CallStreaming::incremental : dsv4::CallStreaming::whole_invoke;
  o.dsml = (data[0] & 4) != 0 ? dsv4::ChatProfile::V4 : dsv4::ChatProfile::V41;
  const std::string_view text(reinterpret_cast<const char*>(data) + 9, size - 9);

  const dsv4::ParsedOutput one = dsv4::parse_output(text, o);
  if (const std::string why = dsv4::check_output_spans(text, one, o.dsml); !why.empty())
    die("lossless check failed:", why);

  const bool valid = dsv4::utf8_valid(text);
  dsv4::OutputParser p(o);
  dsv4::ParsedOutput sum;
  const auto absorb = [&](const dsv4::ParseDelta& d) {
    if (valid && !(dsv4::utf8_valid(d.reasoning) && dsv4::utf8_valid(d.content)))
      die("a delta splits a UTF-8 character");
    sum.reasoning_content += d.reasoning;
    sum.content += d.content;
    for (const dsv4::ToolCallDelta& c : d.tool_calls) {
      if (c.begins) {
        if (c.index != sum.tool_calls.size()) die("call indices are not consecutive");
        sum.tool_calls.push_back({c.name, "", "", false});
      }
      if (c.index >= sum.tool_calls.size()) die("fragment of a call that never began");
      dsv4::ParsedToolCall& t = sum.tool_calls[c.index];
      t.arguments += c.arguments;
      t.raw += c.raw;
      if (c.ends) t.complete = c.complete;
    }
    sum.warnings.insert(sum.warnings.end(), d.warnings.begin(), d.warnings.end());
  };
  std::size_t at = 0;
  for (std::size_t k = 0; at < text.size(); ++k) {
    const std::size_t n = 1 + data[1 + k % 8] % 32;
    absorb(p.feed(text.substr(at, n)));
    at += std::min(n, text.size() - at);
  }
  absorb(p.finish());
  sum.spans = p.result().spans;
  sum.saw_eos = p.result().saw_eos;
  if (!(p.result() == one)) die("chunked result differs from one-shot result");
  if (!(sum == one)) die("deltas do not add up to the result");
  return 0;
}
