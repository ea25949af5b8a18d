#pragma once
// Where tests find things: the repository (DSV4_SOURCE_DIR, set by CMake), the shared spec data
// ($DSV4_SHARED_DIR or ../shared beside the repo) and the downloaded test data
// ($DSV4_TEST_DATA or tests/data/downloaded, filled by tests/data/fetch_test_data.sh).
#include <cstdlib>
#include <string>

namespace dsv4::test {

inline std::string source_dir() { return DSV4_SOURCE_DIR; }

inline std::string shared_dir() {
  if (const char* e = std::getenv("DSV4_SHARED_DIR"); e != nullptr && *e != '\0') return e;
  return source_dir() + "/../shared";
}

inline std::string test_data_dir() {
  if (const char* e = std::getenv("DSV4_TEST_DATA"); e != nullptr && *e != '\0') return e;
  return source_dir() + "/tests/data/downloaded";
}

}  // namespace dsv4::test
