// dsv4 bench: prefill and decode speed, as ratios to this machine's limits measured in the same
// run (absolute times mean little on a shared host).
//
//   dsv4 bench [-m DIR] [-p PROMPT_TOKENS] [-n GEN_TOKENS] [-t THREADS] [--batch B] [--json]
//              [--numerics fast|strict] [--cold] [--smoke]
//
// Decode: bytes read per token (the memory plan's count of the weights one step touches — dense
// weights, the activated experts of every layer, Engram rows, the head — plus the cache rows it
// reads, at the mean decode position) × tokens/s ÷ the read bandwidth of a STREAM-like sweep.
// Prefill: 2 FLOP per multiply-add of the activated parameters per token (the linear layers;
// attention's own arithmetic is not counted) ÷ the bf16 dot-product peak (fp32 FMA peak where
// the CPU has no bf16 dot product). --smoke shrinks everything so CI can check it runs.
// Before anything is timed the mapped weights are paged in (util/page_in.h) when they fit in
// RAM, so the first prefill does not measure the disk; --cold skips that.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "io/manifest.h"
#include "io/memory_plan.h"
#include "io/param_count.h"
#include "kernels/machine_probe.h"
#include "model_flags.h"
#include "runtime/sampler.h"
#include "util/cpu_features.h"
#include "util/error.h"
#include "util/human_format.h"
#include "util/page_in.h"

namespace dsv4::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct BenchArgs {
  ModelFlags model;
  std::size_t prompt = 128, gen = 16, batch = 1;
  bool json = false, smoke = false, cold = false;
};

