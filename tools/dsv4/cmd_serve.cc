// dsv4 serve: an OpenAI- and Anthropic-compatible HTTP server with continuous batching.
//
//   dsv4 serve [-m DIR] [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx-per-seq N]
//              [--api-key KEY] [--max-queue N] [--prefill-chunk N] [--alias NAME] [-n N] [-t N]
//
// Routes and behaviour: src/serve/http_server.h and docs/serving.md. SIGINT / SIGTERM stop the
// server: connections in flight are closed and the process exits 0.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "commands.h"
#include "model_flags.h"
#include "serve/http_server.h"
#include "util/error.h"

namespace dsv4::cli {
namespace {

struct ServeArgs {
  ModelFlags model;
  std::string host = "127.0.0.1", api_key, alias;
  int port = 8080;
  std::size_t parallel = 4, ctx_per_seq = 0, max_queue = 64, prefill_chunk = 256, max_tokens = 0;
};

int run(ServeArgs& a) {
  // SIGINT and SIGTERM go to one waiting thread (blocked here, before any thread starts, so
  // every thread inherits the mask), which stops the server.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  a.model.model_dir = resolve_model_dir(a.model);
  const std::size_t ctx = a.ctx_per_seq ? a.ctx_per_seq : a.model.ctx ? a.model.ctx : 4096;
  auto m = load_model(a.model, ctx);
  const Tokenizer tok = Tokenizer::from_model_dir(a.model.model_dir);
  serve::ServerOptions o;
  o.host = a.host;
  o.port = a.port;
  o.api_key = a.api_key;
  o.model_name = !a.alias.empty() ? a.alias
                 : a.model.model_dir.empty() ? "dsv4"
                                             : std::filesystem::path(a.model.model_dir).lexically_normal().filename().string();
  if (o.model_name.empty()) o.model_name = std::filesystem::path(a.model.model_dir).parent_path().filename().string();
  o.scheduler.parallel = a.parallel;
  o.scheduler.ctx_per_seq = ctx;
  o.scheduler.max_queue = a.max_queue;
  o.scheduler.prefill_chunk = a.prefill_chunk;
  o.default_max_tokens = a.max_tokens;
  serve::ApiServer server(*m, tok, o);
  server.bind();
  std::thread signals([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    if (sig != 0) server.stop();
  });
  std::fprintf(stderr, "serving '%s' on http://%s:%d (%zu parallel sequences of %zu tokens, queue %zu)%s\n",
               o.model_name.c_str(), a.host.c_str(), server.bound_port(), a.parallel, ctx, a.max_queue,
               a.api_key.empty() ? "" : ", API key required");
  // The port on stdout alone, flushed: scripts that start the server with --port 0 read it.
  std::printf("%d\n", server.bound_port());
  std::fflush(stdout);
  server.listen();
  // listen() returned: stopped by a signal, or it failed. Wake the signal thread if it still waits.
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  std::fprintf(stderr, "server stopped\n");
  return 0;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve", "OpenAI- and Anthropic-compatible HTTP server with continuous batching");
  add_model_flags(sub, a->model);
  sub->add_option("--host", a->host, "address to listen on (default 127.0.0.1)");
  sub->add_option("--port", a->port, "port (default 8080; 0: any free port, printed on stdout)")->check(CLI::Range(0, 65535));
  sub->add_option("--parallel", a->parallel, "sequences decoded together (default 4)")->check(CLI::Range(1, 1024));
  sub->add_option("--ctx-per-seq", a->ctx_per_seq, "positions per sequence (default -c, else 4096)");
  sub->add_option("--api-key", a->api_key, "require this key (Authorization: Bearer KEY or x-api-key)");
  sub->add_option("--max-queue", a->max_queue, "requests waiting beyond the running ones; more get 429 (default 64)");
  sub->add_option("--prefill-chunk", a->prefill_chunk, "prompt tokens per forward step (default 256)")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--alias", a->alias, "the model id clients use (default: the model directory's name)");
  sub->add_option("-n,--max-tokens", a->max_tokens, "default token limit when a request sets none (0: the context)");
  add_command(sub, [a] { return run(*a); });
}

}  // namespace dsv4::cli
