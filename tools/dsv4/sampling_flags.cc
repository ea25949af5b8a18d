#include "sampling_flags.h"

#include <random>

#include "util/error.h"

namespace dsv4::cli {

void add_sampling_flags(CLI::App* sub, SamplingFlags& f) {
  sub->add_option("-n,--n-predict", f.n_predict, "tokens to generate at most");
  sub->add_option("--temp", f.temp, "temperature; 0 = greedy");
  sub->add_option("--top-k", f.top_k, "keep the k most likely tokens; 0 = off");
  sub->add_option("--top-p", f.top_p, "nucleus: keep the most likely tokens up to this probability; 1 = off");
  sub->add_option("--min-p", f.min_p, "drop tokens below min-p × the most likely one's probability; 0 = off");
  sub->add_option("--repeat-penalty", f.repeat_penalty, "penalise repeated tokens (1 = off)");
  sub->add_option("--repeat-last-n", f.repeat_last_n, "tokens the penalties look back on (-1 = all generated)");
  sub->add_option("--presence-penalty", f.presence_penalty, "subtracted from tokens already generated");
  sub->add_option("--frequency-penalty", f.frequency_penalty, "subtracted per occurrence");
  sub->add_option("-s,--seed", f.seed, "random seed (-1: random, printed); a seed reproduces a run on any thread count");
  sub->add_option("--stop", f.stop, "stop string (repeatable); never printed, not even partly");
  sub->add_flag("--ignore-eos", f.ignore_eos, "do not stop at the end-of-sequence token");
  sub->add_option("--logprobs", f.logprobs, "with --json: log-probabilities and the N most likely alternatives per token");
}

GenerationParams generation_params(SamplingFlags& f, std::optional<std::int32_t> eos) {
  if (f.n_predict < 0) fail("-n {}: the number of tokens to generate must be ≥ 0", f.n_predict);
  if (f.seed < -1) fail("--seed {}: must be ≥ 0, or -1 for a random seed", f.seed);
  if (f.seed == -1) f.seed = static_cast<std::int64_t>(std::random_device{}() & 0x7fffffff);
  GenerationParams p;
  p.sampling.temperature = f.temp;
  p.sampling.top_k = f.top_k;
  p.sampling.top_p = f.top_p;
  p.sampling.min_p = f.min_p;
  p.sampling.repetition_penalty = f.repeat_penalty;
  p.sampling.penalty_last_n = f.repeat_last_n;
  p.sampling.presence_penalty = f.presence_penalty;
  p.sampling.frequency_penalty = f.frequency_penalty;
  p.sampling.seed = static_cast<std::uint64_t>(f.seed);
  p.sampling.validate();
  p.max_new_tokens = static_cast<std::size_t>(f.n_predict);
  p.stop_strings = f.stop;
  for (const auto& s : f.stop)
    if (s.empty()) fail("--stop: a stop string must not be empty");
  if (eos && !f.ignore_eos) p.stop_tokens.push_back(*eos);
  p.top_logprobs = f.logprobs;
  return p;
}

}  // namespace dsv4::cli
