// dsv4 bench: prefill and decode speed, as ratios to this machine's limits measured in the same
// run (absolute times mean little on a shared host).
//
//   dsv4 bench [-m DIR] [-p PROMPT_TOKENS] [-n GEN_TOKENS] [-t THREADS] [--batch B] [--json]
//              [--ctx N[,N...]] [--chunk TOKENS] [--numerics fast|strict] [--cold] [--no-warmup]
//              [--smoke]
//
// Prompts are fed in chunks of --chunk tokens (512 by default, as a generation prefill would) and
// only the last position's logits are computed. --ctx N,... adds a context-scaling run: for each
// N, a fresh sequence is prefilled with N tokens and then decodes -n tokens at position N, with
// the time per operation, so the cost curve can be read against the design (window part flat,
// indexer linear in the compressed rows, re-indexing bounded by the candidate budget).
//
// Decode: bytes read per token (the memory plan's count of the weights one step touches — dense
// weights, the activated experts of every layer, Engram rows, the head — plus the cache rows it
// reads, at the mean decode position) × tokens/s ÷ the read bandwidth of a STREAM-like sweep
// (best of 5 before the run), and the same per step against a sweep run just before that step
// (median over the steps: the host's bandwidth drifts within seconds, so this pairing is the
// steadier figure).
// Prefill: 2 FLOP per multiply-add of the activated parameters per token (the linear layers;
// attention's own arithmetic is not counted) ÷ the peak of the instruction the kernels accumulate
// with: the bf16 dot product (VDPBF16PS), or the fp32 FMA where the CPU has no bf16 dot product or
// the kernels take their FMA form (kernels::fma_form: Intel, where VDPBF16PS runs at half the
// FMA's FLOP rate and would flatter them). --smoke shrinks everything so CI can check it runs.
// Before anything is timed the mapped weights are paged in (util/page_in.h) when they fit in
// RAM, so the first prefill does not measure the disk; --cold skips that.
// Then, as llama-bench does, one warm-up run of the same shape (prefill, one decode step) that is
// not counted: the first forward pass of a shape grows the scratch arena and the kernels'
// per-thread buffers (about 80k page faults on fresh memory for 512 tokens on `wide`) and
// builds lazy tables, which a server pays once and a steady-state figure should not include.
// Its prefill time is still printed, as the cold figure; --no-warmup times the first pass.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "io/manifest.h"
#include "io/memory_plan.h"
#include "io/param_count.h"
#include "kernels/bf16_gemm.h"
#include "kernels/machine_probe.h"
#include "model_flags.h"
#include "progress.h"
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
  std::size_t prompt = 128, gen = 16, batch = 1, chunk = 512;
  std::vector<std::size_t> ctxs;
  bool json = false, smoke = false, cold = false, warmup = true;
};

// What one prefill + decode run measured.
struct RunResult {
  std::size_t prompt = 0, gen = 0;
  double prefill_s = 0, decode_s = 0;
  OpProfile prefill_prof, decode_prof;
  // With a paired sweep: each decode step's seconds and the read sweep run just before it.
  std::vector<double> step_s, step_sweep_gbps;
};

