#pragma once
// The sampling and stopping flags of run and chat, with llama.cpp's names and defaults.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/generator.h"

namespace dsv4::cli {

struct SamplingFlags {
  double temp = 0.8;
  std::size_t top_k = 40;
  double top_p = 0.95;
  double min_p = 0.05;
  double repeat_penalty = 1.0;
  std::int64_t repeat_last_n = 64;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  std::int64_t seed = -1;  // −1: a random seed, reported so the run can be repeated
  std::int64_t n_predict = 256;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  std::size_t logprobs = 0;
};

void add_sampling_flags(CLI::App* sub, SamplingFlags& f);
// The generation parameters the flags describe; `eos` (if any) becomes a stop token unless
// --ignore-eos. Resolves seed −1 to a fresh random seed.
GenerationParams generation_params(SamplingFlags& f, std::optional<std::int32_t> eos);

}  // namespace dsv4::cli
