// Placeholder: the tokenize subcommand is being written (issue 4).
#include "commands.h"

namespace dsv4::cli {
void register_tokenize(CLI::App& app) { (void)app; }
}  // namespace dsv4::cli
