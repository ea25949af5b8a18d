#include "io/checkpoint_validation.h"

#include <filesystem>

#include <fmt/format.h>

#include "io/config.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace dsv4 {
namespace {

std::string shape_str(const std::vector<std::int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::string where(const TensorView& v) { return v.file ? std::filesystem::path(*v.file).filename().string() : "?"; }

}  // namespace

std::vector<std::string> manifest_mismatches(const Checkpoint& ck, const Manifest& m) {
  std::vector<std::string> out;
  for (const TensorSpec& t : m.tensors) {
    const TensorView* v = ck.find(t.name);
    if (v == nullptr) {
      out.push_back(fmt::format("missing tensor '{}' ({} {})", t.name, dtype_name(t.dtype), shape_str(t.shape)));
      continue;
    }
    if (v->dtype != t.dtype)
      out.push_back(fmt::format("tensor '{}' in {}: dtype {}, expected {}", t.name, where(*v), dtype_name(v->dtype),
                                dtype_name(t.dtype)));
    if (v->shape != t.shape)
      out.push_back(fmt::format("tensor '{}' in {}: shape {}, expected {}", t.name, where(*v), shape_str(v->shape),
                                shape_str(t.shape)));
  }
  for (const TensorView* v : ck.tensors())
    if (m.find(v->name) == nullptr)
      out.push_back(fmt::format("unexpected tensor '{}' in {} ({} {}): not part of this architecture", v->name, where(*v),
                                dtype_name(v->dtype), shape_str(v->shape)));
  return out;
}

ModelDirSummary validate_model_dir(const std::string& dir, const ModelConfig& c) {
  Checkpoint ck = Checkpoint::open(dir);
  Manifest m = build_manifest(c);
  std::vector<std::string> bad = manifest_mismatches(ck, m);
  if (!bad.empty()) {
    constexpr std::size_t kShown = 40;
    std::string list;
    for (std::size_t i = 0; i < bad.size() && i < kShown; ++i) list += "\n  - " + bad[i];
    if (bad.size() > kShown) list += fmt::format("\n  … and {} more", bad.size() - kShown);
    fail("model '{}' does not match the architecture of its config ({} problem{}):{}", dir, bad.size(),
         bad.size() == 1 ? "" : "s", list);
  }
  ModelDirSummary s;
  s.shards = static_cast<std::int64_t>(ck.shard_paths().size());
  s.tensors = static_cast<std::int64_t>(ck.tensor_count());
  s.bytes = ck.total_bytes();
  s.has_tokenizer = std::filesystem::exists(std::filesystem::path(dir) / "tokenizer.json");
  return s;
}

}  // namespace dsv4
