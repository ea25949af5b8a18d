#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "util/error.h"

namespace dsv4 {
namespace {

// Orders ids by value, larger first, then lower id first: the tie rule of every cut here.
struct ByValueThenId {
  std::span<const float> v;
  bool operator()(std::int32_t a, std::int32_t b) const {
    const float x = v[static_cast<std::size_t>(a)], y = v[static_cast<std::size_t>(b)];
    if (x != y) return x > y;
    return a < b;
  }
};

double log_sum_exp(std::span<const float> logits) {
  float mx = -std::numeric_limits<float>::infinity();
  for (float x : logits) mx = std::max(mx, x);
  if (!std::isfinite(mx)) return mx;
  double s = 0.0;
  for (float x : logits) s += std::exp(static_cast<double>(x) - mx);
  return mx + std::log(s);
}

// A uniform double in [0, 1) from the top 53 bits of one 64-bit draw.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

void SamplingParams::validate() const {
  if (!std::isfinite(temperature)) fail("temperature must be a finite number, not {}", temperature);
  if (!(top_p > 0.0 && top_p <= 1.0)) fail("top_p must be in (0, 1], not {}", top_p);
  if (!(min_p >= 0.0 && min_p <= 1.0)) fail("min_p must be in [0, 1], not {}", min_p);
  if (!(repetition_penalty > 0.0) || !std::isfinite(repetition_penalty))
    fail("repetition_penalty must be a positive number, not {}", repetition_penalty);
  if (!std::isfinite(presence_penalty)) fail("presence_penalty must be finite, not {}", presence_penalty);
  if (!std::isfinite(frequency_penalty)) fail("frequency_penalty must be finite, not {}", frequency_penalty);
  if (penalty_last_n < -1) fail("penalty_last_n must be ≥ −1 (−1: the whole history), not {}", penalty_last_n);
}

std::int32_t argmax(std::span<const float> logits) {
  std::size_t best = 0;
  for (std::size_t v = 1; v < logits.size(); ++v)
    if (logits[v] > logits[best]) best = v;  // strict: the lowest id wins ties
  return static_cast<std::int32_t>(best);
}

double token_logprob(std::span<const float> logits, std::int32_t id) {
  return static_cast<double>(logits[static_cast<std::size_t>(id)]) - log_sum_exp(logits);
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, std::size_t n) {
  n = std::min(n, logits.size());
  std::vector<TokenLogprob> out;
  if (n == 0) return out;
  std::vector<std::int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), ByValueThenId{logits});
  const double lse = log_sum_exp(logits);
  for (std::size_t i = 0; i < n; ++i)
    out.push_back({ids[i], static_cast<double>(logits[static_cast<std::size_t>(ids[i])]) - lse});
  return out;
}

Sampler::Sampler(const SamplingParams& p) : p_(p), rng_(p.seed) { p_.validate(); }

void Sampler::accept(std::int32_t id) { history_.push_back(id); }

void Sampler::reset() {
  history_.clear();
  rng_.seed(p_.seed);
}

void Sampler::apply_penalties(std::vector<float>& logits) const {
  if (p_.repetition_penalty == 1.0 && p_.presence_penalty == 0.0 && p_.frequency_penalty == 0.0) return;
  std::size_t from = 0;
  if (p_.penalty_last_n >= 0 && history_.size() > static_cast<std::size_t>(p_.penalty_last_n))
    from = history_.size() - static_cast<std::size_t>(p_.penalty_last_n);
  // Counts in first-occurrence order, so the arithmetic is the same on every run.
  std::unordered_map<std::int32_t, std::size_t> count;
  std::vector<std::int32_t> order;
  for (std::size_t i = from; i < history_.size(); ++i) {
    const std::int32_t id = history_[i];
    if (id < 0 || static_cast<std::size_t>(id) >= logits.size()) continue;
    if (count[id]++ == 0) order.push_back(id);
  }
  for (std::int32_t id : order) {
    float& l = logits[static_cast<std::size_t>(id)];
    if (p_.repetition_penalty != 1.0)
      l = l > 0 ? static_cast<float>(l / p_.repetition_penalty) : static_cast<float>(l * p_.repetition_penalty);
    l = static_cast<float>(l - p_.presence_penalty - p_.frequency_penalty * static_cast<double>(count[id]));
  }
}

Sampler::Candidates Sampler::candidates(std::span<const float> raw) const {
  if (raw.empty()) fail("sampling needs a non-empty logits vector");
  std::vector<float> logits(raw.begin(), raw.end());
  apply_penalties(logits);
  Candidates c;
  if (p_.greedy()) {
    c.ids = {argmax(logits)};
    c.probs = {1.0};
    return c;
  }
  // Scaled logits in double: the division is the only rounding before the softmax.
  std::vector<std::int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const ByValueThenId order{logits};  // dividing by T > 0 keeps the order
  std::size_t keep = ids.size();
  if (p_.top_k > 0 && p_.top_k < keep) {
    keep = p_.top_k;
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end(), order);
    ids.resize(keep);
  } else {
    std::sort(ids.begin(), ids.end(), order);
  }
  const double inv_t = 1.0 / p_.temperature;
  const double mx = static_cast<double>(logits[static_cast<std::size_t>(ids[0])]) * inv_t;
  std::vector<double> prob(ids.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const float l = logits[static_cast<std::size_t>(ids[i])];
    prob[i] = std::isfinite(l) ? std::exp(static_cast<double>(l) * inv_t - mx) : 0.0;
    sum += prob[i];
  }
  if (!(sum > 0.0) || !std::isfinite(sum)) {  // every logit −inf or NaN: nothing to weigh
    c.ids = {ids[0]};
    c.probs = {1.0};
    return c;
  }
  for (double& q : prob) q /= sum;
  // top-p: the shortest prefix reaching top_p.
  std::size_t n = ids.size();
  if (p_.top_p < 1.0) {
    double cum = 0.0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      cum += prob[i];
      if (cum >= p_.top_p) {
        n = i + 1;
        break;
      }
    }
  }
  // min-p: relative to the most likely token (prob[0]); the prefix order makes it a cut too.
  if (p_.min_p > 0.0) {
    const double floor = p_.min_p * prob[0];
    std::size_t m = 1;
    while (m < n && prob[m] >= floor) ++m;
    n = m;
  }
  // Zero-probability tails (−inf logits) are never drawn.
  while (n > 1 && prob[n - 1] == 0.0) --n;
  double kept = 0.0;
  for (std::size_t i = 0; i < n; ++i) kept += prob[i];
  c.ids.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n));
  c.probs.resize(n);
  for (std::size_t i = 0; i < n; ++i) c.probs[i] = prob[i] / kept;
  return c;
}

SampledToken Sampler::sample(std::span<const float> logits, std::size_t n_top) {
  const Candidates c = candidates(logits);
  std::size_t pick = 0;
  if (c.ids.size() > 1) {
    const double u = uniform01(rng_);
    double cum = 0.0;
    pick = c.ids.size() - 1;  // rounding can leave the sum a hair under 1: the last one then
    for (std::size_t i = 0; i < c.ids.size(); ++i) {
      cum += c.probs[i];
      if (u < cum) {
        pick = i;
        break;
      }
    }
  } else if (!p_.greedy()) {
    (void)uniform01(rng_);  // one draw per sampled token whatever the cut: seeds stay aligned
  }
  SampledToken t;
  t.id = c.ids[pick];
  t.logprob = token_logprob(logits, t.id);
  if (n_top > 0) t.top = top_logprobs(logits, n_top);
  return t;
}

}  // namespace dsv4
