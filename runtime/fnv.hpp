#pragma once
/// FNV-1a (Fowler–Noll–Vo), 32 and 64 bits: the project's one non-cryptographic string hash —
/// the custom_id sets of a batch's and a task list's check, a rerun's selection, a plan's
/// prefix hash and file name, the trace ids derived from a job id. Stable across builds and
/// processes (plan files store it): never change the constants.
///
/// Pure; call from any thread.

#include <cstdint>
#include <string_view>

namespace sy::runtime {

inline constexpr uint32_t fnv1a32_basis = 2166136261u;
inline constexpr uint64_t fnv1a64_basis = 14695981039346656037ull;

/// FNV-1a, 32 bits, of `s` from `basis` (the standard offset basis unless a use wants its own).
constexpr uint32_t fnv1a32(std::string_view s, uint32_t basis = fnv1a32_basis) noexcept {
  uint32_t h = basis;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

/// FNV-1a, 64 bits, of `s` from `basis` (the standard offset basis unless a use wants its own).
constexpr uint64_t fnv1a64(std::string_view s, uint64_t basis = fnv1a64_basis) noexcept {
  uint64_t h = basis;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

static_assert(fnv1a32("") == 0x811c9dc5u && fnv1a32("a") == 0xe40c292cu);
static_assert(fnv1a64("a") == 0xaf63dc4c8601ec8cull);

}  // namespace sy::runtime
