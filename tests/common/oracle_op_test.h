#pragma once
// The oracle subprocess for op-level tests: a GoogleTest fixture with a private temporary
// directory that runs `python3 -m dsv4_oracle op NAME inputs... outputs...` in tests/oracle on
// .npy files of that directory (tests/common/npy_test_util.h), and skips the test when
// /usr/bin/python3 with NumPy is missing. Shared by tests/numeric and tests/kernels.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace dsv4::test {

namespace fs = std::filesystem;

inline constexpr const char* kPython = "/usr/bin/python3";

// A test fixture with a private temporary directory and the oracle subprocess.
class OracleOpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    available_ = fs::exists(kPython) &&
                 std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0;
  }
  void SetUp() override {
    if (!available_) GTEST_SKIP() << kPython << " with numpy is not available";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("dsv4_oracle_op_" + std::to_string(std::random_device{}()) + "_" +
                                        info->test_suite_name() + "_" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs the oracle op on files of this test's directory; fails the test if it exits non-zero.
  void run_op(const std::string& op, const std::vector<std::string>& in,
              const std::vector<std::string>& out) {
    std::string cmd = "cd '" + std::string(DSV4_SOURCE_DIR) + "/tests/oracle' && PYTHONDONTWRITEBYTECODE=1 " +
                      kPython + " -m dsv4_oracle op " + op;
    for (const auto& p : in) cmd += " '" + path(p) + "'";
    for (const auto& p : out) cmd += " '" + path(p) + "'";
    cmd += " 2>'" + path("stderr.txt") + "'";
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
      std::ifstream err(path("stderr.txt"));
      std::stringstream e;
      e << err.rdbuf();
      FAIL() << "oracle failed: " << cmd << "\n" << e.str();
    }
  }

  static inline bool available_ = false;
  fs::path dir_;
};

}  // namespace dsv4::test
