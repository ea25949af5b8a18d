#include "runtime/generator.h"

#include <algorithm>
#include <chrono>

#include "runtime/decode_stream.h"
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
  DecodeStream stream(tok_, p);  // validates the sampling parameters and stop strings
  auto cancelled = [&] { return cancel != nullptr && cancel->load(std::memory_order_relaxed); };

  GenerationResult& r = stream.result();
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
  while (true) {
    const bool first = r.ids.empty();
    const DecodeStream::Step st =
        stream.step(last, static_cast<std::size_t>(seq.pos()) >= seq.max_len(), cancelled());
    if (first) {
      t1 = Clock::now();
      r.timings.ttft_s = std::chrono::duration<double>(t1 - t0).count();
    }
    if (cb.on_token) cb.on_token(*st.token, st.released);
    if (st.done) break;
    if (cancelled()) {  // set during the callback: stop before spending another forward step
      const std::string tail = stream.cancel();
      if (cb.on_text && !tail.empty()) cb.on_text(tail);
      break;
    }
    const std::int64_t id = r.ids.back();
    // The step writes into `last` (the model allocates nothing in steady state; see model.h).
    const BatchItem item{&seq, std::span<const std::int64_t>(&id, 1)};
    model_.forward_batch_into({&item, 1}, last);
    r.has_pending = false;
  }
  r.timings.generated_tokens = r.ids.size();
  r.timings.decode_s = since(t1);
  return std::move(r);
}

}  // namespace dsv4
