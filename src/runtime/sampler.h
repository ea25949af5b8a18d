#pragma once
// Choosing the next token from a position's logits.
//
// The pipeline, in this order (the order of Hugging Face transformers and vLLM, which is what
// OpenAI-style parameters mean: the nucleus is taken of the temperature-scaled distribution):
//   1. penalties over the recent history (repetition: logit / p if positive, · p if not, as
//      CTRL and llama.cpp; presence: − presence once a token occurred; frequency: − frequency ·
//      its count), on a copy of the logits;
//   2. temperature ≤ 0 → greedy: the largest penalized logit (ties: the lowest id). Otherwise
//      logits / temperature;
//   3. top-k: the k largest (ties: lower id first);
//   4. softmax over what is left (in double);
//   5. top-p: the shortest prefix of the candidates by probability (ties: lower id first) whose
//      probability sums to ≥ top_p; always at least one token;
//   6. min-p: drop candidates whose probability is below min_p · the largest;
//   7. renormalise and draw u ∈ [0, 1) from the sampler's own generator (std::mt19937_64, whose
//      output sequence the C++ standard fixes, with 53 bits per draw), walking the candidates in
//      the order of step 5.
// Everything is sequential arithmetic on the logits, so the same logits and seed give the same
// token on every machine and thread count; the forward pass makes the logits themselves
// thread-count invariant.
//
// Log-probabilities reported to callers (OpenAI `logprobs`) are those of the model's own
// distribution, log_softmax of the raw logits before penalties and temperature (vLLM's default),
// so they describe the model and not the sampling settings.
#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

namespace dsv4 {

struct SamplingParams {
  double temperature = 1.0;  // ≤ 0: greedy
  std::size_t top_k = 0;     // 0: off
  double top_p = 1.0;        // 1: off
  double min_p = 0.0;        // 0: off
  double repetition_penalty = 1.0;  // 1: off; > 1 discourages repeats
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  // The penalties see the last `penalty_last_n` tokens of the history (−1: all of it).
  std::int64_t penalty_last_n = -1;
  std::uint64_t seed = 0;
  // Throws dsv4::Error naming the first parameter out of range.
  void validate() const;
  bool greedy() const { return temperature <= 0.0 || top_k == 1; }
};

struct TokenLogprob {
  std::int32_t id = 0;
  double logprob = 0.0;
};

struct SampledToken {
  std::int32_t id = 0;
  double logprob = 0.0;              // of `id` under the raw distribution
  std::vector<TokenLogprob> top;     // the n most likely raw alternatives (ties: lower id)
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);

  // Picks a token from logits [vocab]; top_logprobs alternatives are reported when > 0.
  SampledToken sample(std::span<const float> logits, std::size_t top_logprobs = 0);
  // Records a token in the history the penalties see (prompt tokens too, if the caller wants
  // them penalised; the CLI and server feed only generated tokens, as OpenAI does).
  void accept(std::int32_t id);
  // Forgets the history and restarts the generator from the seed.
  void reset();

  const SamplingParams& params() const { return p_; }

  // The candidate distribution after steps 1–6 (ids in draw order and their renormalised
  // probabilities); what sample() draws from. Exposed for tests and tools.
  struct Candidates {
    std::vector<std::int32_t> ids;
    std::vector<double> probs;
  };
  Candidates candidates(std::span<const float> logits) const;

 private:
  void apply_penalties(std::vector<float>& logits) const;

  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::int32_t> history_;
};

// log_softmax of the logits in double; the n largest entries (ties: lower id first).
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, std::size_t n);
// The log-probability of one id under log_softmax(logits), in double.
double token_logprob(std::span<const float> logits, std::int32_t id);
// argmax with the lowest id on ties.
std::int32_t argmax(std::span<const float> logits);

}  // namespace dsv4
