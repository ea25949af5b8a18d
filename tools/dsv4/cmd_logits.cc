// dsv4 logits / dsv4 run (token ids in, token ids or logits out): the forward pass from the
// command line, with every switch of the numerics.
//
//   dsv4 logits -m DIR --ids 0,5,9|@FILE [--mode prefill|decode|chunk:N] [--numerics strict|fast]
//               [--index-keys own|reference] [--attn-slots compact|reference] [--compat reference]
//               [-t THREADS] --out FILE.npy [--dump-dir DIR]
//   dsv4 run    -m DIR --ids ... -n N --temp 0 [same switches] [--json]
//
// logits writes float32 [T, vocab] (teacher forcing, every position). --dump-dir writes the named
// intermediates of each call as NAME.npy (one call) or call{k}.NAME.npy (several), the names the
// oracle's `dump` uses. run prints the greedy continuation (text prompts and sampling: dsv4 run
// with -p, later).
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
#include "model/model.h"
#include "util/error.h"
#include "util/npy.h"

namespace dsv4::cli {
namespace {

struct ForwardArgs {
  std::string model_dir, ids, mode = "prefill", numerics = "strict", index_keys = "own",
                             attn_slots = "compact", compat;
  std::size_t threads = 1;
};

void add_forward_options(CLI::App* sub, ForwardArgs& a) {
  sub->add_option("-m,--model", a.model_dir, "model directory")->required()->check(CLI::ExistingDirectory);
  sub->add_option("--ids", a.ids, "comma-separated token ids, or @FILE")->required();
  sub->add_option("--mode", a.mode, "prefill (one call), decode (one token per call) or chunk:N");
  sub->add_option("--numerics", a.numerics, "strict (bit-exact with the oracle) or fast")
      ->check(CLI::IsMember({"strict", "fast"}));
  sub->add_option("--index-keys", a.index_keys, "own (default) or reference (spec §16.2)")
      ->check(CLI::IsMember({"own", "reference"}));
  sub->add_option("--attn-slots", a.attn_slots, "compact (default) or reference (spec §16.4)")
      ->check(CLI::IsMember({"compact", "reference"}));
  sub->add_option("--compat", a.compat, "reference: both --index-keys and --attn-slots reference")
      ->check(CLI::IsMember({"reference"}));
  sub->add_option("-t,--threads", a.threads, "worker threads (results do not depend on it)");
}

std::vector<std::int64_t> parse_ids(std::string text) {
  if (!text.empty() && text[0] == '@') {
    std::ifstream f(text.substr(1));
    if (!f) fail("--ids: cannot read {}", text.substr(1));
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  for (char& ch : text)
    if (ch == ',' || ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
  std::istringstream in(text);
  std::vector<std::int64_t> ids;
  std::string tok;
  while (in >> tok) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(tok, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != tok.size()) fail("--ids: '{}' is not a token id", tok);
    ids.push_back(v);
  }
  if (ids.empty()) fail("--ids: no token ids given");
  return ids;
}

// Chunk size of --mode: 0 = the whole prompt in one call.
std::size_t parse_mode(const std::string& mode) {
  if (mode == "prefill") return 0;
  if (mode == "decode") return 1;
  if (mode.rfind("chunk:", 0) == 0) {
    const std::string n = mode.substr(6);
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(n, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == n.size() && v >= 1) return static_cast<std::size_t>(v);
  }
  fail("--mode must be prefill, decode or chunk:N with N ≥ 1, not '{}'", mode);
}

std::unique_ptr<Model> load_model(const ForwardArgs& a, std::size_t positions) {
  ModelOptions o;
  o.forward.numerics = parse_numerics(a.numerics);
  o.forward.index_keys = parse_index_keys(a.compat.empty() ? a.index_keys : "reference");
  o.forward.attn_slots = parse_attn_slots(a.compat.empty() ? a.attn_slots : "reference");
  o.threads = a.threads;
  const ModelConfig c = load_model_config_dir(a.model_dir);
  o.max_positions = std::max<std::size_t>(static_cast<std::size_t>(c.max_seq_len), positions);
  return Model::load(a.model_dir, o);
}

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
  static ForwardArgs la;
  static std::string out, dump_dir, layer_errors;
  add_forward_options(lg, la);
  lg->add_option("--out", out, "output .npy (float32 [T, vocab])")->required();
  lg->add_option("--dump-dir", dump_dir, "write named intermediates as .npy files into this directory");
  lg->add_option("--layer-errors", layer_errors,
                 "also run every layer in fast numerics on the strict layer's inputs and write the "
                 "relative errors as JSON {\"calls\": [[per layer]...]} (the logits stay strict)");
  add_command(lg, [] {
    const auto ids = parse_ids(la.ids);
    const std::size_t chunk = parse_mode(la.mode);
    if (!dump_dir.empty()) std::filesystem::create_directories(dump_dir);
    auto m = load_model(la, ids.size());
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

  auto* run = app.add_subcommand("run", "greedy continuation of token ids");
  static ForwardArgs ra;
  static std::size_t n_new = 16;
  static double temp = 0.0;
  static bool json = false;
  static bool dspark = false;
  static std::string dspark_out;
  add_forward_options(run, ra);
  run->add_flag("--dspark", dspark,
                "also run the DSpark draft head after every step (seeded by the prefill; prints "
                "its drafts and confidences; needs --mode prefill)");
  run->add_option("--dspark-out", dspark_out, "with --dspark: the drafts' logits, float32 [steps, block, vocab]");
  run->add_option("-n,--n-predict", n_new, "tokens to generate");
  run->add_option("--temp", temp, "temperature (only 0, greedy, for now)");
  run->add_flag("--json", json, "print one JSON object");
  add_command(run, [] {
    if (temp != 0.0) fail("--temp {}: only greedy decoding (--temp 0) exists so far", temp);
    const auto ids = parse_ids(ra.ids);
    const std::size_t chunk = parse_mode(ra.mode);
    auto m = load_model(ra, ids.size() + n_new);
    auto seq = m->new_sequence(ids.size() + n_new);
    const auto V = static_cast<std::size_t>(m->config().vocab_size);
    const auto t0 = std::chrono::steady_clock::now();
    if (dspark && chunk != 0) fail("--dspark needs --mode prefill (the draft rings are seeded by one prefill)");
    auto logits = feed(*m, *seq, ids, chunk, "");
    const auto t1 = std::chrono::steady_clock::now();
    std::vector<std::int64_t> out;
    nlohmann::json drafts = nlohmann::json::array();
    std::vector<float> draft_logits;
    std::size_t draft_steps = 0;
    // DSpark (spec §9.5): seeded with the prefill's hiddens, then one draft per decode step.
    auto spec = [&](std::int64_t chosen, bool seed) {
      if (!dspark) return;
      const std::int64_t sp = seed ? 0 : seq->pos() - 1;
      SpecOutput o = m->forward_spec(*seq, chosen, sp);
      if (seed) return;
      drafts.push_back({{"start_pos", sp}, {"ids", o.ids}, {"confidence", o.confidence}});
      draft_logits.insert(draft_logits.end(), o.logits.begin(), o.logits.end());
      ++draft_steps;
    };
    auto argmax = [&](const float* lg) {
      std::size_t best = 0;
      for (std::size_t v = 1; v < V; ++v)
        if (lg[v] > lg[best]) best = v;  // lowest index on ties
      return static_cast<std::int64_t>(best);
    };
    std::int64_t next = argmax(logits.data() + (ids.size() - 1) * V);
    spec(next, true);
    for (std::size_t k = 0; k < n_new; ++k) {
      out.push_back(next);
      if (k + 1 == n_new) break;
      const auto lg = m->forward(*seq, std::span<const std::int64_t>(&next, 1));
      next = argmax(lg.data());
      spec(next, false);
    }
    if (!dspark_out.empty()) {
      const std::int64_t shape[3] = {static_cast<std::int64_t>(draft_steps), m->config().dspark_block_size,
                                     static_cast<std::int64_t>(V)};
      write_npy_f32(dspark_out, shape, draft_logits);
    }
    const auto t2 = std::chrono::steady_clock::now();
    const double pre = std::chrono::duration<double>(t1 - t0).count();
    const double dec = std::chrono::duration<double>(t2 - t1).count();
    if (json) {
      nlohmann::json j;
      j["prompt_ids"] = ids;
      j["generated_ids"] = out;
      j["mode"] = ra.mode;
      j["numerics"] = std::string(numerics_name(m->options().numerics));
      j["index_keys"] = std::string(index_keys_name(m->options().index_keys));
      j["attn_slots"] = std::string(attn_slots_name(m->options().attn_slots));
      if (dspark) j["dspark"] = drafts;
      j["timings"] = {{"prefill_s", pre}, {"decode_s", dec},
                      {"prefill_tokens_per_s", ids.size() / pre},
                      {"decode_tokens_per_s", out.size() > 1 ? (out.size() - 1) / dec : 0.0}};
      std::cout << j.dump() << "\n";
    } else {
      for (std::size_t i = 0; i < out.size(); ++i) std::cout << (i ? "," : "") << out[i];
      std::cout << "\n";
      std::fprintf(stderr, "prefill %zu tokens %.2f s, decode %zu tokens %.2f s\n", ids.size(), pre,
                   out.size() - 1, dec);
    }
    return 0;
  });
}

}  // namespace dsv4::cli
