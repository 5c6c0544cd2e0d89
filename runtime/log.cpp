#include "runtime/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>

#include "config/client_text.hpp"

namespace sy::log {
namespace {

std::atomic<int> min_level{static_cast<int>(level::info)};

const char* name_of(level l) {
  switch (l) {
    case level::debug:
      return "debug";
    case level::info:
      return "info";
    case level::warn:
      return "warn";
    case level::error:
      return "error";
  }
  return "info";
}

/// Log timestamps are the one place outside runtime/clock that reads wall time: a log line
/// records when it was written, which tests never assert on.
std::string timestamp() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = time_point_cast<seconds>(now);
  auto ms = duration_cast<milliseconds>(now - secs).count();
  std::time_t t = system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

/// No log line over 64 KiB whatever a client sent (docs/limits.md, "No echo"): a field's text
/// is cut at 4 KiB on a character boundary, with its length.
constexpr size_t field_max_bytes = size_t{4} * 1024;
constexpr size_t line_max_bytes = size_t{64} * 1024;

nlohmann::json bounded(const nlohmann::json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return s.size() <= field_max_bytes ? v : nlohmann::json(quote_client(s, field_max_bytes));
  }
  if (!v.is_structured()) return v;
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() <= field_max_bytes ? v : nlohmann::json(quote_client(text, field_max_bytes));
}

}  // namespace

void set_level(std::string_view name) {
  for (auto l : {level::debug, level::info, level::warn, level::error})
    if (name == name_of(l)) min_level = static_cast<int>(l);
}

bool enabled(level l) { return static_cast<int>(l) >= min_level.load(std::memory_order_relaxed); }

void write(level l, std::string_view component, std::string_view msg,
           const nlohmann::json& fields) {
  if (!enabled(l)) return;
  nlohmann::json line = {{"ts", timestamp()},
                         {"level", name_of(l)},
                         {"component", component},
                         {"msg", quote_client(msg, field_max_bytes)}};
  if (fields.is_object())
    for (auto it = fields.begin(); it != fields.end(); ++it) line[it.key()] = bounded(it.value());
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > line_max_bytes) {
    // Many fields, each within its bound: the line keeps what says what happened.
    nlohmann::json cut = {{"ts", line["ts"]},
                          {"level", line["level"]},
                          {"component", component},
                          {"msg", line["msg"]},
                          {"truncated_bytes", text.size()}};
    text = cut.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  text.push_back('\n');
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace sy::log
