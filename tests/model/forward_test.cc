// The forward pass's invariants on the tiny preset, in both numerics modes, bit for bit:
// prefill ≡ token-by-token decode ≡ chunked prefill (chunk sizes that split compressor groups
// and window boundaries); a sequence alone ≡ the same sequence inside a batch with another one
// at another position; 1 thread ≡ 2 threads; a reset sequence ≡ a fresh one. Plus the errors a
// caller can make. (Bit-exactness against the independent oracle is tests/oracle/test_engine.py.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>

#include "../common/test_env.h"
#include "../common/tiny_fixture.h"
#include "io/fixture.h"
#include "model/engram.h"
#include "model/model.h"
#include "model/numpy_pcg64.h"
#include "text/engram_token_map.h"
#include "util/error.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;

class ForwardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::write_tiny_fixture("dsv4_forward_test", 1, "tokenizer.json");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::unique_ptr<Model> load(kernels::Numerics n, std::size_t threads = 1) {
    ModelOptions o;
    o.forward.numerics = n;
    o.threads = threads;
    return Model::load(dir_, o);
  }
  // Token ids of a plain English text (any ids the tokenizer defines would do).
  static std::vector<std::int64_t> ids(std::size_t n, std::int64_t salt = 0) {
    std::vector<std::int64_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int64_t>((i * 7919 + 13 + salt * 104729) % 120000);
    v[0] = 0;
    return v;
  }
  static std::vector<float> feed(Model& m, const std::vector<std::int64_t>& t, std::size_t chunk) {
    auto seq = m.new_sequence(t.size());
    std::vector<float> all;
    for (std::size_t s = 0; s < t.size(); s += chunk) {
      const std::size_t n = std::min(chunk, t.size() - s);
      auto lg = m.forward(*seq, std::span<const std::int64_t>(t.data() + s, n));
      all.insert(all.end(), lg.begin(), lg.end());
    }
    return all;
  }
  static bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  }
  static std::string dir_;
};
std::string ForwardTest::dir_;

TEST_F(ForwardTest, PrefillDecodeAndChunksAgreeInBothModes) {
  const auto t = ids(44);
  for (auto mode : {kernels::Numerics::kStrict, kernels::Numerics::kFast}) {
    auto m = load(mode);
    const auto want = feed(*m, t, t.size());
    ASSERT_EQ(want.size(), t.size() * 129280u);
    for (std::size_t chunk : {1u, 3u, 5u, 31u, 32u, 33u}) {
      SCOPED_TRACE(::testing::Message() << "numerics " << numerics_name(mode) << ", chunk " << chunk);
      EXPECT_TRUE(same_bits(feed(*m, t, chunk), want));
    }
  }
}

TEST_F(ForwardTest, BatchOfSequencesAtDifferentPositionsEqualsEachAlone) {
  for (auto mode : {kernels::Numerics::kStrict, kernels::Numerics::kFast}) {
    SCOPED_TRACE(numerics_name(mode));
    auto m = load(mode);
    const auto a = ids(40, 1), b = ids(12, 2);
    const auto want_a = feed(*m, a, a.size());
    const auto want_b = feed(*m, b, b.size());
    // A: 25 tokens alone, then its last 15 in one batch with B's first 12 (B at position 0).
    auto sa = m->new_sequence(a.size()), sb = m->new_sequence(b.size());
    auto first = m->forward(*sa, std::span<const std::int64_t>(a.data(), 25));
    const BatchItem items[2] = {{sa.get(), std::span<const std::int64_t>(a.data() + 25, 15)},
                                {sb.get(), std::span<const std::int64_t>(b)}};
    auto out = m->forward_batch(items);
    first.insert(first.end(), out[0].begin(), out[0].end());
    EXPECT_TRUE(same_bits(first, want_a));
    EXPECT_TRUE(same_bits(out[1], want_b));
  }
}

TEST_F(ForwardTest, LastRowLogitsEqualThatRowOfEveryRowLogits) {
  const std::size_t V = 129280;
  for (auto mode : {kernels::Numerics::kStrict, kernels::Numerics::kFast}) {
    SCOPED_TRACE(numerics_name(mode));
    auto m = load(mode);
    const auto a = ids(20, 4), b = ids(9, 5);
    const auto want_a = feed(*m, a, a.size());
    const auto want_b = feed(*m, b, b.size());
    const std::vector<float> last_a(want_a.end() - static_cast<std::ptrdiff_t>(V), want_a.end());
    auto sa = m->new_sequence(a.size());
    EXPECT_TRUE(same_bits(m->forward_last(*sa, a), last_a));
    // Mixed in one batch: A wants its last row only, B every row.
    auto sa2 = m->new_sequence(a.size()), sb = m->new_sequence(b.size());
    const BatchItem items[2] = {{sa2.get(), std::span<const std::int64_t>(a), LogitRows::kLast},
                                {sb.get(), std::span<const std::int64_t>(b), LogitRows::kAll}};
    auto out = m->forward_batch(items);
    EXPECT_TRUE(same_bits(out[0], last_a));
    EXPECT_TRUE(same_bits(out[1], want_b));
    EXPECT_EQ(static_cast<std::size_t>(sa2->pos()), a.size());
  }
}

