// See model_weights.h.
#include "model/model_weights.h"

#include <cstring>
#include <filesystem>

#include "io/checkpoint_validation.h"
#include "util/error.h"

namespace dsv4 {

std::unique_ptr<ModelWeights> ModelWeights::open(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) fail("{}: not a model directory", dir);
  std::unique_ptr<ModelWeights> w(new ModelWeights());
  w->dir_ = dir;
  w->config_ = load_model_config_dir(dir);
  validate_model_dir(dir, w->config_);
  w->roles_ = layer_roles(w->config_);
  w->checkpoint_ = std::make_unique<Checkpoint>(Checkpoint::open(dir));
  return w;
}

const TensorView& ModelWeights::tensor(std::string_view name) const {
  const TensorView* t = checkpoint_->find(name);
  if (t == nullptr) fail("{}: the checkpoint has no tensor {}", dir_, name);
  return *t;
}

const void* ModelWeights::aligned(const TensorView& t, std::size_t align) const {
  const void* p = t.bytes.data();
  if (reinterpret_cast<std::uintptr_t>(p) % align == 0) return p;
  for (const auto& [from, to] : copy_of_)
    if (from == p) return to;
  auto buf = std::make_unique<std::uint8_t[]>(t.bytes.size());  // new[] is max-aligned
  std::memcpy(buf.get(), p, t.bytes.size());
  copied_bytes_ += t.bytes.size();
  copy_of_.emplace_back(p, buf.get());
  copies_.push_back(std::move(buf));
  return copy_of_.back().second;
}

kernels::WeightRef ModelWeights::matrix(std::string_view name) const {
  const TensorView& t = tensor(name);
  if (t.shape.size() != 2) fail("{}: {} is not a matrix", dir_, name);
  const auto rows = static_cast<std::size_t>(t.shape[0]), cols = static_cast<std::size_t>(t.shape[1]);
  switch (t.dtype) {
    case DType::BF16:
      return kernels::WeightRef::bf16(
          {static_cast<const BF16*>(aligned(t, alignof(BF16))), rows * cols}, rows, cols);
    case DType::F32:
      return kernels::WeightRef::f32(
          {static_cast<const float*>(aligned(t, alignof(float))), rows * cols}, rows, cols);
    default:
      fail("{}: {} has dtype {}, expected BF16 or F32", dir_, name, dtype_name(t.dtype));
  }
}

kernels::WeightRef ModelWeights::linear(std::string_view base) const {
  const std::string wname = std::string(base) + ".weight";
  const TensorView& t = tensor(wname);
  if (t.dtype == DType::BF16 || t.dtype == DType::F32) return matrix(wname);
  if (t.shape.size() != 2) fail("{}: {} is not a matrix", dir_, wname);
  const TensorView& s = tensor(std::string(base) + ".scale");
  const auto rows = static_cast<std::size_t>(t.shape[0]);
  if (t.dtype == DType::F8_E4M3)
    return kernels::WeightRef::fp8(t.bytes, s.bytes, rows, static_cast<std::size_t>(t.shape[1]));
  if (t.dtype == DType::I8)
    return kernels::WeightRef::fp4(t.bytes, s.bytes, rows, 2 * static_cast<std::size_t>(t.shape[1]));
  fail("{}: {} has dtype {}, not a linear weight", dir_, wname, dtype_name(t.dtype));
}

std::vector<float> ModelWeights::floats(std::string_view name) const {
  const TensorView& t = tensor(name);
  const auto n = static_cast<std::size_t>(t.numel());
  std::vector<float> out(n);
  if (t.dtype == DType::F32) {
    std::memcpy(out.data(), t.bytes.data(), n * sizeof(float));
  } else if (t.dtype == DType::BF16) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t b;
      std::memcpy(&b, t.bytes.data() + 2 * i, 2);
      out[i] = bf16_to_f32(BF16{b});
    }
  } else {
    fail("{}: {} has dtype {}, expected BF16 or F32", dir_, name, dtype_name(t.dtype));
  }
  return out;
}

std::span<const BF16> ModelWeights::bf16(std::string_view name) const {
  const TensorView& t = tensor(name);
  if (t.dtype != DType::BF16) fail("{}: {} has dtype {}, expected BF16", dir_, name, dtype_name(t.dtype));
  return {static_cast<const BF16*>(aligned(t, alignof(BF16))), static_cast<std::size_t>(t.numel())};
}

}  // namespace dsv4
