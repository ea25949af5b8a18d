#include "commands.h"

namespace dsv4::cli {
void register_inspect(CLI::App& app) { (void)app; }
}  // namespace dsv4::cli
