#include "commands.h"

namespace dsv4::cli {
void register_validate(CLI::App& app) { (void)app; }
}  // namespace dsv4::cli
