#include "runtime/generator.h"

#include <algorithm>
#include <chrono>

#include "text/stream_detokenizer.h"
#include "util/error.h"

namespace dsv4 {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kLength: return "length";
    case FinishReason::kStopToken: return "stop";
    case FinishReason::kStopString: return "stop";
    case FinishReason::kContext: return "length";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "?";
}

Generator::Generator(Model& model, const Tokenizer& tokenizer) : model_(model), tok_(tokenizer) {}

GenerationResult Generator::generate(SequenceState& seq, std::span<const std::int32_t> prompt,
                                     const GenerationParams& p, const GenerationCallbacks& cb,
                                     const std::atomic<bool>* cancel) {
  if (prompt.empty()) fail("generation needs at least one prompt token");
  const std::size_t free = seq.max_len() - static_cast<std::size_t>(seq.pos());
  if (prompt.size() > free)
    fail("the prompt has {} tokens but the context has room for {} more (context {} tokens, {} in use); "
         "raise the context (-c) or shorten the prompt",
         prompt.size(), free, seq.max_len(), seq.pos());
  const auto V = static_cast<std::size_t>(model_.config().vocab_size);
  for (std::size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || static_cast<std::size_t>(prompt[i]) >= V)
      fail("prompt token {} (id {}) is outside the model's vocabulary 0..{}", i, prompt[i], V - 1);
  Sampler sampler(p.sampling);
  StreamOptions so;
  so.stop_strings = p.stop_strings;
  StreamDetokenizer detok(tok_, so);
  auto cancelled = [&] { return cancel != nullptr && cancel->load(std::memory_order_relaxed); };

  GenerationResult r;
  r.timings.prompt_tokens = prompt.size();
  const auto t0 = Clock::now();
  std::vector<std::int64_t> ids64;
  std::vector<float> last;  // the logits of the last fed position
  const std::size_t step = p.prefill_chunk == 0 ? prompt.size() : p.prefill_chunk;
  for (std::size_t s = 0; s < prompt.size(); s += step) {
    if (cancelled()) {
      r.finish = FinishReason::kCancelled;
      r.timings.prefill_s = since(t0);
      return r;
    }
    const std::size_t n = std::min(step, prompt.size() - s);
    ids64.assign(prompt.begin() + static_cast<std::ptrdiff_t>(s), prompt.begin() + static_cast<std::ptrdiff_t>(s + n));
    last = model_.forward_last(seq, ids64);
    r.prompt_fed = s + n;
    if (cb.on_prefill) cb.on_prefill(r.prompt_fed, prompt.size());
  }
  r.timings.prefill_s = since(t0);
  if (p.max_new_tokens == 0) return r;  // prefill only (the last logits are discarded)

  Clock::time_point t1{};
  auto finish_text = [&] {
    const StreamChunk tail = detok.finish();
    r.text += tail.text;
    if (tail.stopped) {
      r.finish = FinishReason::kStopString;
      r.stop_index = tail.stop_index;
    }
    return tail.text;
  };
  while (true) {
    SampledToken t = sampler.sample(last, p.top_logprobs);
    if (r.ids.empty()) {
      t1 = Clock::now();
      r.timings.ttft_s = std::chrono::duration<double>(t1 - t0).count();
    }
    sampler.accept(t.id);
    r.ids.push_back(t.id);
    r.tokens.push_back(t);
    r.has_pending = true;
    std::string released;
    bool done = false;
    if (std::find(p.stop_tokens.begin(), p.stop_tokens.end(), t.id) != p.stop_tokens.end()) {
      r.finish = FinishReason::kStopToken;
      released = finish_text();
      done = true;
    } else {
      const StreamChunk c = detok.push(t.id);
      released = c.text;
      r.text += c.text;
      if (c.stopped) {
        r.finish = FinishReason::kStopString;
        r.stop_index = c.stop_index;
        done = true;
      }
    }
    if (!done && r.ids.size() >= p.max_new_tokens) {
      r.finish = FinishReason::kLength;
      released += finish_text();
      done = true;
    }
    if (!done && static_cast<std::size_t>(seq.pos()) >= seq.max_len()) {
      r.finish = FinishReason::kContext;
      released += finish_text();
      done = true;
    }
    if (!done && cancelled()) {
      r.finish = FinishReason::kCancelled;
      released += finish_text();
      done = true;
    }
    if (cb.on_token) cb.on_token(t, released);
    if (done) break;
    if (cancelled()) {  // set during the callback: stop before spending another forward step
      r.finish = FinishReason::kCancelled;
      const std::string tail = finish_text();
      if (cb.on_text && !tail.empty()) cb.on_text(tail);
      break;
    }
    const std::int64_t id = t.id;
    // The step writes into `last` (the model allocates nothing in steady state; see model.h).
    const BatchItem item{&seq, std::span<const std::int64_t>(&id, 1)};
    model_.forward_batch_into({&item, 1}, last);
    r.has_pending = false;
  }
  r.timings.generated_tokens = r.ids.size();
  r.timings.decode_s = since(t1);
  return r;
}

}  // namespace dsv4
