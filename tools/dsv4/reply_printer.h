#pragma once
// Prints a streamed assistant reply: reasoning visibly apart from the answer (dim on a terminal,
// between "[reasoning]" and "[answer]" lines otherwise), tool calls on lines of their own.
#include <cstdio>
#include <string>

#include "text/output_parser.h"

namespace dsv4::cli {

class ReplyPrinter {
 public:
  ReplyPrinter(std::FILE* out, bool color);
  void delta(const ParseDelta& d);
  // Ends the reply (closes an open reasoning block, ends the line).
  void finish();

 private:
  enum class Part { none, reasoning, content, call };
  void enter(Part p);
  std::FILE* out_;
  bool color_;
  Part part_ = Part::none;
  bool at_line_start_ = true;
  void write(const std::string& s);
};

bool stdout_is_tty();

}  // namespace dsv4::cli
