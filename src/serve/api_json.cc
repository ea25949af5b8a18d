#include "serve/api_json.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "text/chat_tokens.h"
#include "text/utf8_lossy.h"
#include "util/error.h"

namespace dsv4::serve::api {

ojson parse_request_json(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw ApiError(ApiErrorKind::invalid_request,
                       fmt::format("the request body nests JSON deeper than {} levels", max_depth));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  ojson j;
  try {
    j = ojson::parse(text);
  } catch (const ojson::exception& e) {  // parse_error, and out_of_range for a number like 1e99999
    throw ApiError(ApiErrorKind::invalid_request, fmt::format("the request body is not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) throw ApiError(ApiErrorKind::invalid_request, "the request body must be a JSON object");
  return j;
}

void bad(const std::string& param, std::string_view what) {
  throw ApiError(ApiErrorKind::invalid_request, param.empty() ? std::string(what) : fmt::format("{}: {}", param, what),
                 param);
}

void require_object(const ojson& body) {
  if (!body.is_object()) bad("", fmt::format("the request body must be a JSON object, not {}", json_kind(body)));
}

const ojson* field(const ojson& obj, const char* name) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string json_kind(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "null";
    case ojson::value_t::boolean: return "a boolean";
    case ojson::value_t::number_integer:
    case ojson::value_t::number_unsigned: return "an integer";
    case ojson::value_t::number_float: return "a number with a fraction";
    case ojson::value_t::string: return "a string";
    case ojson::value_t::array: return "an array";
    case ojson::value_t::object: return "an object";
    default: return v.type_name();
  }
}

bool as_bool(const ojson& v, const std::string& param) {
  if (!v.is_boolean()) bad(param, fmt::format("must be a boolean, not {}", json_kind(v)));
  return v.get<bool>();
}

double as_number(const ojson& v, const std::string& param) {
  if (!v.is_number()) bad(param, fmt::format("must be a number, not {}", json_kind(v)));
  return v.get<double>();
}

std::int64_t as_integer(const ojson& v, const std::string& param) {
  if (!v.is_number_integer()) bad(param, fmt::format("must be an integer, not {}", json_kind(v)));
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return static_cast<std::int64_t>(u > kMax ? kMax : u);
  }
  return v.get<std::int64_t>();
}

const std::string& as_string(const ojson& v, const std::string& param) {
  if (!v.is_string()) bad(param, fmt::format("must be a string, not {}", json_kind(v)));
  return v.get_ref<const std::string&>();
}

const ojson& as_object(const ojson& v, const std::string& param) {
  if (!v.is_object()) bad(param, fmt::format("must be an object, not {}", json_kind(v)));
  return v;
}

const ojson& as_array(const ojson& v, const std::string& param) {
  if (!v.is_array()) bad(param, fmt::format("must be an array, not {}", json_kind(v)));
  return v;
}

namespace {
std::string join(const std::string& prefix, const char* name) { return prefix.empty() ? name : prefix + "." + name; }
}  // namespace

std::optional<bool> opt_bool(const ojson& obj, const char* name, const std::string& prefix) {
  const ojson* v = field(obj, name);
  if (!v) return std::nullopt;
  return as_bool(*v, join(prefix, name));
}

std::optional<double> opt_number(const ojson& obj, const char* name, double lo, double hi, const std::string& prefix) {
  const ojson* v = field(obj, name);
  if (!v) return std::nullopt;
  const std::string param = join(prefix, name);
  double x = as_number(*v, param);
  if (!(x >= lo && x <= hi)) bad(param, fmt::format("must be between {} and {}, not {}", lo, hi, x));
  return x;
}

std::optional<std::int64_t> opt_integer(const ojson& obj, const char* name, std::int64_t lo, std::int64_t hi,
                                        const std::string& prefix) {
  const ojson* v = field(obj, name);
  if (!v) return std::nullopt;
  const std::string param = join(prefix, name);
  std::int64_t x = as_integer(*v, param);
  if (x < lo || x > hi) {
    if (hi == std::numeric_limits<std::int64_t>::max())
      bad(param, fmt::format("must be at least {}, not {}", lo, x));
    bad(param, fmt::format("must be between {} and {}, not {}", lo, hi, x));
  }
  return x;
}

std::optional<std::string> opt_string(const ojson& obj, const char* name, const std::string& prefix) {
  const ojson* v = field(obj, name);
  if (!v) return std::nullopt;
  return as_string(*v, join(prefix, name));
}

void validate_sampling(const SamplingParams& s) {
  try {
    s.validate();
  } catch (const dsv4::Error& e) {
    std::string msg = e.what();
    std::string param = msg.substr(0, msg.find(' '));
    throw ApiError(ApiErrorKind::invalid_request, msg, param);
  }
}

void check_no_image_placeholder(const std::string& text, const std::string& param) {
  if (text.find(chat_token::kImage) != std::string::npos)
    bad(param, fmt::format("contains the image placeholder {}; send images as image blocks", chat_token::kImage));
}

std::string id_suffix(const std::string& id) {
  auto p = id.find_first_of("-_");
  return p == std::string::npos ? id : id.substr(p + 1);
}

std::string json_text(std::string_view bytes) {
  // Fast path: most output is valid already.
  if (utf8_first_invalid(bytes) == bytes.size()) return std::string(bytes);
  return utf8_lossy(bytes);
}

double json_logprob(double lp) { return std::isfinite(lp) ? lp : -9999.0; }

ojson byte_array(std::string_view bytes) {
  ojson a = ojson::array();
  for (unsigned char c : bytes) a.push_back(static_cast<int>(c));
  return a;
}

std::size_t next_text_offset(std::size_t& chars, std::string& pending, std::string_view token_bytes) {
  const std::size_t at = chars;  // pending bytes (if any) begin the character at index `chars`
  pending += token_bytes;
  // Everything before the incomplete suffix decodes the same whatever follows (utf8_lossy.h).
  const std::size_t keep = utf8_incomplete_suffix(pending);
  const std::string decoded = utf8_lossy(std::string_view(pending).substr(0, pending.size() - keep));
  for (unsigned char c : decoded)
    if ((c & 0xC0) != 0x80) ++chars;
  pending.erase(0, pending.size() - keep);
  return at;
}

ChatMessage& leading_system_message(std::vector<ChatMessage>& messages) {
  if (messages.empty() || messages[0].role != ChatRole::System) {
    ChatMessage sys;
    sys.role = ChatRole::System;
    messages.insert(messages.begin(), std::move(sys));
  }
  return messages[0];
}

}  // namespace dsv4::serve::api
