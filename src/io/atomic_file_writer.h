#pragma once
// Writing a file so that it appears under its final name only once it is complete.
//
// Bytes go to a temporary file in the destination's directory ("<final>.partial-<pid>-<n>");
// commit() flushes it to disk (fsync), renames it over the final name (atomic on POSIX within
// one file system) and syncs the directory. If the writer is destroyed without commit() — an
// exception, an early return — the temporary is removed. A crash can leave a stray ".partial-"
// file behind but never a truncated file under the final name.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dsv4 {

class AtomicFileWriter {
 public:
  // Creates the temporary file; throws dsv4::Error naming `final_path` on failure.
  explicit AtomicFileWriter(std::string final_path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends bytes; throws dsv4::Error on any write failure (e.g. disk full).
  void write(std::span<const std::uint8_t> bytes);
  void write(std::string_view bytes);
  std::uint64_t bytes_written() const { return written_; }

  // Makes the file durable and visible under the final name. Call at most once.
  void commit();

  const std::string& final_path() const { return final_path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  void discard() noexcept;
  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
  std::uint64_t written_ = 0;
};

}  // namespace dsv4
