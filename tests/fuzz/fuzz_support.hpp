#pragma once
/// Helpers shared by the libFuzzer harnesses: a failed check that libFuzzer records as a crash,
/// and the checks every harness makes of an error a client would see. Harness code only.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/errors.hpp"
#include "config/result.hpp"

namespace sy::fuzz {

/// Stops the run with `what`: abort() is a crash to libFuzzer, which saves the input.
[[noreturn]] inline void fail(std::string_view what) {
  std::fprintf(stderr, "fuzz check failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

/// `cond` must hold for every input.
inline void check(bool cond, std::string_view what) {
  if (!cond) fail(what);
}

/// An error that reaches a client: its code is in the error table (an unknown code would be
/// answered as a 500 internal_error), and its envelope is valid JSON naming that code.
inline void check_client_error(const sy::error& e) {
  const api::error_info& row = api::lookup_error(e.code);
  if (row.code != e.code) fail("error code not in api/errors.cpp's table: " + e.code);
  check(row.status >= 400 && row.status <= 599, "error status is not 4xx/5xx");
  auto env = nlohmann::json::parse(api::error_body(e), nullptr, /*allow_exceptions=*/false);
  check(env.is_object() && env.contains("error"), "error_body is not an error envelope");
  const auto& inner = env["error"];
  check(inner.is_object(), "error_body's error is not an object");
  check(inner.value("code", std::string()) == e.code, "error_body names another code");
  check(inner["message"].is_string() && !inner["message"].get_ref<const std::string&>().empty(),
        "error_body has no message");
}

/// The next line of `in` (without its '\n'), removed from `in`.
inline std::string_view next_line(std::string_view& in) {
  size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
  return line;
}

/// The input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace sy::fuzz
