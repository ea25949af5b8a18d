// The HTTP server on loopback with the tiny preset: answers equal what the engine generates for
// the same rendered prompt, streamed and not; 16 concurrent clients get exactly their alone
// answers; a client that disconnects mid-stream frees its sequence (seen in /metrics); malformed,
// mistyped, oversized, unauthorised and unknown-model requests get the right status and error
// shape while the server keeps serving.
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "../common/tiny_fixture.h"
#include "runtime/generator.h"
#include "serve/http_server.h"
#include "util/error.h"

namespace dsv4::serve {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::chrono_literals;

class HttpServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::write_tiny_fixture("dsv4_http_test", 9, "tokenizer-v41.json", true);
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_model_dir(dir_));
    ModelOptions o;
    o.forward.numerics = kernels::Numerics::kFast;
    o.threads = 2;
    model_ = Model::load(dir_, o);
    ServerOptions so;
    so.port = 0;
    so.model_name = "tiny";
    so.api_key = "sekret";
    so.scheduler.parallel = 4;
    so.scheduler.ctx_per_seq = 192;
    so.scheduler.max_queue = 32;
    so.scheduler.prefill_chunk = 16;
    so.max_body_bytes = 1 << 16;
    so.keep_alive_ms = 200;
    server_ = std::make_unique<ApiServer>(*model_, *tok_, so);
    server_->bind();
    thread_ = std::thread([] { server_->listen(); });
  }
  static void TearDownTestSuite() {
    server_->stop();
    thread_.join();
    server_.reset();
    model_.reset();
    tok_.reset();
    fs::remove_all(dir_);
  }
  static httplib::Client client() {
    httplib::Client c("127.0.0.1", server_->bound_port());
    c.set_read_timeout(120, 0);
    c.set_default_headers({{"Authorization", "Bearer sekret"}});
    return c;
  }
  static httplib::Result post(const std::string& path, const Json& body) {
    return client().Post(path.c_str(), body.dump(), "application/json");
  }
  // What the engine generates for this chat request when nothing else runs.
  static GenerationResult alone(const Json& body) {
    PreparedRequest pr = prepare(parse_openai_chat(nlohmann::ordered_json::parse(body.dump())), *tok_,
                                 ServedModel{"tiny", 192, 0});
    auto seq = model_->new_sequence(192);
    Generator g(*model_, *tok_);
    return g.generate(*seq, pr.prompt, pr.req.gen);
  }
  static Json chat(const std::string& user, std::size_t max_tokens) {
    return {{"model", "tiny"},
            {"messages", Json::array({{{"role", "user"}, {"content", user}}})},
            {"max_tokens", max_tokens},
            {"temperature", 0}};
  }
  // The data lines of an SSE body, parsed ("[DONE]" as a string).
  static std::vector<Json> sse(const std::string& body) {
    std::vector<Json> out;
    std::size_t p = 0;
    while ((p = body.find("data: ", p)) != std::string::npos) {
      const std::size_t e = body.find("\n\n", p);
      const std::string d = body.substr(p + 6, e - p - 6);
      out.push_back(d == "[DONE]" ? Json("[DONE]") : Json::parse(d));
      p = e;
    }
    return out;
  }
  // Sends a chat request on a raw connection, so that a test decides when to hang up; returns
  // the socket, or -1 if it could not connect or send.
  static int raw_chat_request(const Json& body) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(server_->bound_port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::string payload = body.dump();
    const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Authorization: Bearer sekret\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  static std::string dir_;
  static std::unique_ptr<Tokenizer> tok_;
  static std::unique_ptr<Model> model_;
  static std::unique_ptr<ApiServer> server_;
  static std::thread thread_;
};
std::string HttpServerTest::dir_;
std::unique_ptr<Tokenizer> HttpServerTest::tok_;
std::unique_ptr<Model> HttpServerTest::model_;
std::unique_ptr<ApiServer> HttpServerTest::server_;
std::thread HttpServerTest::thread_;