int run(BenchArgs& a) {
  if (a.smoke) {
    a.prompt = std::min<std::size_t>(a.prompt, 16);
    a.gen = std::min<std::size_t>(a.gen, 4);
  }
  if (a.prompt == 0) fail("-p must be at least 1 prompt token");
  if (a.batch == 0) fail("--batch must be at least 1");
  const std::size_t ctx = a.model.ctx ? a.model.ctx : a.prompt + a.gen + 1;
  if (a.prompt + a.gen + 1 > ctx) fail("-c {} is too small for -p {} + -n {}", ctx, a.prompt, a.gen);
  auto m = load_model(a.model, ctx);
  const ModelConfig& c = m->config();

  // The machine's limits, with the model's thread count.
  ThreadPool pool(m->threads());
  if (!a.model.quiet) std::fprintf(stderr, "measuring read bandwidth and arithmetic peak on %zu threads...\n", pool.threads());
  const auto bw = kernels::measure_read_bandwidth(pool, a.smoke ? (std::size_t(64) << 20) : (std::size_t(1) << 30),
                                                  a.smoke ? 2 : 5);
  const auto peak = kernels::measure_peak(pool, a.smoke ? 0.02 : 0.3);

  // Page the mapped weights in, unless asked not to or they would not fit in RAM (then the run
  // measures streaming from disk whatever we do, and says so).
  std::vector<std::span<const std::uint8_t>> mapped;
  std::uint64_t mapped_bytes = 0;
  for (const auto& shard : m->weights().checkpoint().shards()) {
    mapped.push_back(shard.file_bytes());
    mapped_bytes += shard.file_bytes().size();
  }
  const auto ram = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  std::string page_in_note;
  PageInResult paged;
  if (a.cold) {
    page_in_note = "not paged in (--cold): the first pass includes page faults";
  } else if (mapped_bytes > ram / 10 * 8) {
    page_in_note = fmt::format("not paged in: {} of weights exceed 80% of the {} of RAM", human_bytes(mapped_bytes),
                               human_bytes(ram));
  } else {
    if (!a.model.quiet) std::fprintf(stderr, "paging in %s of mapped weights...\n", human_bytes(mapped_bytes).c_str());
    paged = page_in(mapped, pool);
    page_in_note = fmt::format("paged in {} in {:.2f} s before timing", human_bytes(paged.bytes), paged.seconds);
  }

  // Prefill: B sequences of `prompt` pseudo-random ids, one forward call each batch.
  std::vector<std::unique_ptr<SequenceState>> seqs;
  std::vector<std::vector<std::int64_t>> prompts(a.batch);
  for (std::size_t b = 0; b < a.batch; ++b) {
    seqs.push_back(m->new_sequence(ctx));
    for (std::size_t i = 0; i < a.prompt; ++i)
      prompts[b].push_back(static_cast<std::int64_t>((i * 7919 + b * 104729 + 17) % static_cast<std::size_t>(c.vocab_size)));
  }
  auto items = [&](std::vector<std::vector<std::int64_t>>& ids) {
    std::vector<BatchItem> v;
    for (std::size_t b = 0; b < a.batch; ++b) v.push_back({seqs[b].get(), ids[b]});
    return v;
  };
  OpProfile prefill_prof, decode_prof;
  m->set_profile(&prefill_prof);
  auto t0 = Clock::now();
  auto it = items(prompts);
  auto logits = m->forward_batch(it);
  const double prefill_s = since(t0);
  const auto V = static_cast<std::size_t>(c.vocab_size);
  std::vector<std::vector<std::int64_t>> next(a.batch, std::vector<std::int64_t>(1));
  for (std::size_t b = 0; b < a.batch; ++b)
    next[b][0] = argmax(std::span<const float>(logits[b].data() + (a.prompt - 1) * V, V));
  m->set_profile(&decode_prof);
  t0 = Clock::now();
  for (std::size_t k = 0; k < a.gen; ++k) {
    auto step = items(next);
    logits = m->forward_batch(step);
    for (std::size_t b = 0; b < a.batch; ++b) next[b][0] = argmax(logits[b]);
  }
  const double decode_s = since(t0);
  m->set_profile(nullptr);
  // The breakdown: each operation's share of the phase's wall time ("other": what no timer
  // covers — sampling, batching, copies).
  auto breakdown = [](const OpProfile& p, double total) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    double covered = 0;
    for (const auto& [name, sec] : p.seconds) {
      j[name] = {{"seconds", sec}, {"share", total > 0 ? sec / total : 0.0}, {"calls", p.calls.at(name)}};
      covered += sec;
    }
    j["other"] = {{"seconds", total - covered}, {"share", total > 0 ? (total - covered) / total : 0.0}, {"calls", 0}};
    return j;
  };
  const auto prefill_ops = breakdown(prefill_prof, prefill_s);
  const auto decode_ops = breakdown(decode_prof, decode_s);

  const Manifest man = build_manifest(c);
  const ParamCount pc = count_params(c, man, m->weights().roles());
  const MemoryPlan plan = plan_memory(c, man, m->weights().roles(),
                                      static_cast<std::int64_t>(a.prompt + a.gen / 2 + 1), 1);
  const double prefill_tps = static_cast<double>(a.prompt * a.batch) / prefill_s;
  const double decode_steps_ps = a.gen ? static_cast<double>(a.gen) / decode_s : 0.0;
  // One step reads the weights once for the whole batch and each sequence's own cache.
  const double bytes_per_step = static_cast<double>(plan.decode_weight_bytes) +
                                static_cast<double>(plan.decode_cache_bytes) * static_cast<double>(a.batch);
  const double decode_gbps = bytes_per_step * decode_steps_ps / 1e9;
  const double prefill_gflops = 2.0 * static_cast<double>(pc.activated_total) * prefill_tps / 1e9;
  const double peak_gflops = peak.bf16_dot_gflops > 0 ? peak.bf16_dot_gflops : peak.fp32_fma_gflops;

  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = m->weights().dir();
    j["threads"] = m->threads();
    j["numerics"] = std::string(numerics_name(m->options().numerics));
    j["cpu_simd"] = cpu_simd_name(cpu_features());
    j["batch"] = a.batch;
    j["machine"] = {{"read_bandwidth_gbps_best", bw.best_gbps},
                    {"read_bandwidth_gbps_median", bw.median_gbps},
                    {"read_bandwidth_sweeps_gbps", bw.sweeps_gbps},
                    {"fp32_fma_peak_gflops", peak.fp32_fma_gflops},
                    {"bf16_dot_peak_gflops", peak.bf16_dot_gflops},
                    {"peak_isa", peak.isa}};
    j["weights"] = {{"mapped_bytes", mapped_bytes},
                    {"paged_in", paged.bytes > 0},
                    {"page_in_seconds", paged.seconds},
                    {"note", page_in_note}};
    j["prefill"] = {{"tokens", a.prompt * a.batch},
                    {"seconds", prefill_s},
                    {"tokens_per_s", prefill_tps},
                    {"gflops", prefill_gflops},
                    {"ratio_to_peak", prefill_gflops / peak_gflops},
                    {"ops", prefill_ops}};
    j["decode"] = {{"steps", a.gen},
                   {"seconds", decode_s},
                   {"tokens_per_s", decode_steps_ps * static_cast<double>(a.batch)},
                   {"bytes_per_step", bytes_per_step},
                   {"gbps", decode_gbps},
                   {"ratio_to_bandwidth", decode_gbps / bw.best_gbps},
                   {"ops", decode_ops}};
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("machine: read bandwidth %.1f GB/s best, %.1f median (%d sweeps of %s); peak fp32 FMA %.1f GFLOP/s, "
              "bf16 dot %.1f GFLOP/s (%s, %zu threads)\n",
              bw.best_gbps, bw.median_gbps, static_cast<int>(bw.sweeps_gbps.size()), human_bytes(bw.buffer_bytes).c_str(),
              peak.fp32_fma_gflops, peak.bf16_dot_gflops, peak.isa.c_str(), pool.threads());
  std::printf("weights: %s mapped, %s\n", human_bytes(mapped_bytes).c_str(), page_in_note.c_str());
  std::printf("prefill: %zu tokens in %.3f s = %.1f tokens/s; %.2f GFLOP/s = %.3f of the %s peak\n", a.prompt * a.batch,
              prefill_s, prefill_tps, prefill_gflops, prefill_gflops / peak_gflops,
              peak.bf16_dot_gflops > 0 ? "bf16 dot" : "fp32 FMA");
  std::printf("decode:  %zu steps × batch %zu in %.3f s = %.2f tokens/s; %s read per step = %.2f GB/s = %.3f of the "
              "read bandwidth\n",
              a.gen, a.batch, decode_s, decode_steps_ps * static_cast<double>(a.batch),
              human_bytes(static_cast<std::uint64_t>(bytes_per_step)).c_str(), decode_gbps, decode_gbps / bw.best_gbps);
  std::printf("%-12s %10s %7s %10s %7s   (%s numerics)\n", "operation", "prefill s", "share", "decode s", "share",
              std::string(numerics_name(m->options().numerics)).c_str());
  for (const auto& [name, v] : prefill_ops.items()) {
    const auto d = decode_ops.contains(name) ? decode_ops[name] : nlohmann::ordered_json{{"seconds", 0.0}, {"share", 0.0}};
    std::printf("%-12s %10.4f %6.1f%% %10.4f %6.1f%%\n", name.c_str(), v["seconds"].get<double>(),
                100 * v["share"].get<double>(), d["seconds"].get<double>(), 100 * d["share"].get<double>());
  }
  return 0;
}

}  // namespace

void register_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand("bench", "prefill and decode speed against the machine's measured limits");
  add_model_flags(sub, a->model);
  sub->add_option("-p,--n-prompt", a->prompt, "prompt tokens to prefill per sequence");
  sub->add_option("-n,--n-gen", a->gen, "decode steps");
  sub->add_option("--batch", a->batch, "sequences decoded together");
  sub->add_flag("--json", a->json, "print one JSON object");
  sub->add_flag("--cold", a->cold, "do not page the mapped weights in before timing");
  sub->add_flag("--smoke", a->smoke, "tiny sizes and short probes (CI: checks that it runs)");
  add_command(sub, [a] { return run(*a); });
}

}  // namespace dsv4::cli
