// dsv4 chat-template: the golden cases of ../shared/data/chat-encoding through the CLI, byte for
// byte on stdout, the option spellings, stdin, and clear errors for malformed input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "cli_test_util.h"

namespace dsv4 {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string data(const std::string& name) { return test::shared_dir() + "/data/chat-encoding/" + name; }

TEST(ChatTemplateCli, GoldenCasesPrintExactly) {
  struct Case {
    const char* input;
    const char* options;
    const char* expected;
  };
  const Case cases[] = {
      {"v4_test_input_1.json", "", "v41_test_output_1.txt"},
      {"v4_test_input_1.json", "--thinking --effort low", "v41_test_output_1.effort50.txt"},
      {"v4_test_input_2.json", "--effort 50", "v41_test_output_2.effort50.txt"},
      {"v4_test_input_3.json", "--profile v4 --effort low", "v4_test_output_3.txt"},
      {"v4_test_input_4.json", "--profile v4 --chat", "v4_test_output_4.txt"},
      {"v4_test_input_5.json", "--profile v4 --chat", "v4_test_output_5.txt"},
  };
  for (const Case& c : cases) {
    const std::string args = std::string(c.options) + " --messages " + data(c.input);
    auto r = test::run_dsv4("chat-template " + args);
    ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    EXPECT_EQ(r.out, test::slurp(data(c.expected))) << args;
    EXPECT_EQ(r.err, "");
  }
}

TEST(ChatTemplateCli, ReadsStdinAcceptsAModelDirAndAddsTheGenerationPrompt) {
  test::TempDir dir("chat_model");
  auto r = test::run_dsv4("chat-template -m " + dir.str() + " --add-generation-prompt --messages - < " +
                          data("v4_test_input_2.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, test::slurp(data("v41_test_output_2.txt")) + "<｜Assistant｜><think>");
}

TEST(ChatTemplateCli, KeepThinkingAndNoBos) {
  auto r = test::run_dsv4("chat-template --keep-thinking --no-bos --messages " + data("v4_test_input_2.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("<｜System｜>Reasoning Effort: 75"));
  EXPECT_THAT(r.out, HasSubstr("<｜User｜>Hello<｜Assistant｜><think>The user said hello, I should greet back.</think>"));
}

TEST(ChatTemplateCli, MalformedMessagesAreClearErrors) {
  test::TempDir dir("chat_bad");
  const std::string path = dir / "bad.json";
  std::ofstream(path) << R"([{"role": "user", "content": "hi"}, {"role": "robot"}])";
  auto r = test::run_dsv4("chat-template --messages " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("dsv4: error: " + path + ": messages[1].role: unknown role 'robot'"));
  EXPECT_EQ(r.out, "");

  const std::string broken = dir / "broken.json";
  std::ofstream(broken) << "[{";
  r = test::run_dsv4("chat-template --messages " + broken);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("dsv4: error: " + broken + ": not valid JSON"));

  r = test::run_dsv4("chat-template --messages " + dir / "missing.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot open the messages file"));
}

TEST(ChatTemplateCli, BadOptionsAreRejected) {
  const std::string in = data("v4_test_input_2.json");
  auto r = test::run_dsv4("chat-template --effort medium --messages " + in);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("dsv4: error: reasoning effort 'medium'"));
  r = test::run_dsv4("chat-template --effort 0 --chat --messages " + in);
  EXPECT_EQ(r.exit_code, 1);
  r = test::run_dsv4("chat-template --profile v5 --messages " + in);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--profile 'v5'"));
  r = test::run_dsv4("chat-template --thinking --chat --messages " + in);
  EXPECT_NE(r.exit_code, 0);
  r = test::run_dsv4("chat-template");
  EXPECT_NE(r.exit_code, 0);  // --messages is required
}

}  // namespace
}  // namespace dsv4
