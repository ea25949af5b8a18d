#include "serve/batch_scheduler.h"

#include <algorithm>

#include "serve/api_error.h"
#include "util/error.h"

namespace dsv4::serve {
namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

Job::Job(std::vector<std::int32_t> prompt, GenerationParams params)
    : prompt_(std::move(prompt)), params_(std::move(params)) {}

void Job::push(JobEvent e) {
  {
    std::lock_guard lk(mu_);
    events_.push_back(std::move(e));
  }
  cv_.notify_all();
}

bool Job::wait(std::vector<JobEvent>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  if (!cv_.wait_for(lk, timeout, [&] { return !events_.empty(); })) return false;
  while (!events_.empty()) {
    out.push_back(std::move(events_.front()));
    events_.pop_front();
  }
  return true;
}

BatchScheduler::BatchScheduler(Model& model, const Tokenizer& tokenizer, SchedulerOptions opts, Metrics* metrics)
    : model_(model), tok_(tokenizer), opts_(opts), metrics_(metrics) {
  if (opts_.parallel == 0) fail("--parallel must be at least 1");
  if (opts_.ctx_per_seq < 2) fail("--ctx-per-seq must be at least 2");
  if (opts_.ctx_per_seq > model_.max_positions())
    fail("--ctx-per-seq {} exceeds the model's {} positions", opts_.ctx_per_seq, model_.max_positions());
  if (opts_.prefill_chunk == 0) opts_.prefill_chunk = 256;
  slots_.resize(opts_.parallel);
  slot_busy_.assign(opts_.parallel, false);
  worker_ = std::thread([this] { loop(); });
}

BatchScheduler::~BatchScheduler() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

std::size_t BatchScheduler::queued() const {
  std::lock_guard lk(mu_);
  return queue_.size();
}

std::size_t BatchScheduler::running() const { return running_.load(); }

void BatchScheduler::cancel_all() {
  cancel_all_.store(true);
  cv_.notify_all();
}

void BatchScheduler::submit(const std::shared_ptr<Job>& job) {
  const GenerationParams& p = job->params();
  if (job->prompt().empty()) throw ApiError(ApiErrorKind::invalid_request, "the prompt is empty");
  const auto V = static_cast<std::size_t>(model_.config().vocab_size);
  for (const std::int32_t id : job->prompt())
    if (id < 0 || static_cast<std::size_t>(id) >= V)
      throw ApiError(ApiErrorKind::invalid_request, fmt::format("prompt token id {} is outside the vocabulary", id));
  // The last sampled token is never fed, so prompt + max_new_tokens − 1 positions must fit.
  const std::size_t need = job->prompt().size() + std::max<std::size_t>(p.max_new_tokens, 1) - 1;
  if (need > opts_.ctx_per_seq)
    throw ApiError(ApiErrorKind::context_overflow,
                   fmt::format("this model's context is {} tokens per sequence; the request needs {} "
                               "({} in the prompt, {} to generate)",
                               opts_.ctx_per_seq, need + 1, job->prompt().size(), p.max_new_tokens));
  try {
    p.sampling.validate();
    StopStringHolder check(p.stop_strings);  // rejects an empty or invalid UTF-8 stop string
  } catch (const Error& e) {
    throw ApiError(ApiErrorKind::invalid_request, e.what());
  }
  {
    std::lock_guard lk(mu_);
    if (stop_ || cancel_all_.load()) throw ApiError(ApiErrorKind::server, "the server is shutting down");
    if (queue_.size() >= opts_.max_queue)
      throw ApiError(ApiErrorKind::overloaded,
                     fmt::format("the server is busy: {} requests are waiting (--max-queue); retry later",
                                 queue_.size()));
    queue_.push_back(job);
    if (metrics_) metrics_->queue_length.store(queue_.size());
  }
  cv_.notify_all();
}

void BatchScheduler::publish_running() {
  // The gauge first: whoever sees running() change also sees it in /metrics.
  if (metrics_) metrics_->running.store(active_.size());
  running_.store(active_.size());
}

void BatchScheduler::finish(Active& a, const std::string& tail, const std::string& error) {
  Job& j = *a.job;
  j.result_ = a.stream ? std::move(a.stream->result()) : GenerationResult{};
  j.result_.prompt_fed = a.fed;
  if (!error.empty()) j.result_.finish = FinishReason::kCancelled;
  if (metrics_ && j.result_.finish == FinishReason::kCancelled) ++metrics_->requests_cancelled;
  JobEvent e;
  e.kind = JobEvent::Kind::done;
  e.text = tail;
  e.error = error;
  j.push(std::move(e));
  slot_busy_[a.slot] = false;
  a.job.reset();
}

void BatchScheduler::admit() {
  std::vector<std::shared_ptr<Job>> refused;
  {
    std::unique_lock lk(mu_);
    while (active_.size() < opts_.parallel && !queue_.empty()) {
      std::shared_ptr<Job> job = std::move(queue_.front());
      queue_.pop_front();
      if (job->cancelled() || cancel_all_.load()) {
        refused.push_back(std::move(job));
        continue;
      }
      const auto slot = static_cast<std::size_t>(std::find(slot_busy_.begin(), slot_busy_.end(), false) - slot_busy_.begin());
      slot_busy_[slot] = true;
      Active a;
      a.job = std::move(job);
      a.slot = slot;
      active_.push_back(std::move(a));
    }
    if (metrics_) metrics_->queue_length.store(queue_.size());
  }
  for (auto& j : refused) {  // cancelled while waiting: never ran
    if (metrics_) ++metrics_->requests_cancelled;
    j->result_.finish = FinishReason::kCancelled;
    JobEvent e;
    e.kind = JobEvent::Kind::done;
    j->push(std::move(e));
  }
  for (Active& a : active_) {
    if (a.stream) continue;
    // A fresh slot: its sequence starts empty (allocated once, reset on reuse).
    auto& seq = slots_[a.slot];
    if (!seq) seq = model_.new_sequence(opts_.ctx_per_seq);
    else seq->reset();
    a.stream = std::make_unique<DecodeStream>(tok_, a.job->params());
    a.stream->result().timings.prompt_tokens = a.job->prompt().size();
  }
  publish_running();
}

void BatchScheduler::loop() {
  while (true) {
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty() || !active_.empty(); });
      if (stop_) break;
    }
    admit();
    if (!active_.empty()) step();
  }
  // Shutting down: everything still here ends cancelled.
  for (Active& a : active_) finish(a, a.stream ? a.stream->cancel() : std::string());
  active_.clear();
  std::lock_guard lk(mu_);
  for (auto& j : queue_) {
    JobEvent e;
    e.kind = JobEvent::Kind::done;
    j->result_.finish = FinishReason::kCancelled;
    j->push(std::move(e));
  }
  queue_.clear();
}

