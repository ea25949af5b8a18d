// Placeholder: the chat_template subcommand is being written (issue 4).
#include "commands.h"

namespace dsv4::cli {
void register_chat_template(CLI::App& app) { (void)app; }
}  // namespace dsv4::cli
