#pragma once
// One sequence's generation loop: prefill the new prompt tokens in chunks, then sample, stream
// and feed tokens until a stop token, a stop string, the token limit, the context limit or a
// cancellation.
//
// State contract (what makes multi-turn chat cheap): generate() continues the sequence where it
// stands (seq.pos()), so a caller that keeps the SequenceState feeds only the new turn. When it
// returns, the sequence holds prompt[0 .. prompt_fed) and every generated token except the last:
// the last one was sampled but not yet run through the model (`pending` in the result), and a
// caller that continues the conversation feeds it first.
//
// Text: generated ids are detokenized incrementally (special tokens as their text, so that an
// output parser sees "</think>" and DSML markup); stop tokens end generation without adding
// text; stop strings are held back until they either complete (then they and anything after
// them are never released) or can no longer complete.
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"
#include "runtime/sampler.h"
#include "text/tokenizer.h"

namespace dsv4 {

enum class FinishReason { kLength, kStopToken, kStopString, kContext, kCancelled };
const char* finish_reason_name(FinishReason r);  // "length", "stop", "stop", "length", "cancelled"

struct GenerationParams {
  SamplingParams sampling;
  std::size_t max_new_tokens = 256;
  std::vector<std::string> stop_strings;
  std::vector<std::int32_t> stop_tokens;  // e.g. the tokenizer's EOS
  std::size_t top_logprobs = 0;           // alternatives reported per token
  std::size_t prefill_chunk = 256;        // prompt tokens per forward call (0: one call)
};

struct GenerationTimings {
  std::size_t prompt_tokens = 0;     // prefilled in this call
  std::size_t generated_tokens = 0;
  double prefill_s = 0;   // until the last prompt token's logits
  double ttft_s = 0;      // until the first token was sampled
  double decode_s = 0;    // from the first sampled token to the end
  double prefill_tokens_per_s() const { return prefill_s > 0 ? prompt_tokens / prefill_s : 0.0; }
  // Tokens after the first, each costing one forward step.
  double decode_tokens_per_s() const {
    return decode_s > 0 && generated_tokens > 1 ? (generated_tokens - 1) / decode_s : 0.0;
  }
};

struct GenerationResult {
  std::vector<std::int32_t> ids;         // every sampled token, a stop token included
  std::vector<SampledToken> tokens;      // the same with log-probabilities
  std::string text;                      // the released text (no stop token, no stop string)
  FinishReason finish = FinishReason::kLength;
  std::size_t stop_index = 0;            // which stop string, for kStopString
  std::size_t prompt_fed = 0;            // prompt tokens now in the sequence (all unless cancelled)
  bool has_pending = false;              // ids.back() has not been fed to the model
  GenerationTimings timings;
};

struct GenerationCallbacks {
  // After each prefill chunk: prompt tokens done, total.
  std::function<void(std::size_t, std::size_t)> on_prefill;
  // After each sampled token: the token and the text it released (may be empty).
  std::function<void(const SampledToken&, const std::string&)> on_token;
  // Text released at the end without a new token (the held tail after a cancellation seen
  // between steps). Streams join on_token's and on_text's text in call order.
  std::function<void(const std::string&)> on_text;
};

class Generator {
 public:
  // Both must outlive the generator.
  Generator(Model& model, const Tokenizer& tokenizer);

  // Feeds `prompt` (at least one token, unless the sequence already has a pending token passed
  // in it) and generates. Throws dsv4::Error for a prompt that does not fit the sequence's
  // context, an empty prompt, or invalid sampling parameters. `cancel` (optional) is polled
  // between forward calls.
  GenerationResult generate(SequenceState& seq, std::span<const std::int32_t> prompt, const GenerationParams& p,
                            const GenerationCallbacks& cb = {}, const std::atomic<bool>* cancel = nullptr);

 private:
  Model& model_;
  const Tokenizer& tok_;
};

}  // namespace dsv4
