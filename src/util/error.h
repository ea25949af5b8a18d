#pragma once
// Errors a user can act on. Every entry point that reads user-supplied input (a checkpoint, a
// config, a tokenizer, a prompt, a request) reports a violation by throwing dsv4::Error with a
// message that names the file, tensor or field and the rule that was broken. The CLI and the
// server catch it at their boundary; nothing in the library aborts on bad input.
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace dsv4 {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Throws dsv4::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace dsv4
