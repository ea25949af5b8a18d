// dsv4 run: generate text (or token ids) from a prompt, streaming it as it comes.
//
//   dsv4 run [-m DIR] (-p TEXT | -f FILE | --ids 0,5,9|@FILE) [-n N] [--temp T] [--top-k K]
//            [--top-p P] [--min-p P] [--seed S] [--stop STR]... [-t THREADS] [-c CTX]
//            [--chat [--system TEXT] [--think LEVEL|off]] [--json] [--logprobs N]
//            [--numerics fast|strict] [--mode prefill|decode|chunk:N] [--dspark]
//
// Without --chat the prompt is raw text (BOS first, as llama.cpp does, unless --no-bos); with
// --chat it is one user turn in the V4.1 chat format and the reply is split into reasoning,
// answer and tool calls. Ends with time to first token, prefill and decode tokens/s on stderr.
// --json prints one object instead: text, content, reasoning_content, tool_calls, ids, finish
// reason, seed, timings, usage (and logprobs with --logprobs).
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "interrupt.h"
#include "model_flags.h"
#include "progress.h"
#include "reply_printer.h"
#include "runtime/generator.h"
#include "sampling_flags.h"
#include "text/chat_format.h"
#include "text/chat_tokens.h"
#include "text/output_parser.h"
#include "cli_inputs.h"
#include "util/error.h"
#include "util/npy.h"

namespace dsv4::cli {
namespace {

struct RunArgs {
  ModelFlags model;
  SamplingFlags sampling;
  std::string prompt, file, ids, mode, system, think;
  bool chat = false, json = false, no_bos = false, dspark = false, no_stream = false;
  std::string dspark_out;
};

ChatOptions chat_options(const std::string& think) {
  ChatOptions o;
  if (think == "off" || think == "none") o.thinking = false;
  else if (!think.empty()) o.effort = parse_effort(think);
  return o;
}

nlohmann::ordered_json logprob_json(const Tokenizer& tok, const std::vector<SampledToken>& tokens) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const SampledToken& t : tokens) {
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (const TokenLogprob& a : t.top)
      top.push_back({{"id", a.id}, {"token", tok.decode(std::span<const std::int32_t>(&a.id, 1))}, {"logprob", a.logprob}});
    out.push_back({{"id", t.id},
                   {"token", tok.decode(std::span<const std::int32_t>(&t.id, 1))},
                   {"logprob", t.logprob},
                   {"top_logprobs", top}});
  }
  return out;
}

// The drafting view of the DSpark stages (spec §9.5): greedy decode with the draft head run after
// every step, printing its drafts. The speculative loop itself is a later issue.
int run_dspark(RunArgs& a, Model& m, const std::vector<std::int64_t>& ids) {
  if (a.sampling.temp != 0.0) fail("--dspark shows the drafts along a greedy decode: it needs --temp 0");
  const auto n_new = static_cast<std::size_t>(a.sampling.n_predict);
  auto seq = m.new_sequence(ids.size() + n_new + 1);
  const auto V = static_cast<std::size_t>(m.config().vocab_size);
  const auto logits = m.forward_last(*seq, ids);
  nlohmann::json drafts = nlohmann::json::array();
  std::vector<float> draft_logits;
  std::size_t steps = 0;
  std::vector<std::int64_t> out;
  std::int64_t next = argmax(logits);
  m.forward_spec(*seq, next, 0);  // seeds the stages' rings with the prefill's hiddens
  for (std::size_t k = 0; k < n_new; ++k) {
    out.push_back(next);
    if (k + 1 == n_new) break;
    const auto lg = m.forward(*seq, std::span<const std::int64_t>(&next, 1));
    next = argmax(lg);
    const std::int64_t sp = seq->pos() - 1;
    SpecOutput o = m.forward_spec(*seq, next, sp);
    drafts.push_back({{"start_pos", sp}, {"ids", o.ids}, {"confidence", o.confidence}});
    draft_logits.insert(draft_logits.end(), o.logits.begin(), o.logits.end());
    ++steps;
  }
  if (!a.dspark_out.empty()) {
    const std::int64_t shape[3] = {static_cast<std::int64_t>(steps), m.config().dspark_block_size,
                                   static_cast<std::int64_t>(V)};
    write_npy_f32(a.dspark_out, shape, draft_logits);
  }
  nlohmann::json j;
  j["prompt_ids"] = ids;
  j["generated_ids"] = out;
  j["dspark"] = drafts;
  std::cout << j.dump() << "\n";
  return 0;
}