// The median, lowest and highest of each decode step's bandwidth ratio against the sweep run
// just before that step (both see the same moment of a drifting host).
struct PairedRatio {
  double median = 0, lo = 0, hi = 0;
};
PairedRatio paired_ratio(const RunResult& r, double bytes_per_step) {
  std::vector<double> v;
  for (std::size_t k = 0; k < r.step_s.size(); ++k) v.push_back(bytes_per_step / r.step_s[k] / 1e9 / r.step_sweep_gbps[k]);
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// Prefills `prompt` pseudo-random tokens into `batch` fresh sequences (chunks of `chunk`, last
// position's logits only), then decodes `gen` greedy steps, timing both phases per operation.
// With `sweep`, each decode step is preceded by one read sweep (not timed as decode), so that its
// bandwidth ratio can be taken against the same moment's bandwidth.
RunResult prefill_and_decode(Model& m, std::size_t prompt, std::size_t gen, std::size_t batch, std::size_t chunk,
                             bool progress, kernels::ReadSweep* sweep = nullptr, const char* label = "prefill") {
  const ModelConfig& c = m.config();
  RunResult r;
  r.prompt = prompt;
  r.gen = gen;
  std::vector<std::unique_ptr<SequenceState>> seqs;
  std::vector<std::vector<std::int64_t>> prompts(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    seqs.push_back(m.new_sequence(prompt + gen + 1));
    for (std::size_t i = 0; i < prompt; ++i)
      prompts[b].push_back(static_cast<std::int64_t>((i * 7919 + b * 104729 + 17) % static_cast<std::size_t>(c.vocab_size)));
  }
  std::vector<std::vector<float>> logits;
  ProgressBar bar(fmt::format("{} {}", label, prompt), progress);
  m.set_profile(&r.prefill_prof);
  auto t0 = Clock::now();
  for (std::size_t s = 0; s < prompt; s += chunk) {
    const std::size_t n = std::min(chunk, prompt - s);
    std::vector<BatchItem> items;
    for (std::size_t b = 0; b < batch; ++b)
      items.push_back({seqs[b].get(), std::span<const std::int64_t>(prompts[b].data() + s, n), LogitRows::kLast});
    logits = m.forward_batch(items);
    bar.update(s + n, prompt);
  }
  r.prefill_s = since(t0);
  bar.clear();
  std::vector<std::int64_t> next(batch);
  for (std::size_t b = 0; b < batch; ++b) next[b] = argmax(logits[b]);
  m.set_profile(&r.decode_prof);
  for (std::size_t k = 0; k < gen; ++k) {
    if (sweep) r.step_sweep_gbps.push_back(sweep->sweep_gbps());
    t0 = Clock::now();
    std::vector<BatchItem> items;
    for (std::size_t b = 0; b < batch; ++b) items.push_back({seqs[b].get(), std::span<const std::int64_t>(&next[b], 1)});
    logits = m.forward_batch(items);
    for (std::size_t b = 0; b < batch; ++b) next[b] = argmax(logits[b]);
    const double dt = since(t0);
    r.decode_s += dt;
    if (sweep) r.step_s.push_back(dt);
  }
  m.set_profile(nullptr);
  return r;
}

// Each operation's seconds and share of the phase's wall time. "a/b" names are parts of "a" and
// are left out of the sum; "other" is what no timer covers (sampling, batching, copies).
nlohmann::ordered_json breakdown(const OpProfile& p, double total) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  double covered = 0;
  for (const auto& [name, sec] : p.seconds) {
    j[name] = {{"seconds", sec}, {"share", total > 0 ? sec / total : 0.0}, {"calls", p.calls.at(name)}};
    if (name.find('/') == std::string::npos) covered += sec;
  }
  j["other"] = {{"seconds", total - covered}, {"share", total > 0 ? (total - covered) / total : 0.0}, {"calls", 0}};
  return j;
}

// A row label: "attention/indexer" prints as "  indexer" under "attention".
std::string op_label(const std::string& name) {
  const auto slash = name.find('/');
  return slash == std::string::npos ? name : "  " + name.substr(slash + 1);
}

// Bytes one decode step reads at position `pos`: the weights it touches (once for the whole
// batch) and each sequence's cache rows, in the bf16 layout the memory plan counts and the
// caches use (spec §14, model/sequence_state.h).
double decode_bytes_per_step(const ModelConfig& c, const Manifest& man, const Model& m, std::size_t pos,
                             std::size_t batch) {
  const MemoryPlan plan = plan_memory(c, man, m.weights().roles(), static_cast<std::int64_t>(pos), 1);
  const double cache = static_cast<double>(plan.decode_cache_bytes);
  return static_cast<double>(plan.decode_weight_bytes) + cache * static_cast<double>(batch);
}

