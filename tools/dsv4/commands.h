#pragma once
// The subcommand registry of the dsv4 CLI. Each cmd_<name>.cc defines register_<name>(), which
// adds a CLI11 subcommand and hands the function that runs it to add_command().
#include <CLI/CLI.hpp>
#include <functional>

namespace dsv4::cli {

using Runner = std::function<int()>;

// Records `run` as the action of subcommand `sub`.
void add_command(CLI::App* sub, Runner run);

void register_all(CLI::App& app);
// Runs the subcommand the user chose; returns the process exit code.
int run_selected(CLI::App& app);

void register_inspect(CLI::App& app);
void register_make_fixture(CLI::App& app);
void register_validate(CLI::App& app);
void register_tokenize(CLI::App& app);       // tokenize and detokenize
void register_chat_template(CLI::App& app);
void register_logits(CLI::App& app);
void register_run(CLI::App& app);
void register_chat(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_bench(CLI::App& app);
void register_serve(CLI::App& app);

}  // namespace dsv4::cli
