#pragma once
// The flags every model-running subcommand shares (-m, -t, -c, the numerics switches) and the
// loading they lead to: the built-in default model when -m is absent, a progress bar while the
// checkpoint is validated and mapped, and a one-line summary of what was loaded.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "model/model.h"

namespace dsv4::cli {

struct ModelFlags {
  std::string model_dir;            // empty: the built-in default model (default_model.h)
  std::size_t threads = 0;          // 0: every hardware thread
  std::size_t ctx = 0;              // context per sequence; 0: the command's own default
  std::string numerics = "fast";
  std::string index_keys = "own", attn_slots = "compact", compat;
  bool quiet = false;               // no progress bar, no summary line
};

// Adds -m, -t, -c, --numerics, --index-keys, --attn-slots, --compat, --quiet.
void add_model_flags(CLI::App* sub, ModelFlags& f, const std::string& default_numerics = "fast");

// The model directory the flags name, creating the default model on first use.
std::string resolve_model_dir(const ModelFlags& f);

// Loads the model with RoPE tables for `positions` (at least the config's max_seq_len), showing
// progress on stderr and then the summary line (parameters, mapped bytes, context, threads,
// SIMD), unless quiet.
std::unique_ptr<Model> load_model(const ModelFlags& f, std::size_t positions);

}  // namespace dsv4::cli