int run(RunArgs& a) {
  const int inputs = !a.prompt.empty() + !a.file.empty() + !a.ids.empty();
  if (inputs != 1) fail("run needs exactly one prompt: -p TEXT, -f FILE or --ids IDS");
  if (a.chat && !a.ids.empty()) fail("--chat renders a text prompt; it cannot be combined with --ids");
  if (!a.chat && (!a.system.empty() || !a.think.empty())) fail("--system and --think need --chat");
  const std::size_t chunk = a.mode.empty() ? 512 : parse_mode(a.mode);
  a.model.model_dir = resolve_model_dir(a.model);
  const Tokenizer tok = Tokenizer::from_model_dir(a.model.model_dir);

  // The prompt's token ids.
  std::vector<std::int32_t> prompt;
  ChatOptions copts = chat_options(a.think);
  if (!a.ids.empty()) {
    for (std::int64_t v : parse_ids(a.ids)) {
      if (v < 0 || v > INT32_MAX) fail("--ids: {} is not a token id", v);
      prompt.push_back(static_cast<std::int32_t>(v));
    }
  } else {
    const std::string text = a.prompt.empty() ? read_text_input(a.file, "-f") : a.prompt;
    if (a.chat) {
      std::vector<ChatMessage> msgs;
      if (!a.system.empty()) msgs.push_back(chat_text_message(ChatRole::System, a.system));
      msgs.push_back(chat_text_message(ChatRole::User, text));
      prompt = tok.encode(render_chat(msgs, copts));
    } else {
      if (!a.no_bos && text.rfind(chat_token::kBos, 0) != 0) {
        const auto bos = tok.bos_id() ? tok.bos_id() : tok.token_to_id(chat_token::kBos);
        if (bos) prompt.push_back(*bos);
      }
      tok.encode_append(text, prompt);
    }
  }
  if (prompt.empty()) fail("the prompt is empty: nothing to continue from");
  std::optional<std::int32_t> eos = tok.eos_id() ? tok.eos_id() : tok.token_to_id(chat_token::kEos);
  GenerationParams gp = generation_params(a.sampling, eos);
  gp.prefill_chunk = chunk;
  const std::size_t ctx = a.model.ctx ? a.model.ctx : prompt.size() + gp.max_new_tokens + 1;
  if (prompt.size() >= ctx)
    fail("the prompt has {} tokens, which does not fit the context of {} tokens (raise -c)", prompt.size(), ctx);

  auto m = load_model(a.model, ctx);
  if (a.dspark) {
    if (!a.mode.empty() && chunk != 0) fail("--dspark needs --mode prefill (the draft rings are seeded by one prefill)");
    return run_dspark(a, *m, std::vector<std::int64_t>(prompt.begin(), prompt.end()));
  }
  auto seq = m->new_sequence(ctx);

  const bool stream = !a.json && !a.no_stream;
  OutputParserOptions po;
  po.thinking_started = copts.thinking;
  OutputParser parser(po);
  ReplyPrinter printer(stdout, stdout_is_tty());
  ProgressBar bar("prefill", !a.model.quiet && prompt.size() > chunk && chunk > 0);
  GenerationCallbacks cb;
  cb.on_prefill = [&](std::size_t done, std::size_t total) {
    bar.update(done, total);
    if (done == total) bar.clear();
  };
  auto on_text = [&](const std::string& text) {
    if (text.empty()) return;
    if (a.chat) {
      const ParseDelta d = parser.feed(text);
      if (stream) printer.delta(d);
    } else if (stream) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
  };
  cb.on_token = [&](const SampledToken&, const std::string& text) { on_text(text); };
  cb.on_text = on_text;
  clear_interrupt();
  Generator gen(*m, tok);
  const GenerationResult r = gen.generate(*seq, prompt, gp, cb, &interrupt_flag());
  ParsedOutput parsed;
  if (a.chat) {
    const ParseDelta last = parser.finish();
    if (stream) printer.delta(last);
    parsed = parser.result();
    if (stream) printer.finish();
  } else {
    parsed.content = r.text;
    if (stream && !r.text.empty() && r.text.back() != '\n') std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  const GenerationTimings& t = r.timings;
  if (a.json) {
    nlohmann::ordered_json j;
    j["text"] = r.text;
    j["content"] = parsed.content;
    j["reasoning_content"] = parsed.reasoning_content;
    nlohmann::ordered_json calls = nlohmann::ordered_json::array();
    for (const ParsedToolCall& c : parsed.tool_calls)
      calls.push_back({{"name", c.name}, {"arguments", c.arguments}, {"complete", c.complete}});
    j["tool_calls"] = calls;
    j["prompt_ids"] = prompt;
    j["generated_ids"] = r.ids;
    j["finish_reason"] = finish_reason_name(r.finish);
    j["seed"] = a.sampling.seed;
    j["numerics"] = std::string(numerics_name(m->options().numerics));
    j["index_keys"] = std::string(index_keys_name(m->options().index_keys));
    j["attn_slots"] = std::string(attn_slots_name(m->options().attn_slots));
    j["threads"] = m->threads();
    j["timings"] = {{"time_to_first_token_s", t.ttft_s},
                    {"prefill_s", t.prefill_s},
                    {"decode_s", t.decode_s},
                    {"prefill_tokens_per_s", t.prefill_tokens_per_s()},
                    {"decode_tokens_per_s", t.decode_tokens_per_s()}};
    j["usage"] = {{"prompt_tokens", prompt.size()},
                  {"completion_tokens", r.ids.size()},
                  {"total_tokens", prompt.size() + r.ids.size()}};
    if (a.sampling.logprobs > 0) j["logprobs"] = logprob_json(tok, r.tokens);
    std::cout << j.dump() << "\n";
  }
  if (!a.model.quiet)
    std::fprintf(stderr,
                 "%s: time to first token %.3f s; prefill %zu tokens in %.3f s (%.1f tokens/s); decode %zu tokens in "
                 "%.3f s (%.1f tokens/s); seed %lld\n",
                 r.finish == FinishReason::kCancelled ? "interrupted" : finish_reason_name(r.finish), t.ttft_s,
                 t.prompt_tokens, t.prefill_s, t.prefill_tokens_per_s(), t.generated_tokens, t.decode_s,
                 t.decode_tokens_per_s(), static_cast<long long>(a.sampling.seed));
  return 0;
}

}  // namespace

