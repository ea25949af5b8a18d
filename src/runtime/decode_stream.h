#pragma once
// What happens to one sequence's logits after a forward step: sample a token, detokenize it,
// and decide whether generation ends (stop token, stop string, token limit, context end,
// cancellation). The Generator (one sequence, its own forward calls) and the server's batch
// scheduler (many sequences sharing each forward call) both drive it, so a request gets the same
// tokens, text and finish reason whichever of them runs it.
//
// Text: special tokens are detokenized as their text (an output parser needs "</think>" and DSML
// markup); a stop token ends generation without adding text; stop strings are held back until
// they complete (then neither they nor anything after them is released) or can no longer
// complete.
#include <cstdint>
#include <span>
#include <string>

#include "runtime/generator.h"
#include "text/stream_detokenizer.h"

namespace dsv4 {

class DecodeStream {
 public:
  // Validates the sampling parameters and stop strings (dsv4::Error). `tokenizer` and `p` must
  // outlive the stream.
  DecodeStream(const Tokenizer& tokenizer, const GenerationParams& p);

  struct Step {
    const SampledToken* token = nullptr;  // the token sampled (owned by result())
    std::string released;                 // text this step released (may be empty)
    bool done = false;                    // generation ended: result().finish says why
  };
  // Samples from the logits of the sequence's last fed position. `context_full`: the sequence
  // has no room to feed the token (generation must end with it); `cancelled`: end after it.
  Step step(std::span<const float> logits, bool context_full, bool cancelled);
  // Ends a stream that has not finished by itself (a cancellation between steps): releases the
  // held text, which may complete a stop string.
  std::string cancel();

  const GenerationResult& result() const { return r_; }
  GenerationResult& result() { return r_; }
  bool done() const { return done_; }

 private:
  std::string finish_text();

  const GenerationParams& p_;
  Sampler sampler_;
  StreamDetokenizer detok_;
  GenerationResult r_;
  bool done_ = false;
};

}  // namespace dsv4
