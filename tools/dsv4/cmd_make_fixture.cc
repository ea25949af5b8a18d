#include "commands.h"

namespace dsv4::cli {
void register_make_fixture(CLI::App& app) { (void)app; }
}  // namespace dsv4::cli
