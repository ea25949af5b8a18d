#include "serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace dsv4::serve {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  const auto b = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  std::lock_guard lk(mu_);
  ++counts_[b];
  sum_ += v;
  ++n_;
}

std::uint64_t Histogram::count() const {
  std::lock_guard lk(mu_);
  return n_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::lock_guard lk(mu_);
  std::string s = fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    s += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
  }
  cum += counts_.back();
  s += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cum, name, sum_, name, n_);
  return s;
}

Metrics::Metrics()
    : ttft({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}),
      itl({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}),
      batch_size({1, 2, 4, 8, 16, 32, 64}) {}

std::string Metrics::render() const {
  auto counter = [](const char* name, const char* help, std::uint64_t v) {
    return fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
  };
  auto gauge = [](const char* name, const char* help, std::uint64_t v) {
    return fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, v);
  };
  std::string s;
  s += counter("dsv4_requests_total", "Requests received by the API handlers.", requests_total.load());
  s += counter("dsv4_requests_failed_total", "Requests answered with an error.", requests_failed.load());
  s += counter("dsv4_requests_cancelled_total", "Requests ended by a client disconnect.", requests_cancelled.load());
  s += counter("dsv4_prompt_tokens_total", "Prompt tokens prefilled.", prompt_tokens.load());
  s += counter("dsv4_generated_tokens_total", "Tokens generated.", generated_tokens.load());
  s += counter("dsv4_forward_steps_total", "Batched forward steps run.", forward_steps.load());
  s += gauge("dsv4_queue_length", "Requests waiting for a sequence slot.", queue_length.load());
  s += gauge("dsv4_running_sequences", "Sequences in the running batch.", running.load());
  s += ttft.render("dsv4_time_to_first_token_seconds", "From a request's arrival to its first token.");
  s += itl.render("dsv4_inter_token_latency_seconds", "Between consecutive tokens of a request.");
  s += batch_size.render("dsv4_batch_size", "Sequences in each forward step.");
  return s;
}

}  // namespace dsv4::serve
