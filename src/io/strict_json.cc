#include "io/strict_json.h"

#include <set>
#include <string>
#include <vector>

#include "util/error.h"

namespace dsv4 {

namespace {

using json = nlohmann::json;

// One open object or array while parsing. `keys` holds the keys seen so far in an object;
// `name` is how the container is reached from its parent (its key, or "[]" inside an array).
struct Frame {
  bool is_object = false;
  std::string name;
  std::set<std::string> keys;
  std::string last_key;
};

// "the top-level object" or "object 'a'.'b'", for error messages.
std::string describe_path(const std::vector<Frame>& stack) {
  if (stack.size() <= 1) return "the top-level object";
  std::string path;
  for (std::size_t i = 1; i < stack.size(); ++i) {
    if (!path.empty()) path += '.';
    path += stack[i].name == "[]" ? std::string("[]") : "'" + stack[i].name + "'";
  }
  return "object " + path;
}

}  // namespace

json parse_strict_json(std::string_view text, std::string_view what, int max_depth) {
  std::vector<Frame> stack;

  // The callback sees every structural event in document order, so a stack of open containers
  // mirrors the parser's own; it throws dsv4::Error, which propagates out of nlohmann unchanged.
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        if (static_cast<int>(stack.size()) >= max_depth)
          fail("{}: JSON nested deeper than {} levels", what, max_depth);
        Frame f;
        f.is_object = event == json::parse_event_t::object_start;
        if (!stack.empty()) f.name = stack.back().is_object ? stack.back().last_key : "[]";
        stack.push_back(std::move(f));
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key: {
        if (stack.empty() || !parsed.is_string()) break;  // cannot happen for well-formed events
        Frame& top = stack.back();
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!top.keys.insert(key).second)
          fail("{}: duplicate key '{}' in {}", what, key, describe_path(stack));
        top.last_key = key;
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  };

  // nlohmann treats a NUL byte as the end of input and would silently ignore whatever follows
  // it; valid JSON never contains a raw NUL (control characters in strings must be escaped).
  if (auto nul = text.find('\0'); nul != std::string_view::npos)
    fail("{}: invalid JSON: NUL byte at offset {}", what, nul);
  try {
    return json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    fail("{}: invalid JSON: {}", what, e.what());
  }
}

}  // namespace dsv4
