#include "runtime/trace.hpp"

// The pure half of tracing: trace context in and out, and the ids a job keeps or derives. No
// I/O and nothing else of the engine (the fuzz harnesses link it); the exporter is trace.cpp.

#include <algorithm>
#include <cstdio>
#include <random>

#include "runtime/fnv.hpp"

namespace sy::trace {
namespace {

std::mt19937_64& rng() {
  thread_local std::mt19937_64 r{std::random_device{}()};
  return r;
}

std::string random_hex(size_t digits) {
  std::string out;
  while (out.size() < digits) {
    char buf[17];
    uint64_t v = 0;
    while (v == 0) v = rng()();  // an id is never all zero
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    out += buf;
  }
  out.resize(digits);
  return out;
}

bool lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool all_zero(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

int hex_value(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

}  // namespace

std::string context::traceparent() const {
  if (!valid()) return {};
  char flag_hex[3];
  std::snprintf(flag_hex, sizeof flag_hex, "%02x", flags);
  return "00-" + trace_id + "-" + span_id + "-" + flag_hex;
}

context context::child() const { return context{trace_id, new_span_id(), flags, state}; }

std::optional<context> parse(std::string_view tp, std::string_view state) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters.
  if (tp.size() < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-') return std::nullopt;
  const auto version = tp.substr(0, 2);
  if (!lower_hex(version) || version == "ff") return std::nullopt;
  if (version == "00" && tp.size() != 55) return std::nullopt;
  if (version != "00" && tp.size() > 55 && tp[55] != '-') return std::nullopt;
  context c;
  c.trace_id = std::string(tp.substr(3, 32));
  c.span_id = std::string(tp.substr(36, 16));
  const auto flags = tp.substr(53, 2);
  if (!lower_hex(c.trace_id) || !lower_hex(c.span_id) || !lower_hex(flags) ||
      all_zero(c.trace_id) || all_zero(c.span_id))
    return std::nullopt;
  c.flags = static_cast<uint8_t>(hex_value(flags[0]) * 16 + hex_value(flags[1]));
  // Passed on in headers: printable ASCII only (no CR or LF), at most 512 bytes, else dropped.
  const bool printable =
      std::all_of(state.begin(), state.end(), [](char ch) { return ch >= 0x20 && ch <= 0x7e; });
  if (state.size() <= 512 && printable) c.state = std::string(state);
  return c;
}

context start() { return context{new_trace_id(), new_span_id(), 1, {}}; }

stored begin(const context& client) {
  if (!client.valid()) return stored{start(), {}};
  return stored{client.child(), client.span_id};
}

std::string store(const stored& s) {
  std::string out = s.self.traceparent();
  if (!out.empty() && !s.parent_span_id.empty()) out.append("-").append(s.parent_span_id);
  return out;
}

namespace {

/// FNV-1a, 64 bits, from an offset basis of our own per use: stable across builds and processes.
uint64_t fnv(std::string_view s, uint64_t seed) {
  const uint64_t h = runtime::fnv1a64(s, runtime::fnv1a64_basis ^ (seed * 0x9E3779B97F4A7C15ULL));
  return h == 0 ? 1 : h;  // an id is never all zero
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string to_keep(const context& client) {
  return client.valid() ? store(begin(client)) : std::string();
}

stored of(std::string_view id, std::string_view kept, std::string_view state) {
  if (!kept.empty()) {
    if (auto s = load(kept, state)) return std::move(*s);
  }
  return stored{context{hex64(fnv(id, 1)) + hex64(fnv(id, 2)), hex64(fnv(id, 3)), 1, {}}, {}};
}

std::optional<stored> load(std::string_view text, std::string_view state) {
  if (text.size() < 55) return std::nullopt;
  auto self = parse(text.substr(0, 55), state);
  if (!self) return std::nullopt;
  stored out{std::move(*self), {}};
  if (text.size() == 55 + 1 + 16 && text[55] == '-' && lower_hex(text.substr(56)))
    out.parent_span_id = std::string(text.substr(56));
  return out;
}

std::string new_span_id() { return random_hex(16); }
std::string new_trace_id() { return random_hex(32); }

}  // namespace sy::trace
