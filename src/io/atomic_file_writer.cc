#include "io/atomic_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "util/error.h"

namespace dsv4 {

namespace {

// Distinguishes temporaries of concurrent writers in one process; the pid covers processes.
std::atomic<std::uint64_t> g_temp_counter{0};

void sync_parent_dir(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  int dfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // best effort: the rename itself already happened
  (void)::fsync(dfd);
  ::close(dfd);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string final_path) : final_path_(std::move(final_path)) {
  temp_path_ = final_path_ + ".partial-" + std::to_string(::getpid()) + "-" +
               std::to_string(g_temp_counter.fetch_add(1));
  // 0666 filtered by the umask, like any ordinary new file; O_EXCL never clobbers a stranger.
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0)
    fail("cannot create '{}' (temporary for '{}'): {}", temp_path_, final_path_,
         std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::write(std::span<const std::uint8_t> bytes) {
  if (fd_ < 0) fail("write to '{}' after commit", final_path_);
  const std::uint8_t* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write '{}': {}", final_path_, std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
    written_ += static_cast<std::uint64_t>(n);
  }
}

void AtomicFileWriter::write(std::string_view bytes) {
  write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                      bytes.size()));
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) fail("'{}' committed twice", final_path_);
  if (::fsync(fd_) != 0) fail("cannot sync '{}': {}", final_path_, std::strerror(errno));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(temp_path_.c_str());
    fail("cannot close '{}': {}", final_path_, std::strerror(e));
  }
  if (std::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    int e = errno;
    ::unlink(temp_path_.c_str());
    fail("cannot rename '{}' to '{}': {}", temp_path_, final_path_, std::strerror(e));
  }
  committed_ = true;
  sync_parent_dir(final_path_);
}

}  // namespace dsv4
