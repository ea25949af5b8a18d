// The sampler's distributions, checked against independent computations written here: greedy and
// its tie rule, temperature → 0 equals greedy, top-k keeps exactly the k largest, top-p keeps
// exactly the nucleus (the shortest prefix reaching p, no shorter one does), min-p's cut, the
// renormalised probabilities equal softmax(l / T) restricted to the kept set, draws follow those
// probabilities (chi-square), a seed reproduces a run, and the penalties' arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "runtime/sampler.h"
#include "util/error.h"

namespace dsv4 {
namespace {

std::vector<float> random_logits(std::size_t n, std::uint32_t seed, float scale = 3.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// softmax(l / T) in long double, independent of the sampler's code.
std::vector<long double> softmax(const std::vector<float>& l, double T) {
  long double mx = -INFINITY;
  for (float x : l) mx = std::max<long double>(mx, x / static_cast<long double>(T));
  std::vector<long double> p(l.size());
  long double s = 0;
  for (std::size_t i = 0; i < l.size(); ++i) s += p[i] = std::exp(l[i] / static_cast<long double>(T) - mx);
  for (auto& x : p) x /= s;
  return p;
}

// Ids by probability, descending, lower id first on ties.
std::vector<std::int32_t> by_prob(const std::vector<long double>& p) {
  std::vector<std::int32_t> ids(p.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return p[a] > p[b]; });
  return ids;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  std::vector<float> l = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  SamplingParams p;
  p.temperature = 0.0;
  Sampler s(p);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.sample(l).id, 1);
  EXPECT_EQ(argmax(l), 1);
  p.temperature = 0.7;
  p.top_k = 1;  // top-k 1 is greedy too
  Sampler s1(p);
  EXPECT_EQ(s1.sample(l).id, 1);
}

TEST(Sampler, TemperatureTowardsZeroEqualsGreedy) {
  for (std::uint32_t seed = 0; seed < 50; ++seed) {
    const auto l = random_logits(1000, seed);
    SamplingParams p;
    p.temperature = 1e-4;
    p.seed = seed;
    Sampler s(p);
    EXPECT_EQ(s.sample(l).id, argmax(l)) << "seed " << seed;
  }
}

TEST(Sampler, TopKKeepsExactlyTheKLargestTiesByLowestId) {
  std::vector<float> l = {0.0f, 2.0f, 1.0f, 2.0f, 1.0f, 1.0f, -1.0f};
  SamplingParams p;
  p.top_k = 4;
  Sampler s(p);
  const auto c = s.candidates(l);
  EXPECT_EQ(c.ids, (std::vector<std::int32_t>{1, 3, 2, 4}));
  const auto big = random_logits(5000, 7);
  p.top_k = 37;
  const auto c2 = Sampler(p).candidates(big);
  ASSERT_EQ(c2.ids.size(), 37u);
  std::vector<float> sorted = big;
  std::sort(sorted.rbegin(), sorted.rend());
  for (auto id : c2.ids) EXPECT_GE(big[id], sorted[36]);
}

TEST(Sampler, TopPKeepsExactlyTheNucleus) {
  for (double top_p : {0.05, 0.3, 0.5, 0.9, 0.99}) {
    for (std::uint32_t seed = 0; seed < 20; ++seed) {
      const auto l = random_logits(3000, seed);
      SamplingParams p;
      p.temperature = 0.8;
      p.top_p = top_p;
      const auto c = Sampler(p).candidates(l);
      const auto q = softmax(l, 0.8);
      const auto order = by_prob(q);
      // The shortest prefix of the descending order whose mass reaches top_p.
      std::size_t n = 0;
      long double cum = 0;
      while (n < order.size()) {
        cum += q[order[n++]];
        if (cum >= top_p) break;
      }
      ASSERT_EQ(c.ids.size(), n) << "top_p " << top_p << " seed " << seed;
      EXPECT_TRUE(std::equal(c.ids.begin(), c.ids.end(), order.begin()));
      long double kept = 0;
      for (auto id : c.ids) kept += q[id];
      EXPECT_GE(kept, top_p - 1e-9);
      EXPECT_LT(kept - q[c.ids.back()], top_p + 1e-9);  // one fewer would not reach top_p
      // Renormalised softmax over the nucleus.
      for (std::size_t i = 0; i < c.ids.size(); ++i)
        EXPECT_NEAR(c.probs[i], static_cast<double>(q[c.ids[i]] / kept), 1e-12);
    }
  }
}

TEST(Sampler, MinPDropsExactlyTheTokensBelowTheFloor) {
  const auto l = random_logits(2000, 3, 2.0f);
  SamplingParams p;
  p.min_p = 0.1;
  const auto c = Sampler(p).candidates(l);
  const auto q = softmax(l, 1.0);
  const long double mx = *std::max_element(q.begin(), q.end());
  const std::set<std::int32_t> kept(c.ids.begin(), c.ids.end());
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (std::fabs(static_cast<double>(q[i] - 0.1L * mx)) < 1e-15) continue;  // on the floor: either way
    EXPECT_EQ(kept.count(static_cast<std::int32_t>(i)) == 1, q[i] >= 0.1L * mx) << i;
  }
  double sum = 0;
  for (double x : c.probs) sum += x;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(Sampler, DrawsFollowTheCandidateProbabilities) {
  const std::vector<float> l = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f};
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 12345;
  Sampler s(p);
  const auto q = softmax(l, 1.0);
  constexpr int kDraws = 40000;
  std::vector<int> n(l.size());
  for (int i = 0; i < kDraws; ++i) ++n[s.sample(l).id];
  double chi2 = 0;
  for (std::size_t i = 0; i < l.size(); ++i) {
    const double e = kDraws * static_cast<double>(q[i]);
    chi2 += (n[i] - e) * (n[i] - e) / e;
  }
  // 4 degrees of freedom: P(χ² > 18.47) = 0.001 for a correct sampler.
  EXPECT_LT(chi2, 18.47);
}

