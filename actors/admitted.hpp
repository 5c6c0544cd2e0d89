#pragma once
/// A request that passed admission (api/admission.hpp): the only form in which client input
/// reaches the core. Its constructor is private and the admission layer is its one friend, so a
/// surface cannot hand the core something that skipped the limits of docs/limits.md — a surface
/// added later either goes through admission or does not compile.
/// A plain value: any thread may hold one; it is moved into the core once. Two ways in besides
/// admission, neither of which carries unchecked client input: the empty request (default
/// constructed), and loading one from the bytes another node's admission let through
/// (actors/core_messages.hpp) — a node trusts its cluster's nodes, not their clients.

#include <utility>

namespace sy::api {
class admission;
}  // namespace sy::api
namespace sy::test {
struct admit;  // tests/support/admit.hpp: the tests that drive a service below the surfaces
}  // namespace sy::test

namespace sy::actors {

template <class T>
class admitted {
 public:
  /// The empty request, which holds no client input: what a message is loaded into before its
  /// bytes fill it (actors/core_messages.hpp).
  // clang-tidy 14 sees a throw in nlohmann::json's constructors (a batch request's metadata);
  // their invariant check is an assert, not a throw.
  // NOLINTNEXTLINE(bugprone-exception-escape)
  admitted() = default;
  const T& operator*() const& { return value_; }
  const T* operator->() const { return &value_; }
  /// The request, moved out (the core takes it once).
  T take() && { return std::move(value_); }
  bool operator==(const admitted&) const = default;

 private:
  explicit admitted(T value) : value_(std::move(value)) {}
  friend class sy::api::admission;
  friend struct sy::test::admit;
  T value_;

  /// The request as a plain value (actors/job_service.hpp): loading one is how a request that
  /// another node's admission let through arrives; nothing on this node constructs one.
  template <class Inspector, class U>
  friend typename Inspector::result_type inspect(Inspector& f, admitted<U>& x);
};

template <class Inspector, class U>
typename Inspector::result_type inspect(Inspector& f, admitted<U>& x) {
  return f(x.value_);
}

}  // namespace sy::actors
