#pragma once
// Helpers shared by the safetensors tests: a private temp directory per test, and hand-built
// ("byte by byte", independent of SafetensorsWriter) file images.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace dsv4::sttest {

// A fresh directory under testing::TempDir(), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string(info ? info->test_suite_name() : "x") + "_" + (info ? info->name() : "y");
    for (char& c : name)
      if (c == '/') c = '_';
    path_ =
        std::filesystem::path(testing::TempDir()) /
        ("dsv4_st_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(std::string_view name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::uint8_t> le64(std::uint64_t v) {
  std::vector<std::uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return out;
}

// An 8-byte length (header.size() unless overridden), the header text, then `data_size` bytes
// of a recognizable pattern.
inline std::vector<std::uint8_t> raw_image(std::string_view header, std::size_t data_size,
                                           std::optional<std::uint64_t> length = std::nullopt) {
  const std::uint64_t n = length.value_or(header.size());
  std::vector<std::uint8_t> out(8 + header.size() + data_size);
  for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(n >> (8 * i));
  for (std::size_t i = 0; i < header.size(); ++i) out[8 + i] = static_cast<std::uint8_t>(header[i]);
  for (std::size_t i = 0; i < data_size; ++i)
    out[8 + header.size() + i] = static_cast<std::uint8_t>(i * 7 + 1);
  return out;
}

inline void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void write_text(const std::string& path, std::string_view text) {
  write_file(path, std::vector<std::uint8_t>(text.begin(), text.end()));
}

inline std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `f`, which must throw dsv4::Error, and returns the message ("" plus a test failure if
// it does not throw, or throws something else).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const dsv4::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-dsv4::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

// The pattern the tests fill tensor `k` with: byte at offset `o`.
inline std::uint8_t pattern(std::size_t k, std::uint64_t o) {
  return static_cast<std::uint8_t>(o * 131 + k * 7 + (o >> 9));
}

}  // namespace dsv4::sttest
