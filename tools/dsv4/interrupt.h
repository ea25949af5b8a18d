#pragma once
// Ctrl-C during generation: the first SIGINT asks the running generation to stop (the command
// then finishes normally, printing what it has); a second one while the first is still pending
// ends the process as usual.
#include <atomic>

namespace dsv4::cli {

// Installs the handler (idempotent) and returns the flag it sets.
std::atomic<bool>& interrupt_flag();
// Clears the flag before the next generation.
void clear_interrupt();

}  // namespace dsv4::cli