void BatchScheduler::step() {
  // Cancelled jobs leave before the step: their slot is free for the next one.
  for (Active& a : active_)
    if (a.job->cancelled() || cancel_all_.load()) finish(a, a.stream->cancel());
  std::erase_if(active_, [](const Active& a) { return !a.job; });
  if (active_.empty()) {
    publish_running();
    return;
  }

  // The batch: every decoding sequence's pending token, then prompt chunks in arrival order
  // within the step's prefill budget.
  std::vector<Part>& parts = parts_;  // reused from step to step, as ids_, items_ and logits_
  parts.clear();
  ids_.clear();
  std::size_t budget = opts_.prefill_chunk;
  for (std::size_t i = 0; i < active_.size(); ++i) {
    Active& a = active_[i];
    const std::size_t P = a.job->prompt().size();
    if (a.fed < P) {
      if (budget == 0) continue;
      const std::size_t n = std::min(budget, P - a.fed);
      budget -= n;
      parts.push_back({i, ids_.size(), n, true});
      ids_.insert(ids_.end(), a.job->prompt().begin() + static_cast<std::ptrdiff_t>(a.fed),
                  a.job->prompt().begin() + static_cast<std::ptrdiff_t>(a.fed + n));
    } else {
      parts.push_back({i, ids_.size(), 1, false});
      ids_.push_back(a.pending);
    }
  }
  std::vector<BatchItem>& items = items_;
  items.clear();
  for (const Part& p : parts)
    items.push_back({slots_[active_[p.active].slot].get(), std::span<const std::int64_t>(ids_.data() + p.offset, p.count),
                     LogitRows::kLast});
  const auto V = static_cast<std::size_t>(model_.config().vocab_size);
  logits_.resize(items.size() * V);
  try {
    model_.forward_batch_into(items, logits_);
  } catch (const std::exception& e) {
    // The step's sequences are in an unknown state: their jobs end with the error.
    for (const Part& p : parts) finish(active_[p.active], {}, std::string("the forward pass failed: ") + e.what());
    std::erase_if(active_, [](const Active& a) { return !a.job; });
    publish_running();
    return;
  }
  if (metrics_) {
    ++metrics_->forward_steps;
    metrics_->batch_size.observe(static_cast<double>(items.size()));
  }

  const auto now = Clock::now();
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const Part& p = parts[k];
    Active& a = active_[p.active];
    Job& job = *a.job;
    SequenceState& seq = *slots_[a.slot];
    if (p.prefill) {
      a.fed += p.count;
      if (metrics_) metrics_->prompt_tokens += p.count;
      JobEvent e;
      e.kind = JobEvent::Kind::prefill;
      e.prefill_done = a.fed;
      e.prefill_total = job.prompt().size();
      job.push(std::move(e));
      if (a.fed < job.prompt().size()) continue;
      a.stream->result().prompt_fed = a.fed;
      a.stream->result().timings.prefill_s = seconds(now - job.queued_at_);
    }
    const bool first = a.stream->result().ids.empty();
    const DecodeStream::Step st = a.stream->step(std::span<const float>(logits_.data() + k * V, V),
                                                 static_cast<std::size_t>(seq.pos()) >= seq.max_len(), job.cancelled());
    if (metrics_) {
      ++metrics_->generated_tokens;
      if (first) metrics_->ttft.observe(seconds(now - job.queued_at_));
      else metrics_->itl.observe(seconds(now - a.last_token));
    }
    if (first) a.stream->result().timings.ttft_s = seconds(now - job.queued_at_);
    a.last_token = now;
    JobEvent e;
    e.kind = JobEvent::Kind::token;
    e.token = *st.token;
    e.text = st.released;
    job.push(std::move(e));
    if (st.done) {
      GenerationResult& r = a.stream->result();
      r.timings.generated_tokens = r.ids.size();
      finish(a, {});
    } else {
      a.pending = a.stream->result().ids.back();
    }
  }
  std::erase_if(active_, [](const Active& a) { return !a.job; });
  publish_running();
}

}  // namespace dsv4::serve
