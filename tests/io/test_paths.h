#pragma once
// Where tests find the shared spec data and the repository.
#include <cstdlib>
#include <string>

namespace dsv4::test {

inline std::string source_dir() { return DSV4_SOURCE_DIR; }
inline std::string shared_dir() {
  if (const char* e = std::getenv("DSV4_SHARED_DIR")) return e;
  return source_dir() + "/../shared";
}

}  // namespace dsv4::test