TEST_F(HttpServerTest, ChatAnswerIsTheEngineOutputStreamedOrNot) {
  const Json body = chat("Say something.", 12);
  const GenerationResult a = alone(body);
  auto r = post("/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json j = Json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["usage"]["completion_tokens"], a.ids.size());
  EXPECT_EQ(j["usage"]["prompt_tokens"].get<std::size_t>() + j["usage"]["completion_tokens"].get<std::size_t>(),
            j["usage"]["total_tokens"].get<std::size_t>());
  const Json& msg = j["choices"][0]["message"];
  const std::string content = msg["content"].is_null() ? "" : msg["content"].get<std::string>();
  // Chat mode (no reasoning asked for): the whole text is content unless it holds markup.
  if (a.text.find("<｜") == std::string::npos && a.text.find("</think>") == std::string::npos) {
    EXPECT_EQ(content, a.text);
  }

  Json sbody = body;
  sbody["stream"] = true;
  sbody["stream_options"] = {{"include_usage", true}};
  auto s = post("/v1/chat/completions", sbody);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200) << s->body;
  EXPECT_NE(s->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const std::vector<Json> chunks = sse(s->body);
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks.back(), Json("[DONE]"));
  std::string streamed;
  std::string finish;
  for (const Json& c : chunks) {
    if (!c.is_object() || c["choices"].empty()) continue;
    const Json& d = c["choices"][0]["delta"];
    if (d.contains("content") && d["content"].is_string()) streamed += d["content"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(streamed, content);
  EXPECT_EQ(finish, j["choices"][0]["finish_reason"]);
  const Json& usage = chunks[chunks.size() - 2]["usage"];
  EXPECT_EQ(usage["completion_tokens"], a.ids.size());
  // Both requests are in the metrics: tokens, and a time to first token each.
  auto m = client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("# TYPE dsv4_time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(m->body.find("dsv4_inter_token_latency_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
  EXPECT_GE(server_->metrics().ttft.count(), 2u);
  EXPECT_GE(server_->metrics().generated_tokens.load(), 2 * a.ids.size());
}

TEST_F(HttpServerTest, SixteenConcurrentClientsGetTheirAloneAnswers) {
  std::vector<Json> bodies;
  std::vector<GenerationResult> expected;
  for (int i = 0; i < 16; ++i) {
    Json b = chat("Request number " + std::to_string(i) + std::string(i % 4 * 5, '!'), 5 + i % 7);
    if (i % 2) {
      b["temperature"] = 0.8;
      b["seed"] = 1000 + i;
    }
    bodies.push_back(b);
    expected.push_back(alone(b));
  }
  std::vector<std::string> got(16);
  std::vector<std::thread> clients;
  for (int i = 0; i < 16; ++i)
    clients.emplace_back([&, i] {
      Json b = bodies[static_cast<std::size_t>(i)];
      b["logprobs"] = true;
      auto r = post("/v1/chat/completions", b);
      if (r && r->status == 200) got[static_cast<std::size_t>(i)] = r->body;
    });
  for (auto& t : clients) t.join();
  for (std::size_t i = 0; i < 16; ++i) {
    ASSERT_FALSE(got[i].empty()) << "request " << i << " failed";
    const Json j = Json::parse(got[i]);
    const Json& lp = j["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(lp.size(), expected[i].tokens.size()) << "request " << i;
    for (std::size_t t = 0; t < lp.size(); ++t) {
      EXPECT_EQ(lp[t]["logprob"].get<double>(), expected[i].tokens[t].logprob) << "request " << i;
      const std::string_view bytes = tok_->token_bytes(expected[i].ids[t]);
      std::vector<int> want(bytes.begin(), bytes.end());
      for (int& v : want) v &= 0xff;
      EXPECT_EQ(lp[t]["bytes"].get<std::vector<int>>(), want) << "request " << i << " token " << t;
    }
  }
}

TEST_F(HttpServerTest, KeepAliveCommentsWhileARequestWaitsForItsFirstToken) {
  // A second server on the same (idle) model with one slot and a 1 ms keep-alive interval. A
  // long request holds the slot, so the streamed request waits in the queue, and then has its
  // long prompt read in 4-token chunks: its stream must carry comments before any content. (The
  // queue makes the wait certain; a prefill alone could finish before the stream's first write
  // on a loaded machine.)
  ServerOptions so;
  so.port = 0;
  so.model_name = "tiny";
  so.scheduler.parallel = 1;
  so.scheduler.ctx_per_seq = 256;
  so.scheduler.prefill_chunk = 4;
  so.keep_alive_ms = 1;
  ApiServer second(*model_, *tok_, so);
  second.bind();
  std::thread t([&] { second.listen(); });
  Json hold = chat("Hold the slot.", 150);
  hold["ignore_eos"] = true;
  std::thread holder([&] {
    httplib::Client c("127.0.0.1", second.bound_port());
    c.set_read_timeout(120, 0);
    c.Post("/v1/chat/completions", hold.dump(), "application/json");
  });
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (second.scheduler().running() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  std::string words;
  for (int i = 0; i < 60; ++i) words += "word" + std::to_string(i) + " ";
  Json b = chat(words, 2);
  b["stream"] = true;
  httplib::Client c("127.0.0.1", second.bound_port());
  c.set_read_timeout(120, 0);
  auto r = c.Post("/v1/chat/completions", b.dump(), "application/json");
  holder.join();
  second.stop();
  t.join();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const std::size_t comment = r->body.find(": keep-alive\n\n");
  const std::size_t first_content = r->body.find("\"content\":\"", r->body.find("\"content\":\"\"") + 1);
  EXPECT_NE(comment, std::string::npos);
  EXPECT_LT(comment, first_content);  // sent while the request waited and its prompt was read
  const std::vector<Json> chunks = sse(r->body);  // the comments do not disturb the events
  EXPECT_EQ(chunks.back(), Json("[DONE]"));
}

TEST_F(HttpServerTest, DisconnectMidStreamFreesTheSequence) {
  const auto before = server_->metrics().requests_cancelled.load();
  Json b = chat("Keep talking for a long time.", 150);
  b["stream"] = true;
  b["max_tokens"] = 150;
  b["ignore_eos"] = true;
  // A raw connection, so the test decides when to hang up: after the first bytes of the stream.
  const int fd = raw_chat_request(b);
  ASSERT_GE(fd, 0);
  std::string got;
  char buf[512];
  while (got.find("\"content\"") == std::string::npos) {  // a content delta: generation is under way
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0) << got;
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  ::close(fd);
  // The server notices at its next write and cancels the job before the following step.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (server_->metrics().requests_cancelled.load() == before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(server_->metrics().requests_cancelled.load(), before + 1);
  while (server_->scheduler().running() != 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(server_->scheduler().running(), 0u);
  auto m = client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("dsv4_requests_cancelled_total " + std::to_string(before + 1)), std::string::npos);
  EXPECT_NE(m->body.find("dsv4_running_sequences 0"), std::string::npos);
  // And the server still answers.
  auto ok = post("/v1/chat/completions", chat("Still there?", 3));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(HttpServerTest, DisconnectWhileWaitingForAWholeAnswerFreesTheSequence) {
  const auto before = server_->metrics().requests_cancelled.load();
  const auto received = server_->metrics().requests_total.load();
  Json b = chat("Write a long essay.", 150);
  b["ignore_eos"] = true;
  const int fd = raw_chat_request(b);
  ASSERT_GE(fd, 0);
  // Hang up once the request is running (it needs 150 steps; the server writes nothing before).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  auto running = [&] {
    return server_->metrics().requests_total.load() > received && server_->scheduler().running() == 1;
  };
  while (!running() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(running());
  ::close(fd);
  while (server_->metrics().requests_cancelled.load() == before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(server_->metrics().requests_cancelled.load(), before + 1);
  while (server_->scheduler().running() != 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(server_->scheduler().running(), 0u);
}

TEST_F(HttpServerTest, BadRequestsGetTheRightErrorsAndTheServerKeepsServing) {
  struct Case {
    std::string path, body;
    int status;
    std::string type;
  };
  const std::vector<Case> cases = {
      {"/v1/chat/completions", "{not json", 400, "invalid_request_error"},
      {"/v1/chat/completions", "[1,2]", 400, "invalid_request_error"},
      {"/v1/chat/completions", R"({"temperature":1e99999,"messages":[]})", 400, "invalid_request_error"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"temperature":"hot"})", 400,
       "invalid_request_error"},
      {"/v1/chat/completions", R"({"messages":"hi"})", 400, "invalid_request_error"},
      {"/v1/chat/completions", R"({"model":"gpt-4","messages":[{"role":"user","content":"hi"}]})", 404,
       "not_found_error"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":100000})", 400,
       "invalid_request_error"},
      {"/v1/completions", R"({"prompt":[1,2,3]})", 400, "invalid_request_error"},
      {"/v1/messages", R"({"model":"tiny","messages":[{"role":"user","content":"hi"}]})", 400,
       "invalid_request_error"},
      {"/v1/nothing", "{}", 404, "not_found_error"},
      {"/v1/chat/completions", std::string(70000, ' '), 413, "invalid_request_error"},
      // Nesting that would exhaust a handler's stack when rendered is refused before parsing.
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"tools":)" + std::string(20000, '[') +
                                   std::string(20000, ']') + "}",
       400, "invalid_request_error"},
  };
  for (const Case& c : cases) {
    auto r = client().Post(c.path.c_str(), c.body, "application/json");
    ASSERT_TRUE(r) << c.path;
    EXPECT_EQ(r->status, c.status) << c.path << " " << c.body.substr(0, 80) << " -> " << r->body;
    const Json j = Json::parse(r->body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r->body;
    if (c.path == "/v1/messages") {
      EXPECT_EQ(j["type"], "error");
      EXPECT_EQ(j["error"]["type"], c.type);
    } else {
      EXPECT_EQ(j["error"]["type"], c.type) << r->body;
      EXPECT_TRUE(j["error"]["message"].is_string());
    }
  }
  // Authentication: none, a wrong key, the right key as x-api-key.
  httplib::Client bare("127.0.0.1", server_->bound_port());
  auto none = bare.Post("/v1/chat/completions", chat("hi", 2).dump(), "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(Json::parse(none->body)["error"]["type"], "authentication_error");
  auto wrong = bare.Post("/v1/messages", httplib::Headers{{"x-api-key", "nope"}}, R"({"max_tokens":2,"messages":[]})",
                         "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(Json::parse(wrong->body)["error"]["type"], "authentication_error");
  auto right = bare.Post("/v1/messages", httplib::Headers{{"x-api-key", "sekret"}},
                         R"({"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}]})",
                         "application/json");
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200) << right->body;
  EXPECT_EQ(Json::parse(right->body)["type"], "message");
  // A second server on the port in use is refused with an error naming it.
  ServerOptions same;
  same.port = server_->bound_port();
  ApiServer second(*model_, *tok_, same);
  EXPECT_THROW(second.bind(), Error);
  // The cheap routes.
  auto h = bare.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(Json::parse(h->body)["status"], "ok");
  auto models = client().Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(Json::parse(models->body)["data"][0]["id"], "tiny");
  auto one = client().Get("/v1/models/tiny");
  ASSERT_TRUE(one);
  EXPECT_EQ(Json::parse(one->body)["id"], "tiny");
  auto other = client().Get("/v1/models/gpt-4");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  // count_tokens: the prompt a messages request would run, counted without running it.
  const std::string msgs = R"({"model":"tiny","system":"Be brief.","messages":[{"role":"user","content":"How many?"}]})";
  auto count = client().Post("/v1/messages/count_tokens", msgs, "application/json");
  ASSERT_TRUE(count);
  ASSERT_EQ(count->status, 200) << count->body;
  Json run = Json::parse(msgs);
  run["max_tokens"] = 1;
  auto ran = client().Post("/v1/messages", run.dump(), "application/json");
  ASSERT_TRUE(ran);
  EXPECT_EQ(Json::parse(count->body)["input_tokens"], Json::parse(ran->body)["usage"]["input_tokens"]);
}

}  // namespace
}  // namespace dsv4::serve
