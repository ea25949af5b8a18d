// dsv4 — the command-line tool. Each subcommand lives in its own file (cmd_*.cc) and registers
// itself here; the library does the work, this file only parses flags and reports errors.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "commands.h"
#include "util/error.h"
#include "util/heap_policy.h"

int main(int argc, char** argv) {
  dsv4::keep_freed_memory();  // forward-pass buffers are reused, not re-faulted (util/heap_policy.h)
  CLI::App app{"dsv4 — DeepSeek V4.1 inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dsv4 0.1.0");
  dsv4::cli::register_all(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return dsv4::cli::run_selected(app);
  } catch (const dsv4::Error& e) {
    std::fprintf(stderr, "dsv4: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dsv4: internal error: %s\n", e.what());
    return 2;
  }
}
