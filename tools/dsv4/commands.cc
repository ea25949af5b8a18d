#include "commands.h"

#include <vector>

namespace dsv4::cli {
namespace {
struct Entry {
  CLI::App* sub;
  Runner run;
};
std::vector<Entry>& registry() {
  static std::vector<Entry> r;
  return r;
}
}  // namespace

void add_command(CLI::App* sub, Runner run) { registry().push_back({sub, std::move(run)}); }

void register_all(CLI::App& app) {
  register_inspect(app);
  register_make_fixture(app);
  register_validate(app);
  register_tokenize(app);
  register_chat_template(app);
  register_logits(app);
  register_run(app);
  register_chat(app);
  register_perplexity(app);
  register_bench(app);
  register_serve(app);
}

int run_selected(CLI::App& app) {
  (void)app;
  for (auto& e : registry())
    if (e.sub->parsed()) return e.run();
  return 1;
}

}  // namespace dsv4::cli
