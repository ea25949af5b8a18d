#include "serve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>

#include "serve/anthropic_api.h"
#include "serve/api_json.h"
#include "serve/openai_api.h"
#include "util/error.h"

namespace dsv4::serve {
namespace {

using Json = nlohmann::ordered_json;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json parse_body(const std::string& body) { return api::parse_request_json(body); }

// Which API's error shape a route answers in: Anthropic's under /v1/messages, else OpenAI's.
ApiKind api_of_path(const std::string& path) {
  return path.rfind("/v1/messages", 0) == 0 ? ApiKind::anthropic_messages : ApiKind::openai_chat;
}

// Compares two strings in time independent of where they first differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

// A streamed response in progress: what the content provider needs between its calls.
struct StreamState {
  StreamState(std::shared_ptr<PreparedRequest> p, std::shared_ptr<Job> j, const Tokenizer& tok,
              std::chrono::milliseconds w)
      : pr(std::move(p)), job(std::move(j)), writer(*pr, tok), wait(w) {}
  std::shared_ptr<PreparedRequest> pr;
  std::shared_ptr<Job> job;
  ResponseWriter writer;
  std::chrono::milliseconds wait;
  bool started = false;
  std::chrono::steady_clock::time_point last_write{};  // of anything, a comment included
};

// One call of the chunked content provider: writes what the job has produced (or a keep-alive
// comment when nothing came for `wait`), and ends the stream after the done event. Returns false
// when a write fails: the client has gone.
bool pump(StreamState& st, httplib::DataSink& sink) {
  auto send = [&](const std::string& s) {
    if (s.empty()) return true;
    st.last_write = std::chrono::steady_clock::now();
    return sink.write(s.data(), s.size());
  };
  if (!st.started) {
    st.started = true;
    if (!send(st.writer.begin())) return false;
  }
  // While nothing is written (a long prefill — whose progress events write nothing — or the
  // queue), a comment every `wait` keeps proxies and clients from timing out and tells us
  // whether the client is still there.
  const std::string keep_alive = ": keep-alive\n\n";
  std::vector<JobEvent> events;
  if (!st.job->wait(events, st.wait)) return send(keep_alive);
  std::string out;
  for (const JobEvent& e : events) {
    if (e.kind != JobEvent::Kind::done) {
      out += st.writer.on_event(e);
      continue;
    }
    const ApiKind api = st.pr->req.api;
    if (!e.error.empty()) {
      const Json body = error_body(api, ApiError(ApiErrorKind::server, e.error));
      out += api == ApiKind::anthropic_messages ? SseEvent{"error", body}.wire() : "data: " + dump(body) + "\n\n";
    } else {
      out += st.writer.on_done(e, st.job->result());
    }
    send(out);
    sink.done();
    return true;
  }
  if (out.empty() && std::chrono::steady_clock::now() - st.last_write >= st.wait) out = keep_alive;
  return send(out);
}

}  // namespace

ApiServer::ApiServer(Model& model, const Tokenizer& tok, ServerOptions opts)
    : model_(model), tok_(tok), opts_(std::move(opts)) {
  served_.name = opts_.model_name.empty() ? "dsv4" : opts_.model_name;
  served_.ctx_per_seq = opts_.scheduler.ctx_per_seq;
  served_.default_max_tokens = opts_.default_max_tokens;
  scheduler_ = std::make_unique<BatchScheduler>(model_, tok_, opts_.scheduler, &metrics_);
  http_ = std::make_unique<httplib::Server>();
  // Every connection holds a thread while its request runs (a stream blocks its thread), so the
  // pool has room for every running and queued request plus the cheap routes.
  const std::size_t threads = opts_.scheduler.parallel + opts_.scheduler.max_queue + 8;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(opts_.max_body_bytes);
  // SO_REUSEADDR only: the library's default adds SO_REUSEPORT, with which a second server on a
  // port in use binds without error and the two share the connections.
  http_->set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http_->set_read_timeout(30, 0);
  http_->set_write_timeout(30, 0);
  routes();
}

ApiServer::~ApiServer() {
  stop();
}

void ApiServer::bind() {
  if (opts_.port == 0) {
    port_ = http_->bind_to_any_port(opts_.host);
  } else {
    port_ = http_->bind_to_port(opts_.host, opts_.port) ? opts_.port : -1;
  }
  if (port_ <= 0) fail("cannot listen on {}:{} (in use, or not an address of this machine)", opts_.host, opts_.port);
}

void ApiServer::listen() { http_->listen_after_bind(); }

void ApiServer::stop() {
  // Requests in flight end now (streams get their final events), so the connection threads
  // that listen() joins are free.
  if (scheduler_) scheduler_->cancel_all();
  if (http_) http_->stop();
}

void ApiServer::send_error(ApiKind api, const ApiError& e, httplib::Response& res) {
  ++metrics_.requests_failed;
  res.status = e.http_status();
  res.set_content(dump(error_body(api, e)), "application/json");
}

bool ApiServer::authorized(ApiKind api, const httplib::Request& req, httplib::Response& res) {
  if (opts_.api_key.empty()) return true;
  // OpenAI clients send "Authorization: Bearer KEY"; Anthropic's send "x-api-key: KEY". Either
  // header is accepted on every route.
  const std::string bearer = req.get_header_value("Authorization");
  const std::string xkey = req.get_header_value("x-api-key");
  const bool ok = (bearer.rfind("Bearer ", 0) == 0 && same_secret(bearer.substr(7), opts_.api_key)) ||
                  (!xkey.empty() && same_secret(xkey, opts_.api_key));
  if (ok) return true;
  send_error(api,
             ApiError(ApiErrorKind::authentication,
                      bearer.empty() && xkey.empty() ? "no API key given (Authorization: Bearer KEY or x-api-key: KEY)"
                                                     : "the API key is not valid"),
             res);
  return false;
}

void ApiServer::routes() {
  httplib::Server& s = *http_;
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    Json j = {{"status", "ok"}, {"model", served_.name}, {"running", scheduler_->running()},
              {"queued", scheduler_->queued()}};
    res.set_content(dump(j), "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(), "text/plain; version=0.0.4");
  });
  s.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(ApiKind::openai_chat, req, res)) return;
    Json m = {{"id", served_.name}, {"object", "model"}, {"created", 0}, {"owned_by", "dsv4"},
              {"max_model_len", served_.ctx_per_seq}};
    // Anthropic's models list reads `type`, `display_name`, `created_at`.
    m["type"] = "model";
    m["display_name"] = served_.name;
    m["created_at"] = "1970-01-01T00:00:00Z";
    Json j = {{"object", "list"}, {"data", Json::array({m})}, {"has_more", false}, {"first_id", served_.name},
              {"last_id", served_.name}};
    res.set_content(dump(j), "application/json");
  });
  s.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(ApiKind::openai_chat, req, res)) return;
    if (req.matches[1] != served_.name) {
      send_error(ApiKind::openai_chat,
                 ApiError(ApiErrorKind::not_found, fmt::format("the model '{}' does not exist", req.matches[1].str()),
                          "model"),
                 res);
      return;
    }
    Json m = {{"id", served_.name}, {"object", "model"}, {"created", 0}, {"owned_by", "dsv4"},
              {"max_model_len", served_.ctx_per_seq}, {"type", "model"}, {"display_name", served_.name},
              {"created_at", "1970-01-01T00:00:00Z"}};
    res.set_content(dump(m), "application/json");
  });
  // Anthropic's token counting: the prompt the request would run, tokenized, without running it.
  s.Post("/v1/messages/count_tokens", [this](const httplib::Request& req, httplib::Response& res) {
    ++metrics_.requests_total;
    if (!authorized(ApiKind::anthropic_messages, req, res)) return;
    try {
      Json body = parse_body(req.body);
      if (!body.contains("max_tokens")) body["max_tokens"] = 1;  // not part of this request's shape
      const PreparedRequest pr = prepare(parse_anthropic_messages(body), tok_, served_);
      res.set_content(dump(Json{{"input_tokens", pr.prompt.size()}}), "application/json");
    } catch (const ApiError& e) {
      send_error(ApiKind::anthropic_messages, e, res);
    }
  });
  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(ApiKind::openai_chat, req, res);
  });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(ApiKind::openai_completion, req, res);
  });
  s.Post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
    generate(ApiKind::anthropic_messages, req, res);
  });
  // Unknown routes and exceptions escaping a handler get the OpenAI error shape.
  s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const ApiKind api = api_of_path(req.path);
    const ApiErrorKind kind = res.status == 404 ? ApiErrorKind::not_found
                              : res.status == 413 || res.status == 400 || res.status == 405 ? ApiErrorKind::invalid_request
                              : ApiErrorKind::server;
    const std::string msg = res.status == 404   ? fmt::format("no route {} {}", req.method, req.path)
                            : res.status == 413 ? fmt::format("the request body exceeds {} bytes", opts_.max_body_bytes)
                            : res.status == 400 || res.status == 405
                                ? fmt::format("{} {} is not a request this server answers", req.method, req.path)
                                : fmt::format("HTTP {}", res.status);
    const int status = res.status;
    res.set_content(dump(error_body(api, ApiError(kind, msg))), "application/json");
    res.status = status;
  });
  s.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    const ApiKind api = api_of_path(req.path);
    send_error(api, ApiError(ApiErrorKind::server, msg), res);
  });
}

