// The continuous-batching scheduler on the tiny preset: requests that share forward steps (joining
// and leaving the batch at different steps, prompts prefilled in chunks beside running decodes)
// produce exactly the tokens, text and finish reason they produce alone through the Generator;
// cancellation frees the slot for the next request; the queue bound, context bound and bad
// prompts are refused with the right error.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "../common/tiny_fixture.h"
#include "runtime/generator.h"
#include "serve/api_error.h"
#include "serve/batch_scheduler.h"

namespace dsv4::serve {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class BatchSchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::write_tiny_fixture("dsv4_scheduler_test", 5, "tokenizer-v41.json", true);
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_model_dir(dir_));
    ModelOptions o;
    o.forward.numerics = kernels::Numerics::kFast;
    o.threads = 2;
    model_ = Model::load(dir_, o);
  }
  static void TearDownTestSuite() {
    model_.reset();
    tok_.reset();
    fs::remove_all(dir_);
  }
  // Waits for the job's done event, collecting every event.
  static std::vector<JobEvent> drain(Job& j) {
    std::vector<JobEvent> ev;
    while (ev.empty() || ev.back().kind != JobEvent::Kind::done) j.wait(ev, 60s);
    return ev;
  }
  static GenerationResult alone(const std::vector<std::int32_t>& prompt, const GenerationParams& p, std::size_t ctx) {
    auto seq = model_->new_sequence(ctx);
    Generator g(*model_, *tok_);
    return g.generate(*seq, prompt, p);
  }
  static std::string dir_;
  static std::unique_ptr<Tokenizer> tok_;
  static std::unique_ptr<Model> model_;
};
std::string BatchSchedulerTest::dir_;
std::unique_ptr<Tokenizer> BatchSchedulerTest::tok_;
std::unique_ptr<Model> BatchSchedulerTest::model_;

TEST_F(BatchSchedulerTest, SixteenRequestsSharingStepsMatchEachAlone) {
  constexpr std::size_t kCtx = 160;
  std::vector<std::vector<std::int32_t>> prompts;
  std::vector<GenerationParams> params;
  const char* texts[] = {"The quick brown fox", "Once upon a time", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
                         "def main():\n    return 0", "Paris is the capital of", "a", "Hello, world!",
                         "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"};
  for (std::size_t i = 0; i < 16; ++i) {
    std::string t = std::string("<｜begin▁of▁sentence｜>") + texts[i % 8];
    for (std::size_t r = 0; r < i / 4; ++r) t += texts[(i + r) % 8];  // longer prompts: several chunks
    prompts.push_back(tok_->encode(t));
    GenerationParams p;
    p.max_new_tokens = 6 + (i * 7) % 17;  // requests leave the batch at different steps
    if (i % 3 == 2) {  // seeded sampling: its own sampler, so still the same draws
      p.sampling.temperature = 0.9;
      p.sampling.top_p = 0.95;
      p.sampling.seed = 100 + i;
    } else {
      p.sampling.temperature = 0.0;
    }
    if (i % 5 == 4) p.stop_strings = {"e"};
    p.top_logprobs = i % 2;
    params.push_back(p);
  }
  SchedulerOptions so;
  so.parallel = 6;       // more requests than slots: they join as others leave
  so.ctx_per_seq = kCtx;
  so.max_queue = 16;
  so.prefill_chunk = 7;  // prompts are split, and the split depends on who else prefills
  Metrics metrics;
  std::vector<std::shared_ptr<Job>> jobs;
  {
    BatchScheduler s(*model_, *tok_, so, &metrics);
    for (std::size_t i = 0; i < 16; ++i) {
      jobs.push_back(std::make_shared<Job>(prompts[i], params[i]));
      s.submit(jobs.back());
    }
    for (auto& j : jobs) {
      const std::vector<JobEvent> ev = drain(*j);
      std::string streamed;
      std::size_t tokens = 0;
      for (const JobEvent& e : ev) {
        streamed += e.text;
        tokens += e.kind == JobEvent::Kind::token;
      }
      EXPECT_EQ(streamed, j->result().text);
      EXPECT_EQ(tokens, j->result().ids.size());
      EXPECT_TRUE(ev.back().error.empty());
    }
    EXPECT_GT(metrics.batch_size.count(), 0u);
  }
  std::size_t batched_steps = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    const GenerationResult a = alone(prompts[i], params[i], kCtx);
    const GenerationResult& b = jobs[i]->result();
    EXPECT_EQ(b.ids, a.ids) << "request " << i;
    EXPECT_EQ(b.text, a.text) << "request " << i;
    EXPECT_EQ(b.finish, a.finish) << "request " << i;
    ASSERT_EQ(b.tokens.size(), a.tokens.size());
    for (std::size_t t = 0; t < a.tokens.size(); ++t) {
      EXPECT_EQ(b.tokens[t].logprob, a.tokens[t].logprob);
      EXPECT_EQ(b.tokens[t].top.size(), a.tokens[t].top.size());
    }
    batched_steps += b.ids.size();
  }
  // The steps really were shared: fewer forward steps than tokens generated and prompts read.
  EXPECT_LT(metrics.forward_steps.load(), batched_steps);
  EXPECT_EQ(metrics.generated_tokens.load(), batched_steps);
}

