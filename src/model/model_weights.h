#pragma once
// The checkpoint of a model directory, opened for the forward pass: the config, the validated
// memory-mapped tensors, and typed views of them.
//
// Weights stay where the map put them, in their stored formats (BF16, F32, E4M3 + E8M0 blocks,
// packed E2M1 + E8M0): linear() hands the kernels a WeightRef straight into the map. Only small
// per-channel parameters (norm weights, biases, sinks, hyper-connection projections) are decoded
// into float vectors, and a large BF16/F32 tensor is copied only when the file puts it at an
// address its element type cannot be read from (safetensors does not align tensors; see
// io/safetensors.h) — copied_bytes() reports how much that cost.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/config.h"
#include "io/layer_roles.h"
#include "io/safetensors.h"
#include "kernels/linear.h"
#include "numeric/bf16.h"

namespace dsv4 {

class ModelWeights {
 public:
  // Loads the config of `dir` (inference/config.json or config.json), opens the checkpoint and
  // checks every tensor against the manifest (names, dtypes, shapes). Throws dsv4::Error listing
  // every problem.
  static std::unique_ptr<ModelWeights> open(const std::string& dir);
  ModelWeights(const ModelWeights&) = delete;
  ModelWeights& operator=(const ModelWeights&) = delete;

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const std::vector<LayerRole>& roles() const { return roles_; }
  const Checkpoint& checkpoint() const { return *checkpoint_; }

  // The tensor `name`; throws dsv4::Error naming it if absent.
  const TensorView& tensor(std::string_view name) const;
  bool has(std::string_view name) const { return checkpoint_->find(name) != nullptr; }

  // `base`.weight (+ `base`.scale for FP8/FP4) as a kernel weight: F8_E4M3 → FP8 with 32×32 E8M0
  // blocks, I8 → packed FP4 with 1×32 E8M0 blocks, BF16, F32.
  kernels::WeightRef linear(std::string_view base) const;
  // A BF16 or F32 matrix tensor by its full name, as a kernel weight.
  kernels::WeightRef matrix(std::string_view name) const;
  // A BF16/F32 tensor's values as floats (for small parameters).
  std::vector<float> floats(std::string_view name) const;
  // A BF16 tensor as bf16 values readable in place (copied if misaligned).
  std::span<const BF16> bf16(std::string_view name) const;

  std::uint64_t copied_bytes() const { return copied_bytes_; }

 private:
  ModelWeights() = default;
  // Bytes of `t` at an address aligned for `align`, copying them if needed.
  const void* aligned(const TensorView& t, std::size_t align) const;

  std::string dir_;
  ModelConfig config_;
  std::vector<LayerRole> roles_;
  std::unique_ptr<Checkpoint> checkpoint_;
  mutable std::vector<std::unique_ptr<std::uint8_t[]>> copies_;
  mutable std::vector<std::pair<const void*, const void*>> copy_of_;  // (mapped, copy)
  mutable std::uint64_t copied_bytes_ = 0;
};

}  // namespace dsv4
