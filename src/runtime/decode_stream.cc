#include "runtime/decode_stream.h"

#include <algorithm>

namespace dsv4 {
namespace {
StreamOptions stream_options(const GenerationParams& p) {
  StreamOptions so;
  so.stop_strings = p.stop_strings;
  return so;
}
}  // namespace

DecodeStream::DecodeStream(const Tokenizer& tokenizer, const GenerationParams& p)
    : p_(p), sampler_(p.sampling), detok_(tokenizer, stream_options(p)) {}

std::string DecodeStream::finish_text() {
  const StreamChunk tail = detok_.finish();
  r_.text += tail.text;
  if (tail.stopped) {
    r_.finish = FinishReason::kStopString;
    r_.stop_index = tail.stop_index;
  }
  return tail.text;
}

DecodeStream::Step DecodeStream::step(std::span<const float> logits, bool context_full, bool cancelled) {
  Step s;
  SampledToken t = sampler_.sample(logits, p_.top_logprobs);
  sampler_.accept(t.id);
  r_.ids.push_back(t.id);
  r_.tokens.push_back(std::move(t));
  r_.has_pending = true;
  const std::int32_t id = r_.ids.back();
  s.token = &r_.tokens.back();
  // The checks run in this order: a stop token or string wins over the limits, which win over
  // a cancellation (so a request that completes on its last allowed token says so).
  if (std::find(p_.stop_tokens.begin(), p_.stop_tokens.end(), id) != p_.stop_tokens.end()) {
    r_.finish = FinishReason::kStopToken;
    s.released = finish_text();
    s.done = true;
  } else {
    const StreamChunk c = detok_.push(id);
    s.released = c.text;
    r_.text += c.text;
    if (c.stopped) {
      r_.finish = FinishReason::kStopString;
      r_.stop_index = c.stop_index;
      s.done = true;
    }
  }
  auto end_with = [&](FinishReason why) {
    r_.finish = why;
    s.released += finish_text();  // the held tail may itself complete a stop string
    s.done = true;
  };
  if (!s.done && r_.ids.size() >= p_.max_new_tokens) end_with(FinishReason::kLength);
  if (!s.done && context_full) end_with(FinishReason::kContext);
  if (!s.done && cancelled) end_with(FinishReason::kCancelled);
  done_ = s.done;
  return s;
}

std::string DecodeStream::cancel() {
  if (done_) return {};
  done_ = true;
  r_.finish = FinishReason::kCancelled;
  return finish_text();
}

}  // namespace dsv4
