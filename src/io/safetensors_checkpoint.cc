// Checkpoint: resolving a checkpoint path and cross-checking a sharded index against its shards.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "io/safetensors.h"
#include "io/strict_json.h"
#include "util/error.h"

namespace dsv4 {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '{}'", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("cannot read '{}'", path);
  return std::move(ss).str();
}

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// A shard reference must be a plain file name in the index's directory: an index never gets to
// point outside its checkpoint.
bool is_plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

// The parsed, shape-checked index: tensor -> shard file name, and the optional total_size.
struct Index {
  std::map<std::string, std::string> weight_map;
  std::optional<std::uint64_t> total_size;
};

Index parse_index(const std::string& index_path) {
  const json j =
      parse_strict_json(read_text_file(index_path), fmt::format("shard index '{}'", index_path));
  if (!j.is_object())
    fail("shard index '{}': must be a JSON object, got {}", index_path, j.type_name());

  Index idx;
  auto meta = j.find("metadata");
  if (meta != j.end()) {
    if (!meta->is_object())
      fail("shard index '{}': \"metadata\" must be an object, got {}", index_path,
           meta->type_name());
    auto ts = meta->find("total_size");
    if (ts != meta->end()) {
      if (ts->is_number_unsigned())
        idx.total_size = ts->get<std::uint64_t>();
      else if (ts->is_number_integer() && ts->get<std::int64_t>() >= 0)
        idx.total_size = static_cast<std::uint64_t>(ts->get<std::int64_t>());
      else
        fail("shard index '{}': \"metadata.total_size\" must be a non-negative integer, got {}",
             index_path, ts->dump());
    }
  }

  auto wm = j.find("weight_map");
  if (wm == j.end()) fail("shard index '{}': missing \"weight_map\"", index_path);
  if (!wm->is_object())
    fail("shard index '{}': \"weight_map\" must be an object, got {}", index_path, wm->type_name());
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string())
      fail(
          "shard index '{}': weight_map entry for tensor '{}' must be a shard file name string, "
          "got {}",
          index_path, tensor, shard.type_name());
    const auto& name = shard.get_ref<const std::string&>();
    if (!is_plain_file_name(name))
      fail(
          "shard index '{}': tensor '{}' maps to '{}', which is not a plain file name in the "
          "index's directory",
          index_path, tensor, name);
    idx.weight_map.emplace(tensor, name);
  }
  return idx;
}

}  // namespace

void Checkpoint::add_shard(SafetensorsFile file) {
  shard_paths_.push_back(file.path());
  shards_.push_back(std::move(file));
  for (const TensorView& t : shards_.back().tensors()) {
    auto [it, inserted] = by_name_.emplace(t.name, &t);
    if (!inserted)
      fail("checkpoint '{}': tensor '{}' appears in two shards: '{}' and '{}'", path_, t.name,
           *it->second->file, *t.file);
    total_bytes_ += t.bytes.size();
  }
}

Checkpoint Checkpoint::open(const std::string& path) {
  Checkpoint ck;
  ck.path_ = path;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) fail("checkpoint '{}' does not exist", path);

  if (fs::is_regular_file(st)) {
    ck.add_shard(SafetensorsFile(path));
    return ck;
  }
  if (!fs::is_directory(st))
    fail("checkpoint '{}' is neither a safetensors file nor a directory", path);

  const fs::path dir(path);
  const std::string index_path = (dir / kIndexName).string();
  if (!is_regular(index_path)) {
    const std::string single = (dir / kSingleName).string();
    if (!is_regular(single))
      fail("checkpoint directory '{}' has neither {} nor {}", path, kIndexName, kSingleName);
    ck.add_shard(SafetensorsFile(single));
    return ck;
  }

  const Index idx = parse_index(index_path);
  std::set<std::string> shard_names;  // sorted: shards load in a deterministic order
  for (const auto& [tensor, shard] : idx.weight_map) {
    if (shard_names.insert(shard).second && !is_regular(dir / shard))
      fail("shard index '{}': shard '{}' (listed for tensor '{}') does not exist", index_path,
           shard, tensor);
  }
  // add_shard rejects a tensor present in two shards before the index comparison below, so that
  // case reports as such rather than as an index mismatch.
  for (const std::string& shard : shard_names)
    ck.add_shard(SafetensorsFile((dir / shard).string()));

  for (std::size_t i = 0; i < ck.shards_.size(); ++i) {
    const std::string shard = fs::path(ck.shard_paths_[i]).filename().string();
    for (const TensorView& t : ck.shards_[i].tensors()) {
      auto it = idx.weight_map.find(t.name);
      if (it == idx.weight_map.end())
        fail("shard index '{}': tensor '{}' is in shard '{}' but not in weight_map", index_path,
             t.name, shard);
      if (it->second != shard)
        fail("shard index '{}': tensor '{}' is in shard '{}' but weight_map puts it in '{}'",
             index_path, t.name, shard, it->second);
    }
  }
  for (const auto& [tensor, shard] : idx.weight_map)
    if (ck.by_name_.find(tensor) == ck.by_name_.end())
      fail(
          "shard index '{}': tensor '{}' is listed in weight_map for shard '{}' but that shard "
          "has no such tensor",
          index_path, tensor, shard);
  if (idx.total_size && *idx.total_size != ck.total_bytes_)
    fail("shard index '{}': metadata.total_size is {} but the shards' tensors hold {} bytes",
         index_path, *idx.total_size, ck.total_bytes_);
  return ck;
}

const TensorView* Checkpoint::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const TensorView*> Checkpoint::tensors() const {
  std::vector<const TensorView*> out;
  out.reserve(by_name_.size());
  for (const auto& [_, t] : by_name_) out.push_back(t);
  return out;
}

std::size_t Checkpoint::tensor_count() const { return by_name_.size(); }
std::uint64_t Checkpoint::total_bytes() const { return total_bytes_; }
const std::vector<std::string>& Checkpoint::shard_paths() const { return shard_paths_; }
const std::vector<SafetensorsFile>& Checkpoint::shards() const { return shards_; }
const std::string& Checkpoint::path() const { return path_; }

}  // namespace dsv4
