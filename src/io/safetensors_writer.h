#pragma once
// Writing safetensors files (see safetensors.h for the format) without holding tensors in memory.
//
// Tensors are registered first with a fill callback; write() then streams each tensor's bytes
// through one reusable chunk buffer of kChunkBytes, so memory use is independent of tensor size.
//
// Output is deterministic: the same registrations (same order, same bytes) give the same file.
//   - Data section: tensors in registration order, back to back (the tiling rule leaves no room
//     for padding between tensors, so tensor alignment is not guaranteed — see safetensors.h).
//   - Header: compact JSON, "__metadata__" first (omitted when empty), then tensors sorted by
//     name (byte order), each as {"dtype":..,"shape":[..],"data_offsets":[b,e]}; padded with
//     spaces to a multiple of 8 bytes so the data section starts 8-aligned in the file.
// Files are written through AtomicFileWriter: a failed or interrupted write never leaves a
// partial file under the final name.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "io/dtype.h"

namespace dsv4 {

// Produces bytes [byte_offset, byte_offset + dst.size()) of one tensor into dst. Called on
// consecutive chunks in increasing offset order, each at most kChunkBytes long; never for a
// zero-size tensor. dst is zeroed before each call. May throw; the write is then abandoned.
using TensorFill = std::function<void(std::span<std::uint8_t> dst, std::uint64_t byte_offset)>;

// A registered tensor waiting to be written (shared by both writers).
struct PendingTensor {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t nbytes;
  TensorFill fill;
};

class SafetensorsWriter {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

  // Registers a tensor. Throws dsv4::Error for a duplicate or reserved ("__metadata__") name,
  // a negative dim, or a byte size that overflows.
  void add(std::string name, DType dtype, std::vector<std::int64_t> shape, TensorFill fill);
  // Convenience: the bytes are copied from `data` at write() time, so `data` must outlive write().
  // Throws dsv4::Error if data.size() does not match the shape.
  void add_bytes(std::string name, DType dtype, std::vector<std::int64_t> shape,
                 std::span<const std::uint8_t> data);
  // "__metadata__" entries (string to string); empty means no "__metadata__" key.
  void set_metadata(std::map<std::string, std::string> metadata);

  std::size_t tensor_count() const { return tensors_.size(); }
  std::uint64_t data_bytes() const { return data_bytes_; }

  // The exact header bytes write() emits (JSON plus padding, without the 8-byte length).
  std::string header() const;
  // Writes the file at `path` (replacing any existing file). Throws dsv4::Error on I/O failure
  // or if the header would exceed kMaxSafetensorsHeaderBytes; rethrows what a fill throws.
  void write(const std::string& path) const;

 private:
  using Pending = PendingTensor;
  std::vector<Pending> tensors_;
  std::map<std::string, std::size_t> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
  std::uint64_t data_bytes_ = 0;
};

// Writes a Hugging Face style sharded checkpoint into `dir`:
//   model-00001-of-0000N.safetensors ... (1-based, 5-digit numbers), then
//   model.safetensors.index.json = {"metadata": {"total_size": S}, "weight_map": {tensor: shard}}
// where S is the sum of tensor byte sizes. Tensors fill shards greedily in registration order:
// a new shard starts when the next tensor would push the current one past max_shard_bytes (a
// tensor larger than the limit gets a shard of its own). The index is written last, so its
// presence means every shard is complete. With no tensors, only the index (empty weight_map) is
// written. Shards left in `dir` by an earlier write with a different N are not removed.
class ShardedCheckpointWriter {
 public:
  ShardedCheckpointWriter(std::string dir, std::uint64_t max_shard_bytes);

  void add(std::string name, DType dtype, std::vector<std::int64_t> shape, TensorFill fill);
  void add_bytes(std::string name, DType dtype, std::vector<std::int64_t> shape,
                 std::span<const std::uint8_t> data);
  // "__metadata__" written into every shard; defaults to {"format": "pt"} (what HF tooling
  // expects); an empty map writes none.
  void set_shard_metadata(std::map<std::string, std::string> metadata);

  // The shard assignment write() uses: for each shard, its tensors' registration indices.
  std::vector<std::vector<std::size_t>> plan() const;
  // "model-0000<index+1>-of-0000<count>.safetensors"; index is 0-based. Throws past 99999.
  static std::string shard_file_name(std::size_t index, std::size_t count);

  // Creates `dir` if needed, writes all shards and the index; returns the shard paths.
  std::vector<std::string> write() const;

 private:
  using Pending = PendingTensor;
  std::string dir_;
  std::uint64_t max_shard_bytes_;
  std::vector<Pending> tensors_;
  std::map<std::string, std::size_t> index_;
  std::map<std::string, std::string> shard_metadata_{{"format", "pt"}};
};

}  // namespace dsv4
