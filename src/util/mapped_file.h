#pragma once
// A read-only memory map of a whole file. Checkpoint shards are mapped, never read into heap
// memory: the weights stay in their stored formats and the kernel pages them in on demand.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace dsv4 {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only. Throws dsv4::Error naming the file if it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release();
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace dsv4