void ApiServer::generate(ApiKind api, const httplib::Request& req, httplib::Response& res) {
  ++metrics_.requests_total;
  if (!authorized(api, req, res)) return;
  std::shared_ptr<PreparedRequest> pr;
  std::shared_ptr<Job> job;
  try {
    const Json body = parse_body(req.body);
    ServeRequest sr = api == ApiKind::openai_chat         ? parse_openai_chat(body)
                      : api == ApiKind::openai_completion ? parse_openai_completion(body)
                                                          : parse_anthropic_messages(body);
    pr = std::make_shared<PreparedRequest>(prepare(std::move(sr), tok_, served_));
    job = std::make_shared<Job>(pr->prompt, pr->req.gen);
    scheduler_->submit(job);
  } catch (const ApiError& e) {
    send_error(api, e, res);
    return;
  } catch (const Error& e) {
    send_error(api, ApiError(ApiErrorKind::invalid_request, e.what()), res);
    return;
  }
  const auto wait_step = std::chrono::milliseconds(opts_.keep_alive_ms);

  if (!pr->req.stream) {
    // One JSON body, written when the job is done. Until then the provider watches the
    // connection, so that a client that goes away frees its sequence at once rather than at its
    // token limit. (The status line is sent first: an engine failure after this point is an
    // error body under 200, which only a failing forward pass can cause.)
    res.set_chunked_content_provider(
        "application/json",
        [this, pr, job, api](std::size_t, httplib::DataSink& sink) {
          std::vector<JobEvent> events;
          while (true) {
            if (!sink.is_writable()) break;
            events.clear();
            job->wait(events, std::chrono::milliseconds(50));
            for (const JobEvent& e : events) {
              if (e.kind != JobEvent::Kind::done) continue;
              std::string body;
              try {
                body = e.error.empty() ? dump(response_body(*pr, make_result(*pr, job->result(), tok_)))
                                       : dump(error_body(api, ApiError(ApiErrorKind::server, e.error)));
              } catch (const std::exception& ex) {
                body = dump(error_body(api, ApiError(ApiErrorKind::server, ex.what())));
              }
              sink.write(body.data(), body.size());
              sink.done();
              return true;
            }
          }
          job->cancel();  // the client has gone
          return false;
        },
        [job](bool) { job->cancel(); });  // a no-op once the job is done
    return;
  }

  auto st = std::make_shared<StreamState>(pr, job, tok_, wait_step);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st](std::size_t, httplib::DataSink& sink) {
        try {
          if (pump(*st, sink)) return true;
        } catch (const std::exception&) {  // nothing may escape into the HTTP library
        }
        st->job->cancel();  // the client is gone (or the stream broke): free its sequence
        return false;
      },
      [job](bool) { job->cancel(); });  // a no-op once the job is done
}

}  // namespace dsv4::serve
