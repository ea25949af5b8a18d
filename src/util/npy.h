#pragma once
// Writing NumPy .npy files (format version 1.0, little-endian, C order): how the CLI hands
// logits and intermediate tensors to Python (np.load) and to the tests.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dsv4 {

// Throw dsv4::Error naming the file on any I/O failure.
void write_npy_f32(const std::string& path, std::span<const std::int64_t> shape, std::span<const float> data);
void write_npy_i64(const std::string& path, std::span<const std::int64_t> shape,
                   std::span<const std::int64_t> data);
void write_npy_bool(const std::string& path, std::span<const std::int64_t> shape,
                    std::span<const std::uint8_t> data);

}  // namespace dsv4
