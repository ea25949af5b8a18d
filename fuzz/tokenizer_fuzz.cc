// libFuzzer target for the tokenizer. The first input byte picks what the rest is:
//   0  text for encode(): if it is valid UTF-8, encoding must succeed, decode(encode(x)) == x,
//      the streamed decode must equal decode(), and the pre-tokenizer's pieces must be non-empty
//      and cover the text; if it is not, encode() must throw dsv4::Error (the documented choice:
//      invalid UTF-8 is rejected, never guessed at)
//   1  the same with special tokens treated as text
//   2  ids (16-bit little-endian, taken modulo size()+16): decode() must give valid UTF-8 equal to
//      the streamed decode, or throw dsv4::Error for ids past the tokenizer
//   3  a whole tokenizer.json: loading must succeed or throw dsv4::Error, nothing else
// Anything else — a crash, a sanitizer report, another exception escaping, a broken property —
// is a bug. The tokenizer for modes 0-2 is $DSV4_FUZZ_TOKENIZER, else
// tests/data/downloaded/tokenizer.json under the working directory (run from the repository root):
//   CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDSV4_BUILD_FUZZERS=ON -DDSV4_BUILD_TESTS=OFF
//   cmake --build build-fuzz --target tokenizer_fuzz
//   ./build-fuzz/tokenizer_fuzz -max_total_time=60 -max_len=4096
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/pretokenizer.h"
#include "text/stream_detokenizer.h"
#include "text/tokenizer.h"
#include "text/utf8.h"
#include "util/error.h"

namespace {

std::unique_ptr<dsv4::Tokenizer> g_tok;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

std::string stream_decode(const std::vector<std::int32_t>& ids) {
  dsv4::StreamDetokenizer s(*g_tok);
  std::string out;
  for (std::int32_t id : ids) {
    const dsv4::StreamChunk c = s.push(id);
    check(dsv4::utf8_valid(c.text), "a streamed chunk is valid UTF-8");
    out += c.text;
  }
  return out + s.finish().text;
}

void fuzz_encode(std::string_view text, bool special_as_text) {
  dsv4::EncodeOptions opt;
  opt.special_tokens_as_text = special_as_text;
  if (!dsv4::utf8_valid(text)) {
    try {
      g_tok->encode(text, opt);
    } catch (const dsv4::Error&) {
      return;
    }
    check(false, "encode rejects invalid UTF-8");
  }
  const std::vector<std::int32_t> ids = g_tok->encode(text, opt);
  check(g_tok->decode(ids) == text, "decode(encode(x)) == x");
  check(stream_decode(ids) == text, "the streamed decode equals decode");
  std::size_t covered = 0;
  for (std::string_view p : dsv4::pretokenize(text)) {
    check(!p.empty() && p.data() == text.data() + covered, "pieces are contiguous and non-empty");
    covered += p.size();
  }
  check(covered == text.size(), "pieces cover the text");
}

void fuzz_decode(const std::uint8_t* data, std::size_t size) {
  std::vector<std::int32_t> ids;
  const std::size_t n = g_tok->size() + 16;
  for (std::size_t i = 0; i + 1 < size; i += 2) ids.push_back(static_cast<std::int32_t>((data[i] | (data[i + 1] << 8)) % n));
  bool in_range = true;
  for (std::int32_t id : ids) in_range = in_range && g_tok->contains(id);
  try {
    const std::string text = g_tok->decode(ids);
    check(in_range, "decode rejects unknown ids");
    check(dsv4::utf8_valid(text), "decode gives valid UTF-8");
    check(stream_decode(ids) == text, "the streamed decode equals decode");
    check(g_tok->decode(ids, true).size() <= text.size(), "skipping special tokens never adds text");
  } catch (const dsv4::Error&) {
    check(!in_range, "decode accepts every id of the tokenizer");
  }
}

void fuzz_json(const std::uint8_t* data, std::size_t size) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(data, data + size);
  } catch (const nlohmann::json::exception&) {
    return;  // not JSON at all: read_tokenizer_json reports that, nothing more to test
  }
  try {
    // A tokenizer that loads must also run (whether it round-trips depends on its vocabulary).
    const dsv4::Tokenizer t = dsv4::Tokenizer::from_json(doc, "fuzz.json");
    const std::vector<std::int32_t> ids = t.encode("Hello, world 123 中文 <s>");
    check(dsv4::utf8_valid(t.decode(ids)), "a loaded tokenizer decodes to valid UTF-8");
  } catch (const dsv4::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* env = std::getenv("DSV4_FUZZ_TOKENIZER");
  const std::string path = env != nullptr && *env != '\0' ? env : "tests/data/downloaded/tokenizer.json";
  try {
    g_tok = std::make_unique<dsv4::Tokenizer>(dsv4::Tokenizer::from_file(path));
  } catch (const dsv4::Error& e) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\nSet DSV4_FUZZ_TOKENIZER to a tokenizer.json (or run "
                         "`bash tests/data/fetch_test_data.sh` and start from the repository root).\n",
                 e.what());
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0] % 4;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (mode) {
    case 0: fuzz_encode(rest, false); break;
    case 1: fuzz_encode(rest, true); break;
    case 2: fuzz_decode(data + 1, size - 1); break;
    default: fuzz_json(data + 1, size - 1); break;
  }
  return 0;
}