TEST_F(ForwardTest, OneThreadEqualsTwoThreads) {
  const auto t = ids(24, 3);
  for (auto mode : {kernels::Numerics::kStrict, kernels::Numerics::kFast}) {
    SCOPED_TRACE(numerics_name(mode));
    auto m1 = load(mode, 1);
    auto m2 = load(mode, 2);
    EXPECT_EQ(m2->threads(), 2u);
    EXPECT_TRUE(same_bits(feed(*m1, t, 7), feed(*m2, t, 7)));
  }
}

TEST_F(ForwardTest, ResetSequenceEqualsFreshOne) {
  auto m = load(kernels::Numerics::kFast);
  const auto t = ids(20, 4), u = ids(20, 5);
  auto seq = m->new_sequence(20);
  m->forward(*seq, t);
  seq->reset();
  EXPECT_EQ(seq->pos(), 0);
  EXPECT_TRUE(same_bits(m->forward(*seq, u), feed(*m, u, 20)));
}

TEST_F(ForwardTest, DSparkDraftsAfterPrefillAndDecode) {
  auto m = load(kernels::Numerics::kFast);
  const auto t = ids(10, 6);
  auto seq = m->new_sequence(16);
  m->forward(*seq, t);
  EXPECT_TRUE(m->forward_spec(*seq, 5, 0).ids.empty());  // seeds the rings
  const std::int64_t next = 5;
  m->forward(*seq, std::span<const std::int64_t>(&next, 1));
  const SpecOutput o = m->forward_spec(*seq, 9, seq->pos() - 1);
  ASSERT_EQ(o.ids.size(), 6u);
  EXPECT_EQ(o.ids[0], 9);
  EXPECT_EQ(o.logits.size(), 5u * 129280u);
  EXPECT_EQ(o.confidence.size(), 5u);
  // forward_spec at start_pos > 0 takes exactly one main position.
  auto seq2 = m->new_sequence(16);
  m->forward(*seq2, t);
  EXPECT_THROW(m->forward_spec(*seq2, 9, 9), Error);
}

TEST_F(ForwardTest, ClearErrors) {
  auto m = load(kernels::Numerics::kFast);
  auto seq = m->new_sequence(8);
  const std::vector<std::int64_t> bad = {0, 129280};
  try {
    m->forward(*seq, bad);
    FAIL() << "no error for an out-of-range id";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  EXPECT_EQ(seq->pos(), 0);  // nothing was processed
  // Ids beyond the tokenizer (128815 .. vocab) have no Engram compressed id (spec §16.6).
  const std::vector<std::int64_t> no_engram = {0, 129000};
  EXPECT_THROW(m->forward(*seq, no_engram), Error);
  const auto nine = ids(9);
  try {
    m->forward(*seq, nine);
    FAIL() << "no error for a context overflow";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context overflow"), std::string::npos) << e.what();
  }
  EXPECT_THROW(m->new_sequence(m->max_positions() + 1), Error);
  EXPECT_THROW(m->forward(*seq, {}), Error);
  // The reference slot lists exist only for a prefill at 0 and decode.
  ForwardOptions f;
  f.attn_slots = AttnSlots::kReference;
  m->set_options(f);
  auto s2 = m->new_sequence(8);
  const auto four = ids(4);
  m->forward(*s2, four);
  EXPECT_THROW(m->forward(*s2, std::span<const std::int64_t>(four.data(), 2)), Error);
}

TEST_F(ForwardTest, CheckpointFailingValidationIsRejected) {
  const std::string broken = dir_ + "_broken";
  fs::remove_all(broken);
  fs::copy(dir_, broken);
  // Drop one shard: its tensors go missing.
  for (const auto& e : fs::directory_iterator(broken))
    if (e.path().extension() == ".safetensors") {
      fs::remove(e.path());
      break;
    }
  EXPECT_THROW(Model::load(broken), Error);
  fs::remove_all(broken);
  EXPECT_THROW(Model::load(dir_ + "_missing"), Error);
}

TEST(EngramHash, MultipliersAreTheReleasedOnes) {
  // Spec §8.1, drawn here with numpy's generator reproduced (not pasted into the engine).
  ModelConfig c;
  EXPECT_EQ(engram_hash_multipliers(c, 1),
            (std::vector<std::int64_t>{76632096046245, 4839876093313, 35959672319349, 73987337458391}));
  EXPECT_EQ(engram_hash_multipliers(c, 14),
            (std::vector<std::int64_t>{67716810739261, 51510806800915, 30921347202721, 82619226485591}));
  EXPECT_THROW(NumpyPcg64(1).bounded(1000), Error);  // numpy's 32-bit path is not reproduced
}

}  // namespace
}  // namespace dsv4