void register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "generate text from a prompt (streamed), or token ids from ids");
  add_model_flags(sub, a->model);
  add_sampling_flags(sub, a->sampling);
  sub->add_option("-p,--prompt", a->prompt, "prompt text");
  sub->add_option("-f,--file", a->file, "read the prompt from a file (- = standard input)");
  sub->add_option("--ids", a->ids, "the prompt as token ids: 0,5,9 or @FILE");
  sub->add_flag("--chat", a->chat, "render the prompt as a user turn in the V4.1 chat format");
  sub->add_option("--system", a->system, "with --chat: a system prompt");
  sub->add_option("--think", a->think, "with --chat: reasoning effort (low, high, max, 1-100) or off (chat mode)");
  sub->add_flag("--no-bos", a->no_bos, "raw prompt: do not start with the begin-of-sentence token");
  sub->add_flag("--json", a->json, "print one JSON object (no streaming)");
  sub->add_flag("--no-stream", a->no_stream, "print nothing while generating (timings only)");
  sub->add_option("--mode", a->mode, "prompt feeding: prefill (one call), decode (a token per call) or chunk:N "
                                     "(default chunk:512)");
  sub->add_flag("--dspark", a->dspark, "greedy decode showing the DSpark drafts after every step (JSON)");
  sub->add_option("--dspark-out", a->dspark_out, "with --dspark: the drafts' logits, float32 [steps, block, vocab]");
  add_command(sub, [a] { return run(*a); });
}

}  // namespace dsv4::cli
