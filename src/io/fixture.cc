#include "io/fixture.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "io/manifest.h"
#include "io/safetensors_writer.h"
#include "numeric/bf16.h"
#include "numeric/e2m1.h"
#include "numeric/e4m3.h"
#include "numeric/e8m0.h"
#include "numeric/pow2_scale.h"
#include "util/error.h"

namespace dsv4 {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

std::uint64_t stream_key(std::uint64_t seed, std::string_view name) { return splitmix64(seed) ^ fnv1a(name); }

// Irwin–Hall sum of four uniforms, standardised: mean 0, variance 1, bounded by ±2√3. Bounded
// values let the block scales be chosen so that no element ever saturates.
float normal_at(std::uint64_t key, std::uint64_t index) {
  std::uint64_t h = splitmix64(key + index * 0xD1B54A32D192ED03ull);
  float s = static_cast<float>(h & 0xFFFF) + static_cast<float>((h >> 16) & 0xFFFF) +
            static_cast<float>((h >> 32) & 0xFFFF) + static_cast<float>(h >> 48);
  return (s / 65535.0f - 2.0f) * 1.7320508f;
}
constexpr float kNormalBound = 3.4641017f;

// How a tensor's values are drawn: mean + std · normal, except the structured hc base.
struct Recipe {
  float mean = 0;
  float std = 1;
  bool hc_base = false;
};

bool ends_with(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

Recipe recipe_for(const TensorSpec& t, const ModelConfig& c) {
  const std::string& n = t.name;
  if (ends_with(n, "attn_sink")) return {0.0f, 0.5f};
  if (ends_with(n, "gate.bias") || ends_with(n, "gate.bias_vl")) return {0.0f, 0.02f};
  if (n.find("hc_") != std::string::npos) {
    if (ends_with(n, "_base")) return {0, 0.5f, true};
    if (ends_with(n, "_scale")) return {0.5f, 0.1f};
    return {0.0f, 1.0f / std::sqrt(static_cast<float>(t.shape[1]))};  // mixes of std ≈ 1
  }
  if (ends_with(n, "q_weight") || ends_with(n, "k_weight")) return {1.0f, 0.1f};
  if (t.shape.size() == 1) {
    if (ends_with(n, ".bias")) return {0.0f, 0.02f};
    if (ends_with(n, "norm.weight") || ends_with(n, "norm1.weight") || ends_with(n, "norm2.weight"))
      return {1.0f, 0.05f};
    return {0.0f, 1.0f};  // image_start / image_end / image_newline
  }
  // Tables whose rows are looked up rather than multiplied: unit-scale rows.
  if (n == "embed.weight" || ends_with(n, "markov_head.embed.weight") || t.component == Component::EngramTable)
    return {0.0f, 1.0f};
  std::int64_t fan_in = t.shape[1] * (t.dtype == DType::I8 ? 2 : 1);
  (void)c;
  return {0.0f, 1.0f / std::sqrt(static_cast<float>(fan_in))};
}

// The hc base: [0:hc] pre, [hc:2hc] post, then the hc × hc comb with a strong diagonal.
float hc_base_value(std::uint64_t key, std::int64_t i, std::int64_t hc) {
  float v = 0.5f * normal_at(key, static_cast<std::uint64_t>(i));
  if (i >= 2 * hc) {
    std::int64_t k = i - 2 * hc;
    if (k / hc == k % hc) v += 3.0f;
  }
  return v;
}

// Block scales of a quantised weight: the smallest power of two that keeps the bounded values
// inside the format (so nothing saturates), one step coarser for about one block in four.
struct BlockScales {
  std::uint64_t key;
  float base;  // power of two
  std::uint8_t e8m0(std::int64_t br, std::int64_t bc, std::int64_t n_bc) const {
    std::uint64_t h = splitmix64(key + static_cast<std::uint64_t>(br * n_bc + bc));
    float s = (h & 3) == 0 ? base * 2.0f : base;
    return e8m0_from_pow2(s);
  }
};

// Everything needed to produce one tensor's bytes from an element index.
struct Generator {
  const TensorSpec* spec;
  Recipe recipe;
  std::uint64_t key;       // value stream (shared by a weight and its scale)
  BlockScales scales{};    // for quantised weights and their scale tensors
  std::int64_t rows = 0, cols = 0;   // logical weight shape (FP4: unpacked columns)
  std::int64_t row_block = 32;       // weight rows per scale row
  std::int64_t scale_cols = 0;       // columns of the scale tensor
  std::int64_t hc = 4;

  float value(std::int64_t r, std::int64_t col) const {
    return recipe.mean + recipe.std * normal_at(key, static_cast<std::uint64_t>(r * cols + col));
  }
  float scale_of(std::int64_t r, std::int64_t col) const {
    return e8m0_to_f32(scales.e8m0(r / row_block, col / 32, scale_cols));
  }

  // Consecutive elements share a 32-wide scale block: compute each block's scale once.
  struct ScaleCache {
    const Generator* g;
    std::int64_t br = -1, bc = -1;
    float s = 0;
    float get(std::int64_t r, std::int64_t col) {
      std::int64_t nr = r / g->row_block, nc = col / 32;
      if (nr != br || nc != bc) {
        br = nr;
        bc = nc;
        s = e8m0_to_f32(g->scales.e8m0(nr, nc, g->scale_cols));
      }
      return s;
    }
  };

  void fill(std::uint8_t* dst, std::uint64_t first, std::uint64_t count) const {
    const TensorSpec& t = *spec;
    switch (t.dtype) {
      case DType::F32:
        for (std::uint64_t k = 0; k < count; ++k) {
          std::int64_t i = static_cast<std::int64_t>((first + k));
          float v = recipe.hc_base ? hc_base_value(key, i, hc) : recipe.mean + recipe.std * normal_at(key, i);
          std::memcpy(dst + 4 * k, &v, 4);
        }
        break;
      case DType::BF16:
        for (std::uint64_t k = 0; k < count; ++k) {
          BF16 b = bf16_from_f32(recipe.mean + recipe.std * normal_at(key, first + k));
          std::memcpy(dst + 2 * k, &b.bits, 2);
        }
        break;
      case DType::F8_E4M3: {
        ScaleCache sc{this};
        for (std::uint64_t k = 0; k < count; ++k) {
          std::int64_t i = static_cast<std::int64_t>(first + k), r = i / cols, col = i % cols;
          float q = std::clamp(value(r, col) / sc.get(r, col), -kE4m3Max, kE4m3Max);
          dst[k] = e4m3_from_f32(q);
        }
        break;
      }
      case DType::I8: {  // packed FP4: byte j holds elements 2j (low nibble) and 2j + 1 (high)
        ScaleCache sc{this};
        for (std::uint64_t k = 0; k < count; ++k) {
          std::int64_t byte = static_cast<std::int64_t>(first + k), r = byte / (cols / 2), col = 2 * (byte % (cols / 2));
          float s = sc.get(r, col);
          std::uint8_t lo = e2m1_from_f32(std::clamp(value(r, col) / s, -kE2m1Max, kE2m1Max));
          std::uint8_t hi = e2m1_from_f32(std::clamp(value(r, col + 1) / s, -kE2m1Max, kE2m1Max));
          dst[k] = e2m1_pack(lo, hi);
        }
        break;
      }
      case DType::F8_E8M0:
        for (std::uint64_t k = 0; k < count; ++k) {
          std::int64_t i = static_cast<std::int64_t>(first + k);
          dst[k] = scales.e8m0(i / scale_cols, i % scale_cols, scale_cols);
        }
        break;
      default: fail("fixture: no generator for dtype {} of '{}'", dtype_name(t.dtype), t.name);
    }
  }
};

std::string base_name(const std::string& n) {
  for (std::string_view suf : {".weight", ".scale"})
    if (n.ends_with(suf)) return n.substr(0, n.size() - suf.size());
  return n;
}

Generator make_generator(const TensorSpec& t, const Manifest& m, const ModelConfig& c, std::uint64_t seed) {
  Generator g;
  g.spec = &t;
  g.hc = c.hc_mult;
  // A scale tensor is generated from its weight's recipe so that the two agree.
  const TensorSpec* w = &t;
  if (t.is_scale) {
    w = m.find(base_name(t.name) + ".weight");
    if (w == nullptr) fail("fixture: scale '{}' has no weight (internal error)", t.name);
  }
  g.recipe = recipe_for(*w, c);
  g.key = stream_key(seed, w->name);
  if (w->shape.size() == 2) {
    g.rows = w->shape[0];
    g.cols = w->shape[1] * (w->dtype == DType::I8 ? 2 : 1);
  }
  if (w->dtype == DType::F8_E4M3 || w->dtype == DType::I8) {
    const TensorSpec* s = m.find(base_name(w->name) + ".scale");
    if (s == nullptr) fail("fixture: weight '{}' has no scale (internal error)", w->name);
    g.scale_cols = s->shape[1];
    g.row_block = (g.rows + s->shape[0] - 1) / s->shape[0];
    const float recip = w->dtype == DType::I8 ? kFp4RecipMax : kFp8RecipMax;
    g.scales = {stream_key(seed, base_name(w->name) + ".scale"),
                pow2_ceil_scale(kNormalBound * (std::abs(g.recipe.mean) + g.recipe.std) * recip)};
  }
  return g;
}

}  // namespace

float fixture_normal(std::uint64_t seed, std::string_view name, std::uint64_t index) {
  return normal_at(stream_key(seed, name), index);
}

void write_fixture(const ModelConfig& c, const FixtureOptions& opt) {
  namespace fs = std::filesystem;
  c.validate();
  const Manifest m = build_manifest(c);
  fs::create_directories(opt.out_dir);

  ShardedCheckpointWriter w(opt.out_dir, opt.max_shard_bytes);
  w.set_shard_metadata({{"format", "pt"}, {"dsv4_synthetic_seed", std::to_string(opt.seed)}});
  auto done = std::make_shared<std::uint64_t>(0);
  const std::uint64_t total = m.total_bytes();
  for (const TensorSpec& t : m.tensors) {
    Generator g = make_generator(t, m, c, opt.seed);
    const std::size_t esize = dtype_size(t.dtype);
    w.add(t.name, t.dtype, t.shape, [g, esize, done, total, &opt](std::span<std::uint8_t> dst, std::uint64_t off) {
      const std::uint64_t first = off / esize, count = dst.size() / esize;
      // Large chunks are split across threads; every element is a function of its index alone.
      const unsigned nt = count >= (1u << 16) ? std::max(1u, std::min(8u, std::thread::hardware_concurrency())) : 1u;
      std::vector<std::thread> pool;
      const std::uint64_t per = (count + nt - 1) / nt;
      for (unsigned i = 1; i < nt; ++i) {
        std::uint64_t b = std::min<std::uint64_t>(count, i * per), e = std::min<std::uint64_t>(count, b + per);
        if (b < e) pool.emplace_back([&g, &dst, esize, first, b, e] { g.fill(dst.data() + b * esize, first + b, e - b); });
      }
      g.fill(dst.data(), first, std::min(per, count));
      for (auto& th : pool) th.join();
      std::uint64_t before = *done;
      *done += dst.size();
      if (opt.progress && (*done >> 26) != (before >> 26)) opt.progress(*done, total);
    });
  }
  w.write();
  if (opt.progress) opt.progress(total, total);

  // config.json last but one: the inference-style file with every field spelled out.
  {
    nlohmann::json j = config_to_json(c);
    std::ofstream out(fs::path(opt.out_dir) / "config.json");
    out << j.dump(4) << "\n";
    if (!out) fail("cannot write '{}'", (fs::path(opt.out_dir) / "config.json").string());
  }
  for (const auto& [f, name] : opt.extra_files) {
    std::error_code ec;
    fs::copy_file(f, fs::path(opt.out_dir) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) fail("cannot copy '{}' into '{}': {}", f, opt.out_dir, ec.message());
  }
}

}  // namespace dsv4
