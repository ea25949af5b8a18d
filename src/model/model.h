#pragma once
// The DeepSeek V4.1 text model (spec §4–§9): loads a model directory and runs the forward pass
// for a batch of sequences, each with its own state and position.
//
//   auto m = Model::load(dir, opts);
//   auto seq = m->new_sequence(max_len);
//   std::vector<float> logits = m->forward(*seq, ids);     // [S, vocab], every position
//
// Call patterns: any sequence of calls on a SequenceState, each continuing where the previous
// ended (start_pos = seq.pos()): a prefill, token-by-token decode, or chunks of any size. With the
// default switches (own index keys, compact slot lists) every position's logits are the same
// bits whichever way the tokens were fed, and whichever other sequences share the batch, and
// whatever the thread count.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/rope.h"
#include "model/engram.h"
#include "model/forward_context.h"
#include "model/layer_weights.h"
#include "model/model_weights.h"
#include "model/sequence_state.h"
#include "text/engram_token_map.h"
#include "util/function_ref.h"
#include "util/thread_pool.h"

namespace dsv4 {

struct ModelOptions {
  ForwardOptions forward;
  std::size_t threads = 1;        // 0: all hardware threads
  std::size_t max_positions = 0;  // RoPE table length; 0: the config's max_seq_len
  // Loading stages as they happen: ("checkpoint", 0, 1) … ("layers", i, n) … ("engram map", 1, 1).
  std::function<void(std::string_view stage, std::size_t done, std::size_t total)> progress;
};

// Which positions of a call get logits. Generation only samples after the last position, and
// the head (vocab × dim) is the widest matrix: a 512-token prefill chunk that asks for every row
// spends more on the head than on all its layers.
enum class LogitRows { kAll, kLast };

// One sequence's part of a batched call.
struct BatchItem {
  SequenceState* seq = nullptr;
  std::span<const std::int64_t> ids;
  LogitRows logits = LogitRows::kAll;  // kLast: the item's logits are the last position's [V]
};

// What forward_spec returns at start_pos > 0 (spec §9.4).
struct SpecOutput {
  std::vector<std::int64_t> ids;  // anchor + block_size drafts
  std::vector<float> logits;      // [block_size, vocab] with the Markov bias
  std::vector<float> confidence;  // [block_size]
};

class Model {
 public:
  static std::unique_ptr<Model> load(const std::string& dir, const ModelOptions& opts = {});

  const ModelConfig& config() const { return weights_->config(); }
  const ModelWeights& weights() const { return *weights_; }
  const ForwardOptions& options() const { return opts_.forward; }
  void set_options(const ForwardOptions& o) { opts_.forward = o; }
  // Times every following call's operations into `p` (null: stop timing).
  void set_profile(OpProfile* p) { profile_ = p; }
  std::size_t threads() const { return pool_->threads(); }
  std::size_t max_positions() const { return max_positions_; }

  // A fresh sequence holding up to max_len positions (0: max_positions()).
  std::unique_ptr<SequenceState> new_sequence(std::size_t max_len = 0) const;

  // Feeds ids at the sequence's current position; returns the logits of every position [S, V].
  // dump (optional) receives named intermediates (see docs/forward-pass.md).
  std::vector<float> forward(SequenceState& seq, std::span<const std::int64_t> ids,
                             Dump* dump = nullptr);
  // The same call returning only the last position's logits [V] (the same bits as the last row
  // of forward's: the head reduces each row in a fixed order whatever rows share the call).
  std::vector<float> forward_last(SequenceState& seq, std::span<const std::int64_t> ids);
  // The same call, also measuring fast against strict numerics layer by layer on IDENTICAL
  // inputs: before each layer (Engram + block) runs in strict mode, the same layer runs in fast
  // mode on a copy of its input and of the sequence state; rel_err[L] = ‖X_fast − X_strict‖ /
  // ‖X_strict‖ of the layer's output residual stream. The call itself runs strict.
  std::vector<float> forward_compare_fast(SequenceState& seq, std::span<const std::int64_t> ids,
                                          std::vector<double>& rel_err);
  // A batch: each item continues its own sequence; returns each item's logits.
  std::vector<std::vector<float>> forward_batch(std::span<const BatchItem> items);
  // The same, writing the logits into `logits` (logit_rows(items) × vocab, item after item):
  // the decode loop's form. After a first call of the same shape it makes no heap allocation
  // (temporaries come from the threads' scratch arenas, util/scratch_arena.h).
  void forward_batch_into(std::span<const BatchItem> items, std::span<float> logits);
  // Rows of logits a call returns: S per item, or 1 for an item asking for the last row only.
  static std::size_t logit_rows(std::span<const BatchItem> items);

  // DSpark (spec §9): after a main call, input_id = the token just chosen, using the sequence's
  // captured hiddens (seq.main_hidden). At start_pos 0 it seeds the stages' rings and returns an
  // empty result; at start_pos > 0 (one main position) it drafts.
  SpecOutput forward_spec(SequenceState& seq, std::int64_t input_id, std::int64_t start_pos,
                          Dump* dump = nullptr);

 private:
  Model() = default;
  void check_call(const SequenceState& seq, std::span<const std::int64_t> ids) const;
  // The forward pass; logits (logit_rows(items) × vocab) receives the logits.
  void run(std::span<const BatchItem> items, Dump* dump, std::vector<double>* rel_err,
           std::span<float> logits);
  std::vector<std::vector<float>> run_split(std::span<const BatchItem> items, Dump* dump,
                                            std::vector<double>* rel_err = nullptr);
  // §5.4 on X [N, hc, dim] with the delayed pre-mix `pre` [N, hc] (replaced by this block's FFN
  // pre); attn(a_in, a_out) runs the attention sublayer on the N rows. X and X_alt are the
  // caller's two residual buffers: the post-mixes write the other one and swap the spans, so
  // on return X names the block's output (either buffer).
  using AttnFn = FunctionRef<void(std::span<const float>, std::span<float>)>;
  void block(const ForwardContext& ctx, const LayerWeights& w, std::size_t N, std::span<float>& X,
             std::span<float>& X_alt, std::span<float> pre, std::span<const std::uint8_t> image,
             AttnFn attn, std::string_view tag) const;
  // §4 steps 3 and 5: bf16 embedding rows copied to the hc copies, X [S, hc, dim].
  void embed(std::span<const std::int64_t> ids, std::span<float> X) const;

  std::unique_ptr<ModelWeights> weights_;
  ModelOptions opts_;
  std::size_t max_positions_ = 0;
  std::vector<std::unique_ptr<kernels::RopeTable>> ropes_;
  std::vector<LayerWeights> layers_;   // backbone
  std::vector<LayerWeights> stages_;   // DSpark
  std::unique_ptr<EngramTokenMap> engram_map_;
  std::unique_ptr<EngramHasher> hasher_;
  std::unique_ptr<ThreadPool> pool_;
  OpProfile* profile_ = nullptr;
  std::span<const BF16> final_norm_;  // norm.weight
  kernels::WeightRef head_;           // head.weight
};

}  // namespace dsv4
