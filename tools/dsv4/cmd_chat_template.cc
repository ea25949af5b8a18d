// dsv4 chat-template: render a conversation file to the DeepSeek V4.1 prompt text (spec
// chat-encoding.md) and print it to stdout exactly, with no newline added, so that the output can
// be compared byte for byte or piped into `dsv4 tokenize`.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "text/chat_format.h"
#include "util/error.h"

namespace dsv4::cli {
namespace {

struct ChatTemplateArgs {
  std::string model_dir;
  std::string messages;
  bool thinking = false, chat = false;
  std::string effort;
  std::string profile = "v41";
  bool keep_thinking = false;
  bool add_generation_prompt = false;
  bool no_bos = false;
};

ChatOptions options_from(const ChatTemplateArgs& a) {
  ChatOptions o;
  if (a.profile == "v41")
    o.profile = ChatProfile::V41;
  else if (a.profile == "v4")
    o.profile = ChatProfile::V4;
  else
    fail("--profile '{}': expected v41 or v4", a.profile);
  o.thinking = !a.chat;  // thinking is the default, as in vLLM
  if (!a.effort.empty()) o.effort = parse_effort(a.effort);
  o.drop_thinking = !a.keep_thinking;
  o.add_generation_prompt = a.add_generation_prompt;
  o.add_bos = !a.no_bos;
  return o;
}

}  // namespace

void register_chat_template(CLI::App& app) {
  auto a = std::make_shared<ChatTemplateArgs>();
  CLI::App* sub = app.add_subcommand("chat-template", "Render a conversation (OpenAI-style messages JSON) to the prompt");
  sub->add_option("-m,--model", a->model_dir,
                  "model directory (accepted for symmetry with other commands; the template is built in)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--messages", a->messages,
                  "messages file: a JSON list of messages, or {\"messages\": [...], \"tools\": [...]}; - reads stdin")
      ->required();
  auto* thinking = sub->add_flag("--thinking", a->thinking, "thinking mode (the default)");
  auto* chat = sub->add_flag("--chat", a->chat, "chat mode (no reasoning)");
  thinking->excludes(chat);
  sub->add_option("--effort", a->effort, "reasoning effort: low (50), high (75, default), max (100), xhigh (75) or 1-100");
  sub->add_option("--profile", a->profile, "encoder profile: v41 (DeepSeek-V4.1, default) or v4 (DeepSeek-V4 0731)");
  sub->add_flag("--keep-thinking", a->keep_thinking, "keep earlier turns' reasoning (drop_thinking off)");
  sub->add_flag("--add-generation-prompt", a->add_generation_prompt,
                "also open an assistant turn after a final assistant or index-0 system message (vLLM extension)");
  sub->add_flag("--no-bos", a->no_bos, "do not write the BOS token");
  add_command(sub, [a] {
    ChatOptions opts = options_from(*a);
    std::vector<ChatMessage> msgs = load_chat_file(a->messages);
    std::string prompt = render_chat(msgs, opts);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    return 0;
  });
}

}  // namespace dsv4::cli