TEST_F(BatchSchedulerTest, CancellingFreesTheSlotForTheNextRequest) {
  SchedulerOptions so;
  so.parallel = 1;
  so.ctx_per_seq = 256;
  so.max_queue = 1;
  Metrics metrics;
  BatchScheduler s(*model_, *tok_, so, &metrics);
  GenerationParams p;
  p.sampling.temperature = 0.0;
  p.max_new_tokens = 200;
  const auto prompt = tok_->encode("<｜begin▁of▁sentence｜>Hello");
  auto a = std::make_shared<Job>(prompt, p);
  s.submit(a);
  // Once a has produced a token it holds the only slot: b waits in the queue and c is refused.
  std::vector<JobEvent> ev;
  while (std::none_of(ev.begin(), ev.end(), [](const JobEvent& e) { return e.kind == JobEvent::Kind::token; }))
    a->wait(ev, 60s);
  GenerationParams q = p;
  q.max_new_tokens = 3;
  auto b = std::make_shared<Job>(prompt, q);
  s.submit(b);
  auto c = std::make_shared<Job>(prompt, q);
  try {
    s.submit(c);
    ADD_FAILURE() << "a full queue accepted a request";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ApiErrorKind::overloaded);
    EXPECT_EQ(e.http_status(), 429);
  }
  a->cancel();
  drain(*a);
  EXPECT_EQ(a->result().finish, FinishReason::kCancelled);
  EXPECT_LT(a->result().ids.size(), 200u);
  drain(*b);
  EXPECT_EQ(b->result().ids.size(), 3u);
  EXPECT_EQ(b->result().ids, alone(prompt, q, 256).ids);
  EXPECT_EQ(metrics.requests_cancelled.load(), 1u);
}

TEST_F(BatchSchedulerTest, RefusesWhatCannotRun) {
  SchedulerOptions so;
  so.parallel = 2;
  so.ctx_per_seq = 32;
  BatchScheduler s(*model_, *tok_, so);
  GenerationParams p;
  p.sampling.temperature = 0.0;
  p.max_new_tokens = 30;
  const auto prompt = tok_->encode("<｜begin▁of▁sentence｜>one two three four five");
  auto expect_error = [&](std::vector<std::int32_t> pr, const GenerationParams& gp, ApiErrorKind kind) {
    try {
      s.submit(std::make_shared<Job>(std::move(pr), gp));
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
    }
  };
  expect_error(prompt, p, ApiErrorKind::context_overflow);  // prompt + 30 > 32
  p.max_new_tokens = 4;
  expect_error({}, p, ApiErrorKind::invalid_request);
  expect_error({1, -5}, p, ApiErrorKind::invalid_request);
  expect_error({1, 1 << 30}, p, ApiErrorKind::invalid_request);
  GenerationParams bad = p;
  bad.sampling.top_p = 1.5;
  expect_error(prompt, bad, ApiErrorKind::invalid_request);
  bad = p;
  bad.stop_strings = {""};
  expect_error(prompt, bad, ApiErrorKind::invalid_request);
  // A request that fits exactly runs to its limit.
  p.max_new_tokens = 32 - prompt.size() + 1;
  auto j = std::make_shared<Job>(prompt, p);
  s.submit(j);
  drain(*j);
  EXPECT_EQ(j->result().ids.size(), p.max_new_tokens);
}

}  // namespace
}  // namespace dsv4::serve
