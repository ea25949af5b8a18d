#pragma once
// Continuous batching: the one thread that runs the model for every request.
//
// Each forward step batches every running sequence: the decoding ones feed their pending token,
// and prompts are prefilled in chunks (at most `prefill_chunk` prompt tokens per step, shared in
// arrival order), so running streams keep flowing while a long prompt is read. Requests join the
// batch between steps when a sequence slot is free, and leave it when they finish or are
// cancelled (the slot is free for the next step).
//
// Why outputs do not depend on the company a request keeps: the forward pass gives every item
// of a batch the same logits bits it would get alone, whatever the chunking of its prompt (the
// default numerics' prefill ≡ decode ≡ chunked and batch invariance, model.h), and each request
// samples with its own DecodeStream (its own sampler and seed). So a greedy or seeded request
// produces the same tokens alone or among others; tests/serve/batch_scheduler_test.cc checks it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/model.h"
#include "runtime/decode_stream.h"
#include "serve/metrics.h"
#include "text/tokenizer.h"

namespace dsv4::serve {

struct SchedulerOptions {
  std::size_t parallel = 4;         // sequences in the running batch at most
  std::size_t ctx_per_seq = 4096;   // positions each sequence holds (prompt + generated)
  std::size_t max_queue = 64;       // requests waiting for a slot; one more is refused
  std::size_t prefill_chunk = 256;  // prompt tokens per step, all prefilling sequences together
};

// What a job reports, in order: prefill progress, then one token event per sampled token, then
// exactly one done event.
struct JobEvent {
  enum class Kind { prefill, token, done };
  Kind kind = Kind::token;
  std::size_t prefill_done = 0, prefill_total = 0;  // prefill
  SampledToken token;                               // token
  std::string text;                                 // token / done: text released
  std::string error;                                // done: an engine error ("" if none)
};

// One request inside the scheduler. The HTTP thread owns it through a shared_ptr, waits for its
// events, and may cancel it at any time.
class Job {
 public:
  Job(std::vector<std::int32_t> prompt, GenerationParams params);

  // Asks the scheduler to end the job before its next step (a client went away).
  void cancel() { cancel_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancel_.load(std::memory_order_relaxed); }
  // Moves the pending events into `out`; waits up to `timeout` for one if there is none.
  // Returns false if none arrived in time.
  bool wait(std::vector<JobEvent>& out, std::chrono::milliseconds timeout);
  // After the done event: the whole result (ids, tokens with logprobs, text, finish reason).
  const GenerationResult& result() const { return result_; }
  const std::vector<std::int32_t>& prompt() const { return prompt_; }
  const GenerationParams& params() const { return params_; }

 private:
  friend class BatchScheduler;
  void push(JobEvent e);

  std::vector<std::int32_t> prompt_;
  GenerationParams params_;
  std::atomic<bool> cancel_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobEvent> events_;
  GenerationResult result_;  // written by the scheduler before the done event
  std::chrono::steady_clock::time_point queued_at_ = std::chrono::steady_clock::now();
};

class BatchScheduler {
 public:
  // `model` and `tokenizer` must outlive the scheduler; `metrics` may be null.
  BatchScheduler(Model& model, const Tokenizer& tokenizer, SchedulerOptions opts, Metrics* metrics = nullptr);
  ~BatchScheduler();  // ends the worker; jobs still queued or running get a done event (cancelled)
  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  // Queues a job. Throws ApiError: overloaded when max_queue jobs already wait; context_overflow
  // when the prompt plus max_new_tokens cannot fit ctx_per_seq; invalid_request for an empty
  // prompt, a token outside the vocabulary or bad sampling parameters.
  void submit(const std::shared_ptr<Job>& job);

  // Ends every queued and running job before the next step (they finish as cancelled, with the
  // text they have), and refuses new ones: the server's shutdown.
  void cancel_all();

  const SchedulerOptions& options() const { return opts_; }
  std::size_t queued() const;
  std::size_t running() const;

 private:
  struct Active {
    std::shared_ptr<Job> job;
    std::size_t slot = 0;
    std::unique_ptr<DecodeStream> stream;
    std::size_t fed = 0;          // prompt tokens fed so far
    std::int64_t pending = -1;    // the sampled token still to feed
    std::chrono::steady_clock::time_point last_token{};
  };
  void loop();
  void admit();
  void step();
  void finish(Active& a, const std::string& tail, const std::string& error = {});
  void publish_running();

  Model& model_;
  const Tokenizer& tok_;
  SchedulerOptions opts_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  std::atomic<bool> cancel_all_{false};
  // Worker-thread state.
  std::vector<std::unique_ptr<SequenceState>> slots_;
  std::vector<bool> slot_busy_;
  std::vector<Active> active_;  // in admission order
  std::atomic<std::size_t> running_{0};
  // One step's batch: which active sequence each item is, and where its ids lie in ids_.
  struct Part {
    std::size_t active;
    std::size_t offset, count;
    bool prefill;
  };
  std::vector<Part> parts_;
  std::vector<BatchItem> items_;
  std::vector<std::int64_t> ids_;
  std::vector<float> logits_;
  std::thread worker_;
};

}  // namespace dsv4::serve
