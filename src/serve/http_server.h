#pragma once
// `dsv4 serve`: the HTTP front of the engine. Routes:
//   POST /v1/chat/completions, POST /v1/completions (OpenAI), POST /v1/messages (Anthropic),
//   GET /v1/models, GET /health, GET /metrics (Prometheus text).
// Every generating request is parsed on its connection's thread, queued on the one
// BatchScheduler, and answered from the job's events: one JSON body, or server-sent events with
// keep-alive comments while a long prompt is prefilled. A client that disconnects mid-stream has
// its job cancelled, which frees its sequence before the next forward step.
#include <atomic>
#include <memory>
#include <string>

#include "model/model.h"
#include "serve/batch_scheduler.h"
#include "serve/metrics.h"
#include "serve/request_runner.h"
#include "text/tokenizer.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace dsv4::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0: any free port (bound_port() tells which)
  std::string api_key;              // "": no authentication
  std::string model_name;           // the id clients use
  SchedulerOptions scheduler;
  std::size_t default_max_tokens = 0;  // 0: up to the end of the context
  std::size_t max_body_bytes = 32u << 20;
  int keep_alive_ms = 5000;         // SSE comment interval while nothing else is sent
};

class ApiServer {
 public:
  // `model` and `tok` must outlive the server.
  ApiServer(Model& model, const Tokenizer& tok, ServerOptions opts);
  ~ApiServer();
  // Binds the listening socket (throws dsv4::Error naming host:port when it cannot).
  void bind();
  int bound_port() const { return port_; }
  // Serves until stop() (from another thread or a signal handler's watcher).
  void listen();
  void stop();
  Metrics& metrics() { return metrics_; }
  BatchScheduler& scheduler() { return *scheduler_; }

 private:
  void routes();
  void generate(ApiKind api, const httplib::Request& req, httplib::Response& res);
  bool authorized(ApiKind api, const httplib::Request& req, httplib::Response& res);
  void send_error(ApiKind api, const ApiError& e, httplib::Response& res);

  Model& model_;
  const Tokenizer& tok_;
  ServerOptions opts_;
  ServedModel served_;
  Metrics metrics_;
  std::unique_ptr<BatchScheduler> scheduler_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
};

}  // namespace dsv4::serve
