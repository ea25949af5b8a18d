#include "interrupt.h"

#include <csignal>
#include <cstring>

namespace dsv4::cli {
namespace {

std::atomic<bool> g_flag{false};

extern "C" void on_sigint(int) {
  if (g_flag.load()) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
    return;
  }
  g_flag.store(true);
}

}  // namespace

std::atomic<bool>& interrupt_flag() {
  static const bool installed = [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking read at the chat prompt returns with EINTR
    sigaction(SIGINT, &sa, nullptr);
    return true;
  }();
  (void)installed;
  return g_flag;
}

void clear_interrupt() { g_flag.store(false); }

}  // namespace dsv4::cli
