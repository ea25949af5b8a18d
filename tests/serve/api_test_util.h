#pragma once
// Helpers shared by the API translation tests.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "serve/api_error.h"
#include "text/output_parser.h"

namespace dsv4::serve::api_test {

using ojson = nlohmann::ordered_json;

inline ojson J(const char* text) { return ojson::parse(text); }

// `base` with `extra`'s fields merged in (a null value is sent as null, which the parsers read as
// absent).
inline ojson merged(ojson base, const ojson& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it) base[it.key()] = it.value();
  return base;
}

// The ApiError a call throws (fails the test if none).
template <typename F>
ApiError error_of(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError thrown";
  return ApiError(ApiErrorKind::server, "none");
}

// One tool-call fragment of a parser delta (complete when it ends the call).
inline ToolCallDelta fragment(std::size_t index, bool begins, std::string name, std::string args, bool ends) {
  ToolCallDelta d;
  d.index = index;
  d.begins = begins;
  d.name = std::move(name);
  d.arguments = std::move(args);
  d.ends = ends;
  d.complete = ends;
  return d;
}

}  // namespace dsv4::serve::api_test
