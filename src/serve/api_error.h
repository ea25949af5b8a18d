#pragma once
// An error a request gets back, with its HTTP status. Each API renders it in its own JSON shape
// (openai_error_json, anthropic_error_json).
#include <stdexcept>
#include <string>

namespace dsv4::serve {

enum class ApiErrorKind {
  invalid_request,  // 400: malformed JSON, a wrong field type or value, too many tokens
  authentication,   // 401: missing or wrong API key
  not_found,        // 404: unknown model or route
  context_overflow, // 400: the prompt (plus max_tokens) does not fit the context
  overloaded,       // 429: the queue is full
  server,           // 500: anything else (an engine error)
};

class ApiError : public std::runtime_error {
 public:
  ApiError(ApiErrorKind kind, std::string message, std::string param = {})
      : std::runtime_error(message), kind_(kind), param_(std::move(param)) {}
  ApiErrorKind kind() const { return kind_; }
  // The request field at fault ("messages[2].content", "temperature"), or "".
  const std::string& param() const { return param_; }
  int http_status() const;

 private:
  ApiErrorKind kind_;
  std::string param_;
};

}  // namespace dsv4::serve
