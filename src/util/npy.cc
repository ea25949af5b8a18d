// See npy.h.
#include "util/npy.h"

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "util/error.h"

namespace dsv4 {
namespace {

void write(const std::string& path, const char* descr, std::span<const std::int64_t> shape,
           const void* data, std::size_t bytes, std::size_t count) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  if (n != count) fail("{}: {} values for shape of {} elements", path, count, n);
  std::string dims;
  for (auto d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // Pad so that magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) fail("{}: cannot open for writing", path);
  const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                 static_cast<unsigned char>(header.size() & 0xFF),
                                 static_cast<unsigned char>(header.size() >> 8)};
  bool ok = std::fwrite(pre, 1, 10, f.get()) == 10 &&
            std::fwrite(header.data(), 1, header.size(), f.get()) == header.size() &&
            (bytes == 0 || std::fwrite(data, 1, bytes, f.get()) == bytes);
  ok = (std::fclose(f.release()) == 0) && ok;
  if (!ok) fail("{}: write failed", path);
}

}  // namespace

void write_npy_f32(const std::string& path, std::span<const std::int64_t> shape, std::span<const float> data) {
  write(path, "<f4", shape, data.data(), data.size_bytes(), data.size());
}
void write_npy_i64(const std::string& path, std::span<const std::int64_t> shape,
                   std::span<const std::int64_t> data) {
  write(path, "<i8", shape, data.data(), data.size_bytes(), data.size());
}
void write_npy_bool(const std::string& path, std::span<const std::int64_t> shape,
                    std::span<const std::uint8_t> data) {
  write(path, "|b1", shape, data.data(), data.size_bytes(), data.size());
}

}  // namespace dsv4
