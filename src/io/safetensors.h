#pragma once
// Reading safetensors checkpoints: one file, or a Hugging Face sharded directory.
//
// File layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON (possibly right-padded
// with spaces), then the data section. The JSON object maps each tensor name to
//   {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]}
// (offsets relative to the data section's start) and may carry "__metadata__": {str: str}.
//
// Validation is strict; every violation throws dsv4::Error naming the file and, where there is
// one, the tensor. Beyond well-formed JSON with exactly the three fields per tensor, a known
// dtype, non-negative dims and overflow-free sizes, the layout rule is:
//
//   Tiling rule: sort the tensors by (begin, end). The first must begin at 0, each next one must
//   begin exactly where the previous one ended, and the last must end exactly at the end of the
//   file. So ranges never overlap, leave no holes, and no byte of the data section is unowned.
//   Zero-size tensors (begin == end) may sit at any boundary, including several at one offset.
//   This matches the Rust `safetensors` library, which rejects the same files.
//
// No copies: TensorView::bytes points straight into the read-only file map, so weights are paged
// in on demand. ALIGNMENT IS NOT GUARANTEED: the format packs tensors back to back after a header
// of arbitrary length, so a tensor's bytes may start at any address (our writer pads the header
// to 8 bytes, but tensors after an odd-sized one are still misaligned, and other writers pad
// nothing). Kernels must use unaligned loads (memcpy / loadu) or copy into aligned buffers.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/dtype.h"

namespace dsv4 {

// Headers larger than this are rejected as corrupt before anything is parsed (the Rust library
// uses the same bound). The real checkpoint's shards have headers of a few hundred KiB.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// One tensor inside a safetensors file. The views stay valid while the SafetensorsFile (or
// Checkpoint) that produced them is alive; moving that owner does not invalidate them.
struct TensorView {
  std::string name;
  DType dtype = DType::U8;
  std::vector<std::int64_t> shape;      // [] for a scalar
  std::span<const std::uint8_t> bytes;  // exactly numel() * dtype_size(dtype) bytes, unaligned
  const std::string* file = nullptr;    // path of the owning file; null from parse_safetensors
  std::uint64_t file_offset = 0;        // absolute offset of `bytes` within the file

  // Product of the dims (1 for a scalar). Validated not to overflow for parsed tensors.
  std::int64_t numel() const;
};

// Byte size of a tensor of `shape` and `dtype`, or nullopt if a dim is negative or the element
// count or byte count does not fit in 63 bits.
std::optional<std::uint64_t> tensor_byte_size(DType dtype, std::span<const std::int64_t> shape);

// The result of validating a whole safetensors file image.
struct SafetensorsHeader {
  std::vector<TensorView> tensors;              // in data-offset order (file order)
  std::map<std::string, std::string> metadata;  // "__metadata__", empty if absent
  std::size_t data_offset = 0;                  // where the data section starts (8 + N)
};

// Parses and validates a whole file image (used by the mmap reader and the fuzzer); the views
// point into `file_bytes`. `label` names the file in error messages. Never reads outside
// `file_bytes`; throws dsv4::Error on any violation described at the top of this file.
SafetensorsHeader parse_safetensors(std::span<const std::uint8_t> file_bytes,
                                    const std::string& label);

// A memory-mapped, validated safetensors file. Movable, not copyable; a moved-from handle may
// only be destroyed or assigned to.
class SafetensorsFile {
 public:
  // Maps and validates `path`; throws dsv4::Error naming the path.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;

  const std::string& path() const;
  const std::vector<TensorView>& tensors() const;       // in data-offset order
  const TensorView* find(std::string_view name) const;  // null if absent
  const std::map<std::string, std::string>& metadata() const;
  std::size_t data_offset() const;
  std::uint64_t data_bytes() const;  // size of the data section = sum of tensor sizes
  std::span<const std::uint8_t> file_bytes() const;  // the whole mapped file

 private:
  struct State;
  std::unique_ptr<State> s_;  // heap-held so TensorView::file and the name index survive moves
};

// A checkpoint: one .safetensors file, a directory holding model.safetensors.index.json (HF
// sharded layout: {"metadata": {"total_size": N}, "weight_map": {tensor: shard-file}}), or a
// directory holding a single model.safetensors. The index wins if a directory has both.
//
// Index rules (each violation throws dsv4::Error naming the index and the tensor / shard):
//   - valid strict JSON object (no duplicate keys anywhere) with an object "weight_map" whose
//     values are strings naming plain files in the same directory (no '/', not "." or "..");
//     "metadata" is optional but must be an object; other top-level keys are ignored;
//   - every listed shard exists and is a valid safetensors file;
//   - no tensor appears in two shards; every tensor of a shard is in weight_map and mapped to
//     that shard; every weight_map entry is present in the shard it names;
//   - metadata.total_size, if present, is a non-negative integer equal to the sum of the
//     tensors' byte sizes.
class Checkpoint {
 public:
  static Checkpoint open(const std::string& path);

  const TensorView* find(std::string_view name) const;  // null if absent
  std::vector<const TensorView*> tensors() const;       // sorted by name
  std::size_t tensor_count() const;
  std::uint64_t total_bytes() const;                    // sum of tensor byte sizes
  const std::vector<std::string>& shard_paths() const;  // sorted; one entry if unsharded
  const std::vector<SafetensorsFile>& shards() const;   // parallel to shard_paths()
  const std::string& path() const;                      // as passed to open()

 private:
  Checkpoint() = default;
  void add_shard(SafetensorsFile file);

  std::string path_;
  std::vector<std::string> shard_paths_;
  std::vector<SafetensorsFile> shards_;
  // Keys view the names inside shards_' heap state, which stays put when shards_ moves.
  std::map<std::string_view, const TensorView*> by_name_;
  std::uint64_t total_bytes_ = 0;
};

}  // namespace dsv4
