// dsv4 perplexity: teacher-forced negative log-likelihood of a text, and its perplexity.
//
//   dsv4 perplexity [-m DIR] (-f FILE | --ids IDS) [-c CTX] [--stride S] [--no-bos] [--json]
//                   [--per-token] [--numerics fast|strict] [-t THREADS]
//
// The text is tokenized (BOS first unless --no-bos) and scored in windows of CTX tokens, the
// Hugging Face way: each window starts `stride` tokens after the previous one in a fresh
// sequence, and scores only the tokens no earlier window scored, so with stride < CTX every
// scored token sees at least CTX − stride tokens of context. stride = CTX (the default) gives
// disjoint windows. Token t is scored as −log softmax(logits at t − 1)[token t], in double from
// the float32 logits; the first token of the text is never scored.
#include <cmath>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "model_flags.h"
#include "progress.h"
#include "runtime/sampler.h"
#include "text/chat_tokens.h"
#include "text/tokenizer.h"
#include "cli_inputs.h"
#include "util/error.h"

namespace dsv4::cli {
namespace {

struct PplArgs {
  ModelFlags model;
  std::string file, ids;
  std::size_t stride = 0;
  bool no_bos = false, json = false, per_token = false;
};

int run(PplArgs& a) {
  if (a.file.empty() == a.ids.empty()) fail("perplexity needs exactly one of -f FILE or --ids IDS");
  a.model.model_dir = resolve_model_dir(a.model);
  std::vector<std::int64_t> ids;
  if (!a.ids.empty()) {
    ids = parse_ids(a.ids);
  } else {
    const Tokenizer tok = Tokenizer::from_model_dir(a.model.model_dir);
    const std::string text = read_text_input(a.file, "-f");
    if (!a.no_bos) {
      const auto bos = tok.bos_id() ? tok.bos_id() : tok.token_to_id(chat_token::kBos);
      if (bos) ids.push_back(*bos);
    }
    for (std::int32_t id : tok.encode(text)) ids.push_back(id);
  }
  if (ids.size() < 2) fail("perplexity needs at least 2 tokens (the first one is never scored); got {}", ids.size());
  const std::size_t ctx = a.model.ctx ? a.model.ctx : std::min<std::size_t>(ids.size(), 2048);
  if (ctx < 2) fail("-c {}: a window needs at least 2 tokens", ctx);
  const std::size_t stride = a.stride ? a.stride : ctx;
  if (stride > ctx) fail("--stride {} is larger than the context {}: tokens between windows would never be scored", stride, ctx);

  auto m = load_model(a.model, ctx);
  const auto V = static_cast<std::size_t>(m->config().vocab_size);
  auto seq = m->new_sequence(ctx);
  std::vector<double> nll(ids.size(), std::nan(""));  // nll[t]: token t's; nll[0] never scored
  std::size_t scored_to = 1;  // tokens [1, scored_to) are scored
  std::size_t windows = 0;
  ProgressBar bar("perplexity", !a.model.quiet);
  double sum = 0.0;
  for (std::size_t begin = 0; scored_to < ids.size(); begin += stride) {
    const std::size_t end = std::min(begin + ctx, ids.size());
    seq->reset();
    constexpr std::size_t kChunk = 512;
    for (std::size_t s = begin; s < end; s += kChunk) {
      const std::size_t n = std::min(kChunk, end - s);
      const std::vector<float> lg = m->forward(*seq, std::span<const std::int64_t>(ids.data() + s, n));
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t t = s + i + 1;  // the token these logits predict
        if (t >= end || t < scored_to) continue;
        nll[t] = -token_logprob(std::span<const float>(lg.data() + i * V, V), static_cast<std::int32_t>(ids[t]));
        sum += nll[t];
      }
      const std::size_t done = std::min(end, s + n);
      if (done > scored_to) bar.update(done - 1, ids.size() - 1, fmt::format("ppl {:.4f}", std::exp(sum / (done - 1))));
    }
    scored_to = end;
    ++windows;
    if (end == ids.size()) break;
  }
  bar.clear();
  const std::size_t n = ids.size() - 1;
  const double mean = sum / static_cast<double>(n);
  if (a.json) {
    nlohmann::ordered_json j;
    j["tokens"] = ids.size();
    j["scored_tokens"] = n;
    j["windows"] = windows;
    j["ctx"] = ctx;
    j["stride"] = stride;
    j["nll_sum"] = sum;
    j["mean_nll"] = mean;
    j["perplexity"] = std::exp(mean);
    j["numerics"] = std::string(numerics_name(m->options().numerics));
    if (a.per_token) {
      j["ids"] = ids;
      j["per_token_nll"] = std::vector<double>(nll.begin() + 1, nll.end());
    }
    std::cout << j.dump() << "\n";
  } else {
    std::printf("perplexity %.6f (mean NLL %.6f nats over %zu tokens, %zu windows of up to %zu, stride %zu)\n",
                std::exp(mean), mean, n, windows, ctx, stride);
  }
  return 0;
}

}  // namespace

void register_perplexity(CLI::App& app) {
  auto a = std::make_shared<PplArgs>();
  CLI::App* sub = app.add_subcommand("perplexity", "teacher-forced negative log-likelihood and perplexity of a text");
  add_model_flags(sub, a->model);
  sub->add_option("-f,--file", a->file, "the text (- = standard input)");
  sub->add_option("--ids", a->ids, "token ids instead of a text: 0,5,9 or @FILE");
  sub->add_option("--stride", a->stride, "tokens between window starts (default: the context, disjoint windows)");
  sub->add_flag("--no-bos", a->no_bos, "do not start the text with the begin-of-sentence token");
  sub->add_flag("--json", a->json, "print one JSON object");
  sub->add_flag("--per-token", a->per_token, "with --json: the token ids and every scored token's NLL (token 1 onwards)");
  add_command(sub, [a] { return run(*a); });
}

}  // namespace dsv4::cli
