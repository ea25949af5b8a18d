// dsv4 logits (token ids in, logits out): the forward pass from the command line, with every
// switch of the numerics.
//
//   dsv4 logits -m DIR --ids 0,5,9|@FILE [--mode prefill|decode|chunk:N] [--numerics strict|fast]
//               [--index-keys own|reference] [--attn-slots compact|reference] [--compat reference]
//               [-t THREADS] --out FILE.npy [--dump-dir DIR] [--layer-errors FILE]
//
// Writes float32 [T, vocab] (teacher forcing, every position). --dump-dir writes the named
// intermediates of each call as NAME.npy (one call) or call{k}.NAME.npy (several), the names the
// oracle's `dump` uses. Numerics default to strict here: this is the comparison tool.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "model_flags.h"
#include "cli_inputs.h"
#include "model/model.h"
#include "util/error.h"
#include "util/npy.h"

namespace dsv4::cli {
namespace {

struct LogitsArgs {
  ModelFlags model;
  std::string ids, mode = "prefill";
};

void write_dump(const std::string& dir, const std::string& prefix, const Dump& d) {
  for (const auto& [name, t] : d) {
    const std::string path = (std::filesystem::path(dir) / (prefix + name + ".npy")).string();
    if (t.kind == 'f') write_npy_f32(path, t.shape, t.f32);
    else if (t.kind == 'i') write_npy_i64(path, t.shape, t.i64);
    else write_npy_bool(path, t.shape, t.b8);
  }
}

// Feeds ids in calls of `chunk` (0 = one call); returns the logits of every position.
std::vector<float> feed(Model& m, SequenceState& seq, const std::vector<std::int64_t>& ids,
                        std::size_t chunk, const std::string& dump_dir,
                        std::vector<std::vector<double>>* layer_errors = nullptr) {
  const std::size_t step = chunk == 0 ? ids.size() : chunk;
  std::vector<float> all;
  const std::size_t calls = (ids.size() + step - 1) / step;
  for (std::size_t s = 0, k = 0; s < ids.size(); s += step, ++k) {
    const std::size_t n = std::min(step, ids.size() - s);
    Dump d;
    std::vector<float> lg;
    const std::span<const std::int64_t> part(ids.data() + s, n);
    if (layer_errors != nullptr) {
      layer_errors->emplace_back();
      lg = m.forward_compare_fast(seq, part, layer_errors->back());
    } else {
      lg = m.forward(seq, part, dump_dir.empty() ? nullptr : &d);
    }
    if (!dump_dir.empty()) {
      const std::string prefix = calls == 1 ? "" : fmt::format("call{}.", k);
      if (calls > 1) {
        const std::int64_t sp = static_cast<std::int64_t>(s);
        write_npy_i64((std::filesystem::path(dump_dir) / (prefix + "start_pos.npy")).string(), {}, {&sp, 1});
      }
      const auto V = static_cast<std::int64_t>(m.config().vocab_size);
      d["logits"] = DumpTensor{{static_cast<std::int64_t>(n), V}, lg, {}, {}, 'f'};
      write_dump(dump_dir, prefix, d);
    }
    all.insert(all.end(), lg.begin(), lg.end());
  }
  return all;
}

}  // namespace

void register_logits(CLI::App& app) {
  auto* lg = app.add_subcommand("logits", "teacher-forced logits of every position (.npy)");
  static LogitsArgs la;
  static std::string out, dump_dir, layer_errors;
  add_model_flags(lg, la.model, "strict");
  lg->add_option("--ids", la.ids, "comma-separated token ids, or @FILE")->required();
  lg->add_option("--mode", la.mode, "prefill (one call), decode (one token per call) or chunk:N");
  lg->add_option("--out", out, "output .npy (float32 [T, vocab])")->required();
  lg->add_option("--dump-dir", dump_dir, "write named intermediates as .npy files into this directory");
  lg->add_option("--layer-errors", layer_errors,
                 "also run every layer in fast numerics on the strict layer's inputs and write the "
                 "relative errors as JSON {\"calls\": [[per layer]...]} (the logits stay strict)");
  add_command(lg, [] {
    const auto ids = parse_ids(la.ids);
    const std::size_t chunk = parse_mode(la.mode);
    if (!dump_dir.empty()) std::filesystem::create_directories(dump_dir);
    if (la.model.model_dir.empty()) fail("logits needs -m DIR");
    auto m = load_model(la.model, ids.size());
    auto seq = m->new_sequence(std::max<std::size_t>(ids.size(), 1));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<double>> errs;
    const auto logits = feed(*m, *seq, ids, chunk, dump_dir, layer_errors.empty() ? nullptr : &errs);
    if (!layer_errors.empty()) {
      std::ofstream f(layer_errors);
      f << nlohmann::json{{"calls", errs}}.dump() << "\n";
      if (!f) fail("{}: cannot write", layer_errors);
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::int64_t shape[2] = {static_cast<std::int64_t>(ids.size()), m->config().vocab_size};
    write_npy_f32(out, shape, logits);
    std::fprintf(stderr, "wrote %s: float32 [%lld, %lld] (%s numerics, %.2f s, %.1f tokens/s)\n", out.c_str(),
                 static_cast<long long>(shape[0]), static_cast<long long>(shape[1]),
                 std::string(numerics_name(m->options().numerics)).c_str(), sec, ids.size() / sec);
    return 0;
  });
}

}  // namespace dsv4::cli
