// dsv4 chat: an interactive multi-turn conversation in the V4.1 chat format.
//
//   dsv4 chat [-m DIR] [--system TEXT] [--think LEVEL|off] [-c CTX] [sampling flags]
//
// The sequence state is kept between turns, so each turn prefills only its own tokens
// (runtime/chat_session.h). Reads lines from a terminal or a pipe; a line ending in "\" continues
// on the next one. Commands: /think N|low|high|max|off, /reset, /stats, /save FILE, /load FILE,
// /help, /quit. Ctrl-C stops the reply being generated and returns to the prompt; at the prompt a
// second Ctrl-C (or Ctrl-D, or the end of the pipe) ends the program.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "interrupt.h"
#include "model_flags.h"
#include "progress.h"
#include "reply_printer.h"
#include "runtime/chat_session.h"
#include "sampling_flags.h"
#include "util/error.h"

namespace dsv4::cli {
namespace {

struct ChatArgs {
  ModelFlags model;
  SamplingFlags sampling;
  std::string system, think;
};

ChatOptions think_options(ChatOptions o, const std::string& think) {
  if (think == "off" || think == "none") {
    o.thinking = false;
  } else {
    o.thinking = true;
    o.effort = parse_effort(think);
  }
  return o;
}

enum class ReadResult { line, eof, interrupted };

// One line from stdin, without the newline. Unbuffered reads, so that a SIGINT (installed without
// SA_RESTART) interrupts the wait instead of being retried.
ReadResult read_line(std::string& out) {
  out.clear();
  while (true) {
    char c;
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n == 1) {
      if (c == '\n') return ReadResult::line;
      out.push_back(c);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      if (interrupt_flag().load()) return ReadResult::interrupted;
      continue;
    }
    return out.empty() ? ReadResult::eof : ReadResult::line;
  }
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

void print_stats(const ChatSession& s) {
  std::printf("turns %zu, cached tokens %zu of context %zu, pending %zu\n", s.turns().size(), s.cached_tokens(),
              s.context(), s.pending().size());
  if (!s.turns().empty()) {
    const ChatTurn& t = s.turns().back();
    const GenerationTimings& g = t.generation.timings;
    std::printf("last turn: prefilled %zu tokens (%.1f tokens/s), generated %zu tokens (%.1f tokens/s), "
                "time to first token %.3f s, finish %s\n",
                g.prompt_tokens, g.prefill_tokens_per_s(), g.generated_tokens, g.decode_tokens_per_s(), g.ttft_s,
                finish_reason_name(t.generation.finish));
  }
  std::fflush(stdout);
}

int run(ChatArgs& a) {
  a.model.model_dir = resolve_model_dir(a.model);
  const std::size_t ctx = a.model.ctx ? a.model.ctx : 4096;
  auto m = load_model(a.model, ctx);
  const Tokenizer tok = Tokenizer::from_model_dir(a.model.model_dir);
  ChatOptions opts;
  if (!a.think.empty()) opts = think_options(opts, a.think);
  ChatSession session(*m, tok, opts, ctx);
  if (!a.system.empty()) session.set_system(a.system);
  std::optional<std::int32_t> eos = tok.eos_id();
  const bool interactive = ::isatty(STDIN_FILENO) == 1;
  const bool color = stdout_is_tty();
  std::atomic<bool>& stop = interrupt_flag();
  if (interactive)
    std::fprintf(stderr, "chat: type a message; /help for commands, Ctrl-C stops a reply, Ctrl-D quits\n");
  std::size_t turn_no = 0;
  while (true) {
    if (interactive) {
      std::fputs(color ? "\033[1m> \033[0m" : "> ", stdout);
      std::fflush(stdout);
    }
    std::string line, part;
    ReadResult rr;
    while ((rr = read_line(part)) == ReadResult::line && !part.empty() && part.back() == '\\') {
      part.pop_back();
      line += part + "\n";
    }
    if (rr == ReadResult::interrupted) {
      std::fprintf(stderr, "\n(Ctrl-C again, Ctrl-D or /quit to leave)\n");
      continue;  // the flag stays set: a second Ctrl-C now ends the process
    }
    line += part;
    if (rr == ReadResult::eof && line.empty()) break;
    clear_interrupt();
    const std::string text = trim(line);
    if (text.empty()) {
      if (rr == ReadResult::eof) break;
      continue;
    }
    try {
      if (text[0] == '/') {
        const std::size_t sp = text.find(' ');
        const std::string cmd = text.substr(0, sp);
        const std::string arg = sp == std::string::npos ? "" : trim(text.substr(sp + 1));
        if (cmd == "/quit" || cmd == "/exit") break;
        if (cmd == "/help") {
          std::printf("/think N|low|high|max|off  reasoning effort for the next turns (off: no reasoning)\n"
                      "/reset                     forget the conversation\n"
                      "/stats                     cache use and the last turn's speed\n"
                      "/save FILE                 write the transcript (messages and token ids) as JSON\n"
                      "/load FILE                 continue a saved transcript (or an OpenAI messages file)\n"
                      "/quit                      leave\n");
        } else if (cmd == "/think") {
          if (arg.empty()) fail("/think needs a level: 1-100, low, high, max, or off");
          session.set_options(think_options(session.options(), arg));
          std::printf("thinking: %s\n", session.options().thinking ? arg.c_str() : "off");
        } else if (cmd == "/reset") {
          session.reset();
          if (!a.system.empty()) session.set_system(a.system);
          std::printf("conversation reset\n");
        } else if (cmd == "/stats") {
          print_stats(session);
        } else if (cmd == "/save") {
          if (arg.empty()) fail("/save needs a file name");
          std::ofstream f(arg);
          f << session.transcript().dump(2) << "\n";
          if (!f) fail("/save {}: cannot write the file", arg);
          std::printf("saved %zu messages to %s\n", session.messages().size(), arg.c_str());
        } else if (cmd == "/load") {
          if (arg.empty()) fail("/load needs a file name");
          std::ifstream f(arg);
          if (!f) fail("/load {}: cannot read the file", arg);
          nlohmann::ordered_json doc;
          try {
            doc = nlohmann::ordered_json::parse(f);
          } catch (const nlohmann::json::exception& e) {
            fail("/load {}: not valid JSON ({})", arg, e.what());
          }
          session.load(doc, arg);
          std::printf("loaded %zu messages from %s (prefilled at the next turn)\n", session.messages().size(),
                      arg.c_str());
        } else {
          fail("unknown command {} (/help lists them)", cmd);
        }
        std::fflush(stdout);
      } else {
        SamplingFlags sf = a.sampling;
        GenerationParams gp = generation_params(sf, eos);
        if (a.sampling.seed == -1) a.sampling.seed = sf.seed;  // one random base seed per session
        gp.sampling.seed = static_cast<std::uint64_t>(a.sampling.seed) + turn_no;
        ReplyPrinter printer(stdout, color);
        ProgressBar bar("prefill", !a.model.quiet);
        ChatCallbacks cb;
        cb.on_prefill = [&](std::size_t done, std::size_t total) {
          if (total > gp.prefill_chunk) bar.update(done, total);
          if (done == total) bar.clear();
        };
        cb.on_delta = [&](const ParseDelta& d) { printer.delta(d); };
        const ChatTurn t = session.turn(text, gp, cb, &stop);
        printer.finish();
        ++turn_no;
        const GenerationTimings& g = t.generation.timings;
        if (t.generation.finish == FinishReason::kCancelled) std::fprintf(stderr, "[interrupted]\n");
        if (!a.model.quiet)
          std::fprintf(stderr, "%s[prefill %zu tokens %.1f t/s, %zu tokens %.1f t/s, first token %.3f s]%s\n",
                       color ? "\033[2m" : "", g.prompt_tokens, g.prefill_tokens_per_s(), g.generated_tokens,
                       g.decode_tokens_per_s(), g.ttft_s, color ? "\033[0m" : "");
        clear_interrupt();
      }
    } catch (const Error& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
    }
    if (rr == ReadResult::eof) break;
  }
  return 0;
}

}  // namespace

void register_chat(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  CLI::App* sub = app.add_subcommand("chat", "interactive multi-turn chat (V4.1 chat format)");
  add_model_flags(sub, a->model);
  add_sampling_flags(sub, a->sampling);
  sub->add_option("--system", a->system, "a system prompt");
  sub->add_option("--think", a->think, "reasoning effort (low, high, max, 1-100) or off (chat mode)");
  add_command(sub, [a] { return run(*a); });
}

}  // namespace dsv4::cli
