#pragma once
// Where the text-layer tests find their downloaded data (tests/data/fetch_test_data.sh): the
// directory named by $DSV4_TEST_DATA, else <source>/tests/data/downloaded. Missing data is a test
// failure with instructions, never a silent skip: CI runs the fetch script first.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "../common/test_env.h"

namespace dsv4::test {


// Sets `path` to test_data_dir()/name, failing with a hint when the file is not there. Use as
// ASSERT_TRUE(test_data_file("tokenizer.json", path)).
inline ::testing::AssertionResult test_data_file(const std::string& name, std::string& path) {
  path = test_data_dir() + "/" + name;
  if (std::filesystem::is_regular_file(path)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "test data file " << path
                                       << " is missing: run `bash tests/data/fetch_test_data.sh` "
                                          "(or point DSV4_TEST_DATA at a directory it filled)";
}

// Single-quotes s for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// Runs a shell command and returns its standard output; `status` gets the exit status.
inline std::string run_command(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    status = -1;
    return out;
  }
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  status = ::pclose(p);
  return out;
}

}  // namespace dsv4::test
