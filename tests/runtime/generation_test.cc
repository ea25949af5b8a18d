// The generation loop and the chat session on the tiny preset with the V4.1 tokenizer: stop
// tokens and stop strings end generation without leaking any of the stop (checked against the
// unstopped greedy text), the token and context limits, cancellation, seeded sampling identical
// on 1 and 2 threads, and chat state reuse: a second turn prefills only its new tokens and
// generates exactly what one fresh prefill of the whole history generates.
#include <gtest/gtest.h>

#include <filesystem>

#include "../common/test_env.h"
#include "../common/tiny_fixture.h"
#include "io/fixture.h"
#include "runtime/chat_session.h"
#include "runtime/generator.h"
#include "text/engram_token_map.h"
#include "util/error.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;

class GenerationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::write_tiny_fixture("dsv4_generation_test", 3, "tokenizer-v41.json", true);
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_model_dir(dir_));
    model_ = load(1);
  }
  static void TearDownTestSuite() {
    model_.reset();
    tok_.reset();
    fs::remove_all(dir_);
  }
  static std::unique_ptr<Model> load(std::size_t threads) {
    ModelOptions o;
    o.forward.numerics = kernels::Numerics::kFast;
    o.threads = threads;
    return Model::load(dir_, o);
  }
  static std::vector<std::int32_t> prompt() { return tok_->encode("<｜begin▁of▁sentence｜>The quick brown fox"); }
  static GenerationParams greedy(std::size_t n) {
    GenerationParams p;
    p.sampling.temperature = 0.0;
    p.max_new_tokens = n;
    return p;
  }
  static GenerationResult gen(Model& m, const std::vector<std::int32_t>& pr, const GenerationParams& p,
                              std::size_t ctx = 256, const GenerationCallbacks& cb = {},
                              const std::atomic<bool>* cancel = nullptr) {
    auto seq = m.new_sequence(ctx);
    Generator g(m, *tok_);
    return g.generate(*seq, pr, p, cb, cancel);
  }
  static std::string dir_;
  static std::unique_ptr<Tokenizer> tok_;
  static std::unique_ptr<Model> model_;
};
std::string GenerationTest::dir_;
std::unique_ptr<Tokenizer> GenerationTest::tok_;
std::unique_ptr<Model> GenerationTest::model_;

TEST_F(GenerationTest, GreedyTextIsTheDecodeOfTheIds) {
  const auto r = gen(*model_, prompt(), greedy(12));
  ASSERT_EQ(r.ids.size(), 12u);
  EXPECT_EQ(r.finish, FinishReason::kLength);
  EXPECT_EQ(r.text, tok_->decode(r.ids));
  EXPECT_EQ(r.timings.prompt_tokens, prompt().size());
  EXPECT_TRUE(r.has_pending);
}

TEST_F(GenerationTest, AStopTokenEndsGenerationAndAddsNoText) {
  const auto full = gen(*model_, prompt(), greedy(12));
  const std::size_t k = 6;
  const std::int32_t stop = full.ids[k];
  const std::size_t first = static_cast<std::size_t>(std::find(full.ids.begin(), full.ids.end(), stop) - full.ids.begin());
  GenerationParams p = greedy(12);
  p.stop_tokens = {stop};
  const auto r = gen(*model_, prompt(), p);
  EXPECT_EQ(r.finish, FinishReason::kStopToken);
  ASSERT_EQ(r.ids.size(), first + 1);
  EXPECT_TRUE(std::equal(r.ids.begin(), r.ids.end(), full.ids.begin()));
  EXPECT_EQ(r.text, tok_->decode(std::span<const std::int32_t>(full.ids.data(), first)));
}

TEST_F(GenerationTest, AStopStringIsNeverReleasedNotEvenPartly) {
  const auto full = gen(*model_, prompt(), greedy(16));
  const std::string& t = full.text;
  ASSERT_GT(t.size(), 12u);
  // Stop strings that start at several character boundaries, 2–6 bytes long, cut at boundaries.
  auto boundary = [&](std::size_t i) { return i >= t.size() || (static_cast<unsigned char>(t[i]) & 0xC0) != 0x80; };
  int tried = 0;
  for (std::size_t b = 1; b + 2 < t.size() && tried < 6; b += t.size() / 7 + 1) {
    while (b < t.size() && !boundary(b)) ++b;
    std::size_t e = b + 2;
    while (e < t.size() && (!boundary(e) || e - b < 2)) ++e;
    e = std::min(e + (tried % 3), t.size());
    while (!boundary(e)) ++e;
    const std::string stop = t.substr(b, e - b);
    if (stop.empty()) continue;
    ++tried;
    GenerationParams p = greedy(16);
    p.stop_strings = {stop};
    std::string streamed;
    GenerationCallbacks cb;
    cb.on_token = [&](const SampledToken&, const std::string& s) { streamed += s; };
    const auto r = gen(*model_, prompt(), p, 256, cb);
    const std::string want = t.substr(0, t.find(stop));
    EXPECT_EQ(r.finish, FinishReason::kStopString) << "stop '" << stop << "'";
    EXPECT_EQ(r.text, want) << "stop '" << stop << "'";
    EXPECT_EQ(streamed, want) << "stop '" << stop << "'";
  }
  EXPECT_GE(tried, 3);
}

