#pragma once
/// `sy::result<T>`: the return type of every fallible function that crosses a module boundary.
/// An error carries a stable code (a constant of config/error_codes.hpp, listed in api/errors.cpp's
/// catalogue), a human-readable message saying what failed and why, and optionally the offending
/// parameter.

#include <string>
#include <utility>
#include <variant>

#include "config/error_codes.hpp"

namespace sy {

struct error {
  std::string code;     ///< a `sy::errc` constant's text; a string to travel in messages
  std::string message;  ///< full sentence: what failed and why
  std::string param;    ///< the request parameter at fault, empty when none

  bool operator==(const error&) const = default;
};

/// CAF 0.17's inspector concept (storage/inspect.hpp): an error travels in messages as a value.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, error& x) {
  return f(x.code, x.message, x.param);
}

template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::move(value)) {}
  result(sy::error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const sy::error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, sy::error> v_;
};

/// For functions that return nothing on success.
struct ok_t {};
inline constexpr ok_t ok{};
using status = result<ok_t>;

/// The only way to make an error: `code` is one of the constants of `sy::errc`.
inline sy::error make_error(error_code code, std::string message, std::string param = {}) {
  return sy::error{std::string(code), std::move(message), std::move(param)};
}

}  // namespace sy
