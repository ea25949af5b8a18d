#include "reply_printer.h"

#include <unistd.h>

namespace dsv4::cli {

bool stdout_is_tty() { return ::isatty(STDOUT_FILENO) == 1; }

ReplyPrinter::ReplyPrinter(std::FILE* out, bool color) : out_(out), color_(color) {}

void ReplyPrinter::write(const std::string& s) {
  if (s.empty()) return;
  std::fwrite(s.data(), 1, s.size(), out_);
  at_line_start_ = s.back() == '\n';
  std::fflush(out_);
}

void ReplyPrinter::enter(Part p) {
  if (p == part_) return;
  if (part_ == Part::reasoning && color_) write("\033[0m");
  if (!at_line_start_) write("\n");
  if (p == Part::reasoning) write(color_ ? "\033[2m" : "[reasoning]\n");
  if (p == Part::content && part_ == Part::reasoning) write(color_ ? "\n" : "[answer]\n");
  part_ = p;
}

void ReplyPrinter::delta(const ParseDelta& d) {
  if (!d.reasoning.empty()) {
    enter(Part::reasoning);
    write(d.reasoning);
  }
  if (!d.content.empty()) {
    enter(Part::content);
    write(d.content);
  }
  for (const ToolCallDelta& c : d.tool_calls) {
    enter(Part::call);
    if (c.begins) write("[tool call " + std::to_string(c.index) + "] " + c.name + " ");
    write(c.arguments);
    if (c.ends) write("\n");
  }
}

void ReplyPrinter::finish() {
  if (part_ == Part::reasoning && color_) write("\033[0m");
  if (!at_line_start_) write("\n");
  part_ = Part::none;
}

}  // namespace dsv4::cli