TEST(Sampler, ASeedReproducesARunAndAnotherSeedDoesNot) {
  const auto l = random_logits(500, 1, 1.0f);
  auto run = [&](std::uint64_t seed) {
    SamplingParams p;
    p.seed = seed;
    p.top_p = 0.95;
    Sampler s(p);
    std::vector<std::int32_t> out;
    for (int i = 0; i < 200; ++i) {
      out.push_back(s.sample(l).id);
      s.accept(out.back());
    }
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
  SamplingParams p;
  p.seed = 42;
  p.top_p = 0.95;
  Sampler s(p);
  const auto first = s.sample(l).id;
  s.reset();
  EXPECT_EQ(s.sample(l).id, first);
}

TEST(Sampler, PenaltiesFollowTheirDefinitions) {
  // Greedy after penalties shows the penalised logits' order.
  std::vector<float> l = {4.0f, 3.0f, -1.0f, -1.5f};
  SamplingParams p;
  p.temperature = 0.0;
  p.repetition_penalty = 2.0;  // 4 → 2 (divided, positive), −1 → −2 (multiplied, negative)
  Sampler s(p);
  s.accept(0);
  EXPECT_EQ(s.sample(l).id, 1);
  s.accept(1);  // 3 → 1.5: now 0 (2.0) wins again
  EXPECT_EQ(s.sample(l).id, 0);

  SamplingParams q;
  q.temperature = 0.0;
  q.frequency_penalty = 0.6;
  q.presence_penalty = 0.1;
  Sampler f(q);
  f.accept(0);
  f.accept(0);  // 4 − 0.1 − 1.2 = 2.7 < 3
  EXPECT_EQ(f.sample(l).id, 1);
  q.penalty_last_n = 1;  // only the last token counts: 4 − 0.1 − 0.6 = 3.3 > 3
  Sampler g(q);
  g.accept(0);
  g.accept(2);
  g.accept(0);
  EXPECT_EQ(g.sample(l).id, 0);
}

TEST(Sampler, LogprobsAreTheRawDistributions) {
  const auto l = random_logits(1000, 9);
  SamplingParams p;
  p.temperature = 0.5;  // sampling settings do not change reported log-probabilities
  p.top_k = 3;
  Sampler s(p);
  const auto t = s.sample(l, 5);
  const auto q = softmax(l, 1.0);
  EXPECT_NEAR(t.logprob, std::log(static_cast<double>(q[t.id])), 1e-9);
  ASSERT_EQ(t.top.size(), 5u);
  const auto order = by_prob(q);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(t.top[i].id, order[i]);
    EXPECT_NEAR(t.top[i].logprob, std::log(static_cast<double>(q[order[i]])), 1e-9);
  }
  const std::vector<float> tie = {1.0f, 5.0f, 5.0f, 0.0f};
  const auto tt = top_logprobs(tie, 3);
  EXPECT_EQ(tt[0].id, 1);
  EXPECT_EQ(tt[1].id, 2);
  EXPECT_EQ(tt[2].id, 0);
}

TEST(Sampler, NegativeInfinityIsNeverDrawn) {
  std::vector<float> l(10, -INFINITY);
  l[7] = 0.0f;
  l[3] = 0.0f;
  SamplingParams p;
  p.seed = 5;
  Sampler s(p);
  for (int i = 0; i < 200; ++i) {
    const auto id = s.sample(l).id;
    EXPECT_TRUE(id == 3 || id == 7);
  }
}

TEST(Sampler, InvalidParametersAreRejectedByName) {
  auto bad = [](auto set, const char* name) {
    SamplingParams p;
    set(p);
    try {
      Sampler s(p);
      ADD_FAILURE() << name << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  bad([](SamplingParams& p) { p.top_p = 0.0; }, "top_p");
  bad([](SamplingParams& p) { p.top_p = 1.5; }, "top_p");
  bad([](SamplingParams& p) { p.min_p = -0.1; }, "min_p");
  bad([](SamplingParams& p) { p.repetition_penalty = 0.0; }, "repetition_penalty");
  bad([](SamplingParams& p) { p.temperature = NAN; }, "temperature");
  bad([](SamplingParams& p) { p.penalty_last_n = -2; }, "penalty_last_n");
}

}  // namespace
}  // namespace dsv4