int run(BenchArgs& a) {
  // Counts arrive as size_t, so "-3" wraps to about 2^64: bound them before any sum can overflow.
  constexpr std::size_t kMaxTokens = std::size_t{1} << 24;
  auto in_range = [&](const char* flag, std::size_t v, std::size_t lo) {
    if (v < lo || v > kMaxTokens) fail("{} must be between {} and {} (got {})", flag, lo, kMaxTokens, v);
  };
  in_range("-p", a.prompt, 1);
  in_range("-n", a.gen, 0);
  in_range("--batch", a.batch, 1);
  in_range("--chunk", a.chunk, 1);
  for (std::size_t n : a.ctxs) in_range("--ctx: every context", n, 1);
  if (a.smoke) {
    a.prompt = std::min<std::size_t>(a.prompt, 16);
    a.gen = std::min<std::size_t>(a.gen, 4);
    for (auto& n : a.ctxs) n = std::min<std::size_t>(n, 64);
  }
  std::size_t longest = a.prompt;
  for (std::size_t n : a.ctxs) longest = std::max(longest, n);
  const std::size_t ctx = a.model.ctx ? a.model.ctx : longest + a.gen + 1;
  if (longest + a.gen + 1 > ctx) fail("-c {} is too small for {} prompt tokens + -n {}", ctx, longest, a.gen);
  auto m = load_model(a.model, ctx);
  const ModelConfig& c = m->config();
  if (longest + a.gen + 1 > static_cast<std::size_t>(c.max_seq_len) && !a.model.quiet)
    std::fprintf(stderr, "note: %zu positions exceed the model's max_seq_len %lld\n", longest + a.gen + 1,
                 static_cast<long long>(c.max_seq_len));

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

  const bool progress = !a.model.quiet && !a.json;
  // A sweep before each decode step of the main run, over a buffer far larger than the caches
  // (which also leaves the step's weights as cold as a real decode step finds them), of the same
  // 1 GiB as the sweeps above (on this host smaller buffers read a little faster).
  kernels::ReadSweep step_sweep(pool, a.smoke ? (std::size_t(16) << 20) : (std::size_t(1) << 30));
  std::optional<RunResult> warm;
  if (a.warmup)
    warm = prefill_and_decode(*m, a.prompt, std::min<std::size_t>(a.gen, 1), a.batch, a.chunk, progress, nullptr,
                              "warm-up prefill");
  const RunResult main_run = prefill_and_decode(*m, a.prompt, a.gen, a.batch, a.chunk, progress, &step_sweep);
  std::vector<RunResult> ctx_runs;
  for (std::size_t n : a.ctxs) ctx_runs.push_back(prefill_and_decode(*m, n, a.gen, 1, a.chunk, progress));

  const Manifest man = build_manifest(c);
  const ParamCount pc = count_params(c, man, m->weights().roles());
  const bool fma_peak = kernels::fma_form() || peak.bf16_dot_gflops <= 0;
  const double peak_gflops = fma_peak ? peak.fp32_fma_gflops : peak.bf16_dot_gflops;
  const char* peak_name = fma_peak ? "fp32 FMA" : "bf16 dot";
  // Figures of one run with `batch` sequences.
  struct Figures {
    double prefill_tps, prefill_gflops, decode_tps, bytes_per_step, decode_gbps;
  };
  auto figures = [&](const RunResult& r, std::size_t batch) {
    Figures f{};
    f.prefill_tps = static_cast<double>(r.prompt * batch) / r.prefill_s;
    f.prefill_gflops = 2.0 * static_cast<double>(pc.activated_total) * f.prefill_tps / 1e9;
    const double steps_ps = r.gen ? static_cast<double>(r.gen) / r.decode_s : 0.0;
    f.decode_tps = steps_ps * static_cast<double>(batch);
    f.bytes_per_step = decode_bytes_per_step(c, man, *m, r.prompt + r.gen / 2 + 1, batch);
    f.decode_gbps = f.bytes_per_step * steps_ps / 1e9;
    return f;
  };
  const Figures mf = figures(main_run, a.batch);
  const PairedRatio paired = paired_ratio(main_run, mf.bytes_per_step);
  std::vector<Figures> cf;
  for (const RunResult& r : ctx_runs) cf.push_back(figures(r, 1));
  const auto prefill_ops = breakdown(main_run.prefill_prof, main_run.prefill_s);
  const auto decode_ops = breakdown(main_run.decode_prof, main_run.decode_s);

  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = m->weights().dir();
    j["threads"] = m->threads();
    j["numerics"] = std::string(numerics_name(m->options().numerics));
    j["cpu_simd"] = cpu_simd_name(cpu_features());
    j["batch"] = a.batch;
    j["chunk"] = a.chunk;
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
    if (warm)
      j["warmup"] = {{"prefill_seconds", warm->prefill_s},
                     {"prefill_ratio_to_peak", figures(*warm, a.batch).prefill_gflops / peak_gflops}};
    else
      j["warmup"] = nullptr;
    j["prefill"] = {{"tokens", a.prompt * a.batch},
                    {"seconds", main_run.prefill_s},
                    {"tokens_per_s", mf.prefill_tps},
                    {"gflops", mf.prefill_gflops},
                    {"ratio_to_peak", mf.prefill_gflops / peak_gflops},
                    {"peak", peak_name},
                    {"ops", prefill_ops}};
    j["decode"] = {{"steps", a.gen},
                   {"seconds", main_run.decode_s},
                   {"tokens_per_s", mf.decode_tps},
                   {"bytes_per_step", mf.bytes_per_step},
                   {"gbps", mf.decode_gbps},
                   {"ratio_to_bandwidth", mf.decode_gbps / bw.best_gbps},
                   {"ratio_to_bandwidth_paired_median", paired.median},
                   {"ratio_to_bandwidth_paired_lo", paired.lo},
                   {"ratio_to_bandwidth_paired_hi", paired.hi},
                   {"step_sweeps_gbps", main_run.step_sweep_gbps},
                   {"ops", decode_ops}};
    if (!ctx_runs.empty()) {
      nlohmann::ordered_json cs = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < ctx_runs.size(); ++i) {
        const RunResult& r = ctx_runs[i];
        const Figures& f = cf[i];
        cs.push_back({{"context", r.prompt},
                      {"prefill_seconds", r.prefill_s},
                      {"prefill_tokens_per_s", f.prefill_tps},
                      {"prefill_ops", breakdown(r.prefill_prof, r.prefill_s)},
                      {"decode_steps", r.gen},
                      {"decode_ms_per_token", r.gen ? 1e3 * r.decode_s / static_cast<double>(r.gen) : 0.0},
                      {"decode_bytes_per_step", f.bytes_per_step},
                      {"decode_ratio_to_bandwidth", f.decode_gbps / bw.best_gbps},
                      {"decode_ops", breakdown(r.decode_prof, r.decode_s)}});
      }
      j["context_scaling"] = cs;
    }
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("machine: read bandwidth %.1f GB/s best, %.1f median (%d sweeps of %s); peak fp32 FMA %.1f GFLOP/s, "
              "bf16 dot %.1f GFLOP/s (%s, %zu threads)\n",
              bw.best_gbps, bw.median_gbps, static_cast<int>(bw.sweeps_gbps.size()), human_bytes(bw.buffer_bytes).c_str(),
              peak.fp32_fma_gflops, peak.bf16_dot_gflops, peak.isa.c_str(), pool.threads());
  std::printf("weights: %s mapped, %s\n", human_bytes(mapped_bytes).c_str(), page_in_note.c_str());
  if (warm)
    std::printf("warm-up: the first prefill of this shape took %.3f s (%.3f of the peak), not counted below\n",
                warm->prefill_s, figures(*warm, a.batch).prefill_gflops / peak_gflops);
  std::printf("prefill: %zu tokens in %.3f s = %.1f tokens/s; %.2f GFLOP/s = %.3f of the %s peak\n", a.prompt * a.batch,
              main_run.prefill_s, mf.prefill_tps, mf.prefill_gflops, mf.prefill_gflops / peak_gflops, peak_name);
  std::printf("decode:  %zu steps × batch %zu in %.3f s = %.2f tokens/s; %s read per step = %.2f GB/s = %.3f of the "
              "read bandwidth\n",
              a.gen, a.batch, main_run.decode_s, mf.decode_tps,
              human_bytes(static_cast<std::uint64_t>(mf.bytes_per_step)).c_str(), mf.decode_gbps, mf.decode_gbps / bw.best_gbps);
  if (a.gen > 0)
    std::printf("         each step against a sweep run just before it: median %.3f of the read bandwidth (%.3f–%.3f)\n",
                paired.median, paired.lo, paired.hi);
  std::printf("%-12s %10s %7s %10s %7s   (%s numerics)\n", "operation", "prefill s", "share", "decode s", "share",
              std::string(numerics_name(m->options().numerics)).c_str());
  for (const auto& [name, v] : prefill_ops.items()) {
    const auto d = decode_ops.contains(name) ? decode_ops[name] : nlohmann::ordered_json{{"seconds", 0.0}, {"share", 0.0}};
    std::printf("%-12s %10.4f %6.1f%% %10.4f %6.1f%%\n", op_label(name).c_str(), v["seconds"].get<double>(),
                100 * v["share"].get<double>(), d["seconds"].get<double>(), 100 * d["share"].get<double>());
  }
  if (ctx_runs.empty()) return 0;

  // Context scaling: one column per context.
  std::printf("\ncontext scaling (batch 1, chunks of %zu, %zu decode steps at each context):\n", a.chunk, a.gen);
  std::printf("%-22s", "context");
  for (const RunResult& r : ctx_runs) std::printf(" %11zu", r.prompt);
  std::printf("\n%-22s", "prefill s");
  for (const RunResult& r : ctx_runs) std::printf(" %11.3f", r.prefill_s);
  std::printf("\n%-22s", "prefill tokens/s");
  for (const Figures& f : cf) std::printf(" %11.1f", f.prefill_tps);
  std::printf("\n%-22s", "decode ms/token");
  for (const RunResult& r : ctx_runs) std::printf(" %11.2f", r.gen ? 1e3 * r.decode_s / static_cast<double>(r.gen) : 0.0);
  std::printf("\n%-22s", "decode MB read/token");
  for (const Figures& f : cf) std::printf(" %11.1f", f.bytes_per_step / 1e6);
  std::printf("\n%-22s", "decode ratio to bw");
  for (const Figures& f : cf) std::printf(" %11.3f", f.decode_gbps / bw.best_gbps);
  // Per operation: prefill seconds, then decode ms per token.
  auto op_rows = [&](const char* title, bool decode) {
    std::vector<nlohmann::ordered_json> bs;
    std::map<std::string, int> names;
    for (const RunResult& r : ctx_runs) {
      bs.push_back(decode ? breakdown(r.decode_prof, r.decode_s) : breakdown(r.prefill_prof, r.prefill_s));
      for (const auto& [name, v] : bs.back().items()) names[name] = 0;
    }
    std::printf("\n%s\n", title);
    for (const auto& [name, unused] : names) {
      std::printf("%-22s", op_label(name).c_str());
      for (std::size_t i = 0; i < ctx_runs.size(); ++i) {
        const double sec = bs[i].contains(name) ? bs[i][name]["seconds"].get<double>() : 0.0;
        const double gen = static_cast<double>(std::max<std::size_t>(ctx_runs[i].gen, 1));
        std::printf(" %11.3f", decode ? 1e3 * sec / gen : sec);
      }
      std::printf("\n");
    }
  };
  op_rows("prefill seconds by operation:", false);
  op_rows("decode ms per token by operation:", true);
  return 0;
}

}  // namespace

