#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace dsv4::cli {

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled && stderr_is_tty()) {}

ProgressBar::~ProgressBar() { clear(); }

void ProgressBar::update(std::size_t done, std::size_t total, const std::string& extra) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  constexpr int kWidth = 30;
  const double f = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int fill = static_cast<int>(f * kWidth + 0.5);
  std::string bar(static_cast<std::size_t>(fill), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r\033[K%s [%s] %5.1f%% %zu/%zu%s%s", label_.c_str(), bar.c_str(), 100.0 * f, done, total,
               extra.empty() ? "" : "  ", extra.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace dsv4::cli
