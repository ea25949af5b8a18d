#pragma once
// The server's counters and latency histograms, rendered in the Prometheus text format
// (GET /metrics). Every update is thread-safe: HTTP threads count requests, the scheduler's
// thread counts tokens and latencies.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace dsv4::serve {

// A cumulative histogram with fixed bucket bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // The Prometheus lines for metric `name` (…_bucket{le=…}, …_sum, …_count).
  std::string render(const std::string& name, const std::string& help) const;
  std::uint64_t count() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  std::uint64_t n_ = 0;
};

struct Metrics {
  Metrics();
  std::atomic<std::uint64_t> requests_total{0};     // requests that reached a handler
  std::atomic<std::uint64_t> requests_failed{0};    // answered with an error status
  std::atomic<std::uint64_t> requests_cancelled{0}; // ended by a disconnect or cancellation
  std::atomic<std::uint64_t> prompt_tokens{0};
  std::atomic<std::uint64_t> generated_tokens{0};
  std::atomic<std::uint64_t> queue_length{0};       // waiting for a sequence slot (gauge)
  std::atomic<std::uint64_t> running{0};            // sequences in the running batch (gauge)
  std::atomic<std::uint64_t> forward_steps{0};
  Histogram ttft;  // request queued → first token (seconds)
  Histogram itl;   // between consecutive tokens of one request (seconds)
  Histogram batch_size;  // sequences per forward step

  std::string render() const;
};

}  // namespace dsv4::serve
