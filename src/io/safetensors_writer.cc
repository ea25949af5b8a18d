// SafetensorsWriter and ShardedCheckpointWriter: deterministic, streaming, crash-safe output.
#include "io/safetensors_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "io/atomic_file_writer.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace dsv4 {

namespace {

using json = nlohmann::json;

// JSON string literal for `s`; throws dsv4::Error if `s` is not valid UTF-8 (the format
// requires a UTF-8 header, and a reader would reject the file).
std::string json_string(const std::string& s, std::string_view what) {
  try {
    return json(s).dump();
  } catch (const json::exception&) {
    fail("safetensors writer: {} '{}' is not valid UTF-8", what, s);
  }
}

// Shared registration checks; returns the tensor's byte size.
std::uint64_t check_registration(const std::map<std::string, std::size_t>& index,
                                 const std::string& name, DType dtype,
                                 const std::vector<std::int64_t>& shape, const TensorFill& fill) {
  if (name == "__metadata__")
    fail("safetensors writer: tensor name '__metadata__' is reserved by the format");
  if (index.count(name)) fail("safetensors writer: tensor '{}' registered twice", name);
  json_string(name, "tensor name");
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0)
      fail("safetensors writer: tensor '{}': shape[{}] = {} is negative", name, i, shape[i]);
  auto nbytes = tensor_byte_size(dtype, shape);
  if (!nbytes) fail("safetensors writer: tensor '{}': byte size overflows", name);
  if (*nbytes > 0 && !fill) fail("safetensors writer: tensor '{}': no fill callback", name);
  return *nbytes;
}

TensorFill fill_from_bytes(const std::string& name, DType dtype,
                           const std::vector<std::int64_t>& shape,
                           std::span<const std::uint8_t> data) {
  auto nbytes = tensor_byte_size(dtype, shape);
  if (nbytes && *nbytes != data.size())
    fail("safetensors writer: tensor '{}': {} bytes given but shape and dtype {} need {}", name,
         data.size(), dtype_name(dtype), *nbytes);
  return [data](std::span<std::uint8_t> dst, std::uint64_t off) {
    std::memcpy(dst.data(), data.data() + off, dst.size());
  };
}

void put_le64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

// ---- SafetensorsWriter ----

void SafetensorsWriter::add(std::string name, DType dtype, std::vector<std::int64_t> shape,
                            TensorFill fill) {
  const std::uint64_t nbytes = check_registration(index_, name, dtype, shape, fill);
  index_.emplace(name, tensors_.size());
  tensors_.push_back({std::move(name), dtype, std::move(shape), nbytes, std::move(fill)});
  data_bytes_ += nbytes;
}

void SafetensorsWriter::add_bytes(std::string name, DType dtype, std::vector<std::int64_t> shape,
                                  std::span<const std::uint8_t> data) {
  TensorFill fill = fill_from_bytes(name, dtype, shape, data);
  add(std::move(name), dtype, std::move(shape), std::move(fill));
}

void SafetensorsWriter::set_metadata(std::map<std::string, std::string> metadata) {
  for (const auto& [k, v] : metadata) {
    json_string(k, "metadata key");
    json_string(v, "metadata value");
  }
  metadata_ = std::move(metadata);
}

std::string SafetensorsWriter::header() const {
  // Data offsets follow registration order; the JSON lists tensors by name (index_ is sorted).
  std::vector<std::uint64_t> begin(tensors_.size());
  std::uint64_t pos = 0;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    begin[i] = pos;
    pos += tensors_[i].nbytes;
  }

  std::string h = "{";
  bool first = true;
  if (!metadata_.empty()) {
    h += "\"__metadata__\":{";
    for (const auto& [k, v] : metadata_) {
      if (!first) h += ',';
      first = false;
      h += json(k).dump() + ":" + json(v).dump();
    }
    h += '}';
  }
  for (const auto& [name, i] : index_) {
    const Pending& t = tensors_[i];
    if (h.size() > 1) h += ',';
    h += json(name).dump();
    h += fmt::format(":{{\"dtype\":\"{}\",\"shape\":[", dtype_name(t.dtype));
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      if (d) h += ',';
      h += std::to_string(t.shape[d]);
    }
    h += fmt::format("],\"data_offsets\":[{},{}]}}", begin[i], begin[i] + t.nbytes);
  }
  h += '}';
  h.resize((h.size() + 7) / 8 * 8, ' ');  // data section starts at a multiple of 8
  return h;
}

