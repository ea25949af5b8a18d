// libFuzzer target for the server's request handling short of the model: a JSON body through
// the API's parser (byte 0 picks OpenAI chat, OpenAI completions or Anthropic messages), then
// prepare() (chat rendering, tokenization, generation parameters) and the response shapes of a
// made-up result. The properties: nothing throws but ApiError (a request can only be refused,
// never crash the server), every error has a 4xx status, and every JSON we would send dumps
// without error. Build with -DDSV4_BUILD_FUZZERS=ON and CXX=clang++; seeds in
// fuzz/corpus/serve_request/; DSV4_FUZZ_TOKENIZER names the tokenizer.json.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/anthropic_api.h"
#include "serve/api_json.h"
#include "serve/openai_api.h"
#include "serve/request_runner.h"
#include "util/error.h"

namespace {

std::unique_ptr<dsv4::Tokenizer> g_tok;

[[noreturn]] void die(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "serve_request_fuzz: %s %s\n", what, detail.c_str());
  std::abort();
}

void must_dump(const nlohmann::ordered_json& j) {
  (void)j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* env = std::getenv("DSV4_FUZZ_TOKENIZER");
  const std::string path = env != nullptr && *env != '\0' ? env : "tests/data/downloaded/tokenizer-v41.json";
  try {
    g_tok = std::make_unique<dsv4::Tokenizer>(dsv4::Tokenizer::from_file(path));
  } catch (const dsv4::Error& e) {
    std::fprintf(stderr, "serve_request_fuzz: %s\nSet DSV4_FUZZ_TOKENIZER to a tokenizer.json.\n", e.what());
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsv4::serve;
  if (size < 2) return 0;
  const ApiKind api = data[0] % 3 == 0 ? ApiKind::openai_chat : data[0] % 3 == 1 ? ApiKind::openai_completion
                                                                                 : ApiKind::anthropic_messages;
  try {
    // The server's own first step: only a JSON object of bounded depth reaches a parser.
    const auto body = api::parse_request_json(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
    ServeRequest r = api == ApiKind::openai_chat         ? parse_openai_chat(body)
                     : api == ApiKind::openai_completion ? parse_openai_completion(body)
                                                         : parse_anthropic_messages(body);
    r.model.clear();  // the served model
    const PreparedRequest pr = prepare(std::move(r), *g_tok, ServedModel{"fuzz", 4096, 0});
    // A made-up generation: the prompt's own first tokens as output, through the response shapes.
    dsv4::GenerationResult g;
    for (std::size_t i = 0; i < pr.prompt.size() && i < 8; ++i) {
      g.ids.push_back(pr.prompt[i]);
      g.tokens.push_back({pr.prompt[i], -1.0, {{pr.prompt[i], -1.0}}});
      g.text += std::string(g_tok->token_bytes(pr.prompt[i]));
    }
    g.finish = dsv4::FinishReason::kStopToken;
    const ServeResult res = make_result(pr, g, *g_tok);
    must_dump(response_body(pr, res));
  } catch (const ApiError& e) {
    if (e.http_status() < 400 || e.http_status() >= 500) die("a request error with status", std::to_string(e.http_status()));
    must_dump(error_body(api, e));
  } catch (const std::exception& e) {
    die("an exception other than ApiError escaped:", e.what());
  }
  return 0;
}