void register_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand("bench", "prefill and decode speed against the machine's measured limits");
  add_model_flags(sub, a->model);
  // (The validator sees the text: "-3" would otherwise wrap to about 2^64 on its way to size_t.)
  const CLI::Validator count(
      [](std::string& v) -> std::string {
        const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
        return digits ? std::string() : "expected a whole number of at least 0, got \"" + v + "\"";
      },
      "COUNT");
  sub->add_option("-p,--n-prompt", a->prompt, "prompt tokens to prefill per sequence")->check(count);
  sub->add_option("-n,--n-gen", a->gen, "decode steps")->check(count);
  sub->add_option("--batch", a->batch, "sequences decoded together")->check(count);
  sub->add_option("--chunk", a->chunk, "prefill chunk in tokens (default 512)")->check(count);
  sub->add_option("--ctx", a->ctxs, "context-scaling run: prefill N tokens, then decode -n at position N (N,N,...)")
      ->delimiter(',')
      ->check(count);
  sub->add_flag("--json", a->json, "print one JSON object");
  sub->add_flag("--cold", a->cold, "do not page the mapped weights in before timing");
  sub->add_flag("!--no-warmup", a->warmup, "time the first pass of the shape (no uncounted warm-up run first)");
  sub->add_flag("--smoke", a->smoke, "tiny sizes and short probes (CI: checks that it runs)");
  add_command(sub, [a] { return run(*a); });
}

}  // namespace dsv4::cli