TEST_F(GenerationTest, TokenAndContextLimits) {
  const auto pr = prompt();
  const auto r = gen(*model_, pr, greedy(100), pr.size() + 3);
  // Three generated tokens fit the context; the fourth is sampled and cannot be fed.
  EXPECT_EQ(r.finish, FinishReason::kContext);
  EXPECT_EQ(r.ids.size(), 4u);
  EXPECT_THROW(gen(*model_, pr, greedy(4), pr.size() - 1), Error);
  EXPECT_THROW(gen(*model_, {}, greedy(4)), Error);
  const auto none = gen(*model_, pr, greedy(0));
  EXPECT_TRUE(none.ids.empty());
  EXPECT_EQ(none.prompt_fed, pr.size());
}

TEST_F(GenerationTest, CancellationStopsBetweenSteps) {
  std::atomic<bool> cancel{false};
  GenerationCallbacks cb;
  std::size_t seen = 0;
  cb.on_token = [&](const SampledToken&, const std::string&) {
    if (++seen == 3) cancel.store(true);
  };
  const auto r = gen(*model_, prompt(), greedy(50), 256, cb, &cancel);
  EXPECT_EQ(r.finish, FinishReason::kCancelled);
  EXPECT_EQ(r.ids.size(), 3u);
  const auto before = gen(*model_, prompt(), greedy(3));
  EXPECT_EQ(r.ids, before.ids);
}

TEST_F(GenerationTest, SeededSamplingIsTheSameOnOneAndTwoThreads) {
  GenerationParams p;
  p.sampling.temperature = 1.0;
  p.sampling.top_p = 0.98;
  p.sampling.seed = 2024;
  p.max_new_tokens = 12;
  const auto one = gen(*model_, prompt(), p);
  auto m2 = load(2);
  const auto two = gen(*m2, prompt(), p);
  EXPECT_EQ(one.ids, two.ids);
  p.sampling.seed = 2025;
  EXPECT_NE(gen(*model_, prompt(), p).ids, one.ids);
}

TEST_F(GenerationTest, ChatSecondTurnPrefillsOnlyNewTokensAndEqualsAFullPrefill) {
  for (bool thinking : {true, false}) {
    SCOPED_TRACE(thinking ? "thinking" : "chat mode");
    ChatOptions o;
    o.thinking = thinking;
    ChatSession s(*model_, *tok_, o, 512);
    GenerationParams p = greedy(6);
    p.stop_tokens = {*tok_->eos_id()};
    const ChatTurn t1 = s.turn("Hello there", p);
    const std::vector<std::int32_t> before = s.history();
    p.sampling.temperature = 0.9;  // sampled, seeded: the fresh run must draw the same
    p.sampling.seed = 99;
    const ChatTurn t2 = s.turn("And then?", p);
    // Only the new turn is prefilled: the last reply token, the EOS closing it, the new user turn.
    const std::string cont = tok_->decode(t2.prefill_ids);
    EXPECT_NE(cont.find("<｜User｜>And then?<｜Assistant｜>"), std::string::npos) << cont;
    EXPECT_LE(t2.prefill_ids.size(), 12u);
    EXPECT_EQ(t2.generation.timings.prompt_tokens, t2.prefill_ids.size());
    // One fresh prefill of everything the cache holds before turn 2's generation.
    std::vector<std::int32_t> all = before;
    all.insert(all.end(), t2.prefill_ids.begin(), t2.prefill_ids.end());
    EXPECT_EQ(all.size(), t1.prefill_ids.size() + t1.generation.ids.size() - 1 + t2.prefill_ids.size());
    const auto fresh = gen(*model_, all, p, 512);
    EXPECT_EQ(fresh.ids, t2.generation.ids);
    EXPECT_EQ(s.messages().size(), 4u);
    EXPECT_EQ(s.cached_tokens(), s.history().size());
  }
}

TEST_F(GenerationTest, ChatTurnThatDoesNotFitIsRefusedAndLeavesTheSessionAlone) {
  ChatSession s(*model_, *tok_, ChatOptions{}, 80);
  const ChatTurn t = s.turn("Hi", greedy(4));
  const auto hist = s.history();
  EXPECT_THROW(s.turn(std::string(400, 'a'), greedy(4)), Error);
  EXPECT_EQ(s.history(), hist);
  EXPECT_EQ(s.messages().size(), 2u);
  (void)t;
}

TEST_F(GenerationTest, ChatTranscriptRoundTripsTheMessages) {
  ChatSession s(*model_, *tok_, ChatOptions{}, 256);
  s.set_system("Be brief.");
  s.turn("Hi", greedy(4));
  const auto tr = s.transcript();
  ASSERT_EQ(tr["messages"].size(), 3u);
  EXPECT_EQ(tr["messages"][0]["role"], "system");
  EXPECT_EQ(tr["history_ids"].size(), s.history().size());
  ChatSession t(*model_, *tok_, ChatOptions{}, 256);
  t.load(tr, "transcript");
  EXPECT_EQ(t.messages().size(), 3u);
  EXPECT_EQ(t.cached_tokens(), 0u);
  // The loaded conversation continues: the whole rendering is prefilled at the next turn.
  const ChatTurn n = t.turn("More", greedy(2));
  EXPECT_GT(n.prefill_ids.size(), 10u);
  EXPECT_EQ(tok_->decode(std::span<const std::int32_t>(n.prefill_ids.data(), 1)), "<｜begin▁of▁sentence｜>");
}

}  // namespace
}  // namespace dsv4