void SafetensorsWriter::write(const std::string& path) const {
  const std::string h = header();
  if (h.size() > kMaxSafetensorsHeaderBytes)
    fail("safetensors writer: '{}': header of {} bytes exceeds the {}-byte limit readers accept",
         path, h.size(), kMaxSafetensorsHeaderBytes);

  AtomicFileWriter out(path);
  std::uint8_t len[8];
  put_le64(len, h.size());
  out.write(std::span<const std::uint8_t>(len, 8));
  out.write(h);

  std::uint64_t largest = 0;
  for (const Pending& t : tensors_) largest = std::max(largest, t.nbytes);
  std::vector<std::uint8_t> buf(
      static_cast<std::size_t>(std::min<std::uint64_t>(largest, kChunkBytes)));
  for (const Pending& t : tensors_) {
    for (std::uint64_t off = 0; off < t.nbytes;) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunkBytes, t.nbytes - off));
      std::span<std::uint8_t> chunk(buf.data(), n);
      std::fill(chunk.begin(), chunk.end(), std::uint8_t{0});  // untouched bytes stay zero
      t.fill(chunk, off);
      out.write(chunk);
      off += n;
    }
  }
  out.commit();
}

// ---- ShardedCheckpointWriter ----

ShardedCheckpointWriter::ShardedCheckpointWriter(std::string dir, std::uint64_t max_shard_bytes)
    : dir_(std::move(dir)), max_shard_bytes_(max_shard_bytes) {
  if (max_shard_bytes_ == 0) fail("sharded checkpoint writer: max_shard_bytes must be positive");
}

void ShardedCheckpointWriter::add(std::string name, DType dtype, std::vector<std::int64_t> shape,
                                  TensorFill fill) {
  const std::uint64_t nbytes = check_registration(index_, name, dtype, shape, fill);
  index_.emplace(name, tensors_.size());
  tensors_.push_back({std::move(name), dtype, std::move(shape), nbytes, std::move(fill)});
}

void ShardedCheckpointWriter::add_bytes(std::string name, DType dtype,
                                        std::vector<std::int64_t> shape,
                                        std::span<const std::uint8_t> data) {
  TensorFill fill = fill_from_bytes(name, dtype, shape, data);
  add(std::move(name), dtype, std::move(shape), std::move(fill));
}

void ShardedCheckpointWriter::set_shard_metadata(std::map<std::string, std::string> metadata) {
  shard_metadata_ = std::move(metadata);
}

std::vector<std::vector<std::size_t>> ShardedCheckpointWriter::plan() const {
  std::vector<std::vector<std::size_t>> shards;
  std::uint64_t used = 0;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const std::uint64_t n = tensors_[i].nbytes;
    // Start a new shard when used + n would exceed the limit (written so it cannot overflow).
    const std::uint64_t room = max_shard_bytes_ - std::min(used, max_shard_bytes_);
    if (shards.empty() || (!shards.back().empty() && n > room)) {
      shards.emplace_back();
      used = 0;
    }
    shards.back().push_back(i);
    used += n;
  }
  return shards;
}

std::string ShardedCheckpointWriter::shard_file_name(std::size_t index, std::size_t count) {
  if (count > 99999 || index >= count)
    fail("sharded checkpoint writer: shard {} of {} cannot be named with 5 digits", index + 1,
         count);
  return fmt::format("model-{:05d}-of-{:05d}.safetensors", index + 1, count);
}

std::vector<std::string> ShardedCheckpointWriter::write() const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) fail("cannot create checkpoint directory '{}': {}", dir_, ec.message());

  const auto shards = plan();
  json weight_map = json::object();
  std::uint64_t total = 0;
  std::vector<std::string> paths;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shard_file_name(s, shards.size());
    SafetensorsWriter w;
    w.set_metadata(shard_metadata_);
    for (std::size_t i : shards[s]) {
      const Pending& t = tensors_[i];
      w.add(t.name, t.dtype, t.shape, t.fill);
      weight_map[t.name] = file;
      total += t.nbytes;
    }
    const std::string path = (std::filesystem::path(dir_) / file).string();
    w.write(path);
    paths.push_back(path);
  }

  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", std::move(weight_map)}};
  AtomicFileWriter out((std::filesystem::path(dir_) / "model.safetensors.index.json").string());
  out.write(index.dump(2) + "\n");
  out.commit();
  return paths;
}

}  // namespace dsv4
