#pragma once
// A one-line progress bar on stderr for long work (loading, prefill, perplexity). Drawn only
// when stderr is a terminal, so pipes and logs stay clean; redraws at most every 1/10 s.
#include <chrono>
#include <cstddef>
#include <string>

namespace dsv4::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label, bool enabled = true);
  ~ProgressBar();
  void update(std::size_t done, std::size_t total, const std::string& extra = "");
  void set_label(std::string label) { label_ = std::move(label); }
  // Erases the bar (the line is free for the next output).
  void clear();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

bool stderr_is_tty();

}  // namespace dsv4::cli
