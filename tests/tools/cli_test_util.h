#pragma once
// Running the dsv4 binary from tests: the CLI is tested the way a user drives it.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../common/test_env.h"

namespace dsv4::test {

inline std::string released_config() { return shared_dir() + "/data/deepseek-v4.1-flash/inference-config.json"; }

struct CmdResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `dsv4 <args>` through the shell; stdout and stderr are captured separately.
inline CmdResult run_dsv4(const std::string& args) {
  static int counter = 0;
  std::string base = std::filesystem::temp_directory_path().string() + "/dsv4_cli_" + std::to_string(::getpid()) + "_" +
                     std::to_string(counter++);
  std::string cmd = std::string(DSV4_BINARY) + " " + args + " >" + base + ".out 2>" + base + ".err";
  int st = std::system(cmd.c_str());
  CmdResult r;
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::filesystem::remove(base + ".out");
  std::filesystem::remove(base + ".err");
  return r;
}

// A fresh, empty directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static int n = 0;
    path_ = std::filesystem::temp_directory_path() / ("dsv4_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& s) const { return (path_ / s).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace dsv4::test
