#pragma once
/// Structured logs: one JSON object per line on stderr —
/// {"ts":"2026-11-22T10:00:00.123Z","level":"info","component":"storage","msg":"...",...fields}.
/// Thread-safe; a line is written with one write() call so lines never interleave.

#include <concepts>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace sy::log {

enum class level { debug = 0, info = 1, warn = 2, error = 3 };

/// Sets the minimum level written ("debug", "info", "warn", "error"); unknown names keep info.
void set_level(std::string_view name);
bool enabled(level l);
void write(level l, std::string_view component, std::string_view msg,
           const nlohmann::json& fields = nlohmann::json::object());

inline void debug(std::string_view c, std::string_view m, const nlohmann::json& f = {}) {
  if (enabled(level::debug)) write(level::debug, c, m, f);
}
/// For hot paths: `make()` builds the fields only when debug lines are written (a JSON object's
/// nodes and strings cost allocations even when the line is then dropped).
template <std::invocable F>
void debug(std::string_view c, std::string_view m, F&& make) {
  if (enabled(level::debug)) write(level::debug, c, m, std::forward<F>(make)());
}
inline void info(std::string_view c, std::string_view m, const nlohmann::json& f = {}) {
  write(level::info, c, m, f);
}
inline void warn(std::string_view c, std::string_view m, const nlohmann::json& f = {}) {
  write(level::warn, c, m, f);
}
inline void error(std::string_view c, std::string_view m, const nlohmann::json& f = {}) {
  write(level::error, c, m, f);
}

}  // namespace sy::log
