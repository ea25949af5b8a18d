// The Engram compressed token map (spec §8.2) of the C++ text layer against the Python oracle's
// independent computation (tests/oracle/dsv4_oracle/engram.py: Python's own unicodedata for
// NFKC/NFD/categories, its own byte-level decoder), id by id, on the real V3 tokenizer and on
// the V4.1 variant. engram_token_map_test.cc checks the same map against the Hugging Face
// `tokenizers` library; agreeing with both shows that neither reference's Unicode tables hide
// a difference.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "../common/npy_test_util.h"
#include "text/engram_token_map.h"
#include "text_test_data.h"

namespace dsv4 {
namespace {

std::vector<std::int32_t> oracle_map(const std::string& tokenizer) {
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("dsv4_engram_map_" + std::to_string(std::random_device{}()) + ".npy"))
                              .string();
  const std::string cmd = "cd " + test::shell_quote(test::source_dir() + "/tests/oracle") +
                          " && PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m dsv4_oracle engram-map --tokenizer " +
                          test::shell_quote(tokenizer) + " --out " + test::shell_quote(out) + " 2>&1";
  int status = 0;
  const std::string log = test::run_command(cmd, status);
  EXPECT_EQ(status, 0) << "oracle failed: " << cmd << "\n" << log;
  if (status != 0) return {};
  auto ids = test::read_npy<std::int32_t>(out);
  std::filesystem::remove(out);
  return ids;
}

void compare(const std::string& name, std::int32_t expected_keys) {
  std::string path;
  ASSERT_TRUE(test::test_data_file(name, path));
  const EngramTokenMap cpp = build_engram_token_map(path);
  const std::vector<std::int32_t> py = oracle_map(path);
  ASSERT_EQ(cpp.compressed_id.size(), py.size()) << name;
  std::size_t mismatches = 0;
  for (std::size_t t = 0; t < py.size(); ++t) {
    if (cpp.compressed_id[t] != py[t] && ++mismatches <= 10)
      ADD_FAILURE() << name << ": token " << t << ": C++ " << cpp.compressed_id[t] << ", oracle " << py[t];
  }
  EXPECT_EQ(mismatches, 0u) << name;
  std::int32_t py_keys = 0;
  for (std::int32_t v : py) py_keys = std::max(py_keys, v + 1);
  EXPECT_EQ(cpp.compressed_vocab_size, py_keys) << name;
  EXPECT_EQ(cpp.compressed_vocab_size, expected_keys) << name << " (spec §16.6)";
}

TEST(EngramTokenMapOracle, V3TokenizerIdById) { compare("tokenizer.json", 98627); }
TEST(EngramTokenMapOracle, V41TokenizerIdById) { compare("tokenizer-v41.json", 99092); }

}  // namespace
}  // namespace dsv4
