#include "serve/api_error.h"

namespace dsv4::serve {

int ApiError::http_status() const {
  switch (kind_) {
    case ApiErrorKind::invalid_request: return 400;
    case ApiErrorKind::authentication: return 401;
    case ApiErrorKind::not_found: return 404;
    case ApiErrorKind::context_overflow: return 400;  // OpenAI: 400 context_length_exceeded
    case ApiErrorKind::overloaded: return 429;
    case ApiErrorKind::server: return 500;
  }
  return 500;
}

}  // namespace dsv4::serve
