#include "model_flags.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "default_model.h"
#include "io/manifest.h"
#include "kernels/bf16_gemm.h"
#include "io/memory_plan.h"
#include "io/param_count.h"
#include "progress.h"
#include "util/cpu_features.h"
#include "util/error.h"
#include "util/human_format.h"

namespace dsv4::cli {

void add_model_flags(CLI::App* sub, ModelFlags& f, const std::string& default_numerics) {
  f.numerics = default_numerics;
  sub->add_option("-m,--model", f.model_dir, "model directory (default: the built-in synthetic model)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("-t,--threads", f.threads, "worker threads, 0 = all cores (results do not depend on it)");
  sub->add_option("-c,--ctx-size", f.ctx, "context length of the sequence in tokens");
  sub->add_option("--numerics", f.numerics, "fast or strict (correctly rounded, bit-exact with the oracle)")
      ->check(CLI::IsMember({"strict", "fast"}));
  sub->add_option("--index-keys", f.index_keys, "own (default) or reference (spec §16.2)")
      ->check(CLI::IsMember({"own", "reference"}));
  sub->add_option("--attn-slots", f.attn_slots, "compact (default) or reference (spec §16.4)")
      ->check(CLI::IsMember({"compact", "reference"}));
  sub->add_option("--compat", f.compat, "reference: both --index-keys and --attn-slots reference")
      ->check(CLI::IsMember({"reference"}));
  sub->add_flag("-q,--quiet", f.quiet, "no progress bars or summary lines on stderr");
}

std::string resolve_model_dir(const ModelFlags& f) {
  if (!f.model_dir.empty()) return f.model_dir;
  const std::string dir = ensure_default_model(f.quiet);
  if (!f.quiet)
    std::fprintf(stderr, "using the built-in default model %s: synthetic weights (random), so its text is noise; "
                         "pass -m DIR for a real model\n", dir.c_str());
  return dir;
}

std::unique_ptr<Model> load_model(const ModelFlags& f, std::size_t positions) {
  const std::string dir = resolve_model_dir(f);
  ModelOptions o;
  o.forward.numerics = parse_numerics(f.numerics);
  o.forward.index_keys = parse_index_keys(f.compat.empty() ? f.index_keys : "reference");
  o.forward.attn_slots = parse_attn_slots(f.compat.empty() ? f.attn_slots : "reference");
  o.threads = f.threads;
  const ModelConfig c = load_model_config_dir(dir);
  o.max_positions = std::max<std::size_t>(static_cast<std::size_t>(c.max_seq_len), positions);
  ProgressBar bar("loading", !f.quiet);
  o.progress = [&](std::string_view stage, std::size_t done, std::size_t total) {
    bar.set_label(fmt::format("loading: {:<10}", stage));
    bar.update(done, total);
  };
  auto m = Model::load(dir, o);
  bar.clear();
  if (!f.quiet) {
    const Manifest man = build_manifest(m->config());
    const ParamCount pc = count_params(m->config(), man, m->weights().roles());
    const MemoryPlan plan = plan_memory(m->config(), man, m->weights().roles(),
                                        static_cast<std::int64_t>(std::max<std::size_t>(positions, 1)), 1);
    std::fprintf(stderr,
                 "loaded %s: %s parameters, %s of weights mapped (%s copied), %s of state per sequence at "
                 "context %zu, %zu threads, %s numerics, CPU SIMD: %s (fast kernels: %s)\n",
                 dir.c_str(), with_commas(pc.total).c_str(), human_bytes(plan.total_weights).c_str(),
                 human_bytes(m->weights().copied_bytes()).c_str(),
                 human_bytes(static_cast<std::uint64_t>(plan.state_bytes_per_sequence)).c_str(), positions,
                 m->threads(), std::string(numerics_name(m->options().numerics)).c_str(),
                 cpu_simd_name(cpu_features()).c_str(), kernels::isa_name(kernels::best_isa()));
  }
  return m;
}

}  // namespace dsv4::cli
