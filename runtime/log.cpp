#include "runtime/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>

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

}  // namespace

void set_level(std::string_view name) {
  for (auto l : {level::debug, level::info, level::warn, level::error})
    if (name == name_of(l)) min_level = static_cast<int>(l);
}

bool enabled(level l) { return static_cast<int>(l) >= min_level.load(std::memory_order_relaxed); }

void write(level l, std::string_view component, std::string_view msg,
           const nlohmann::json& fields) {
  if (!enabled(l)) return;
  nlohmann::json line = {
      {"ts", timestamp()}, {"level", name_of(l)}, {"component", component}, {"msg", msg}};
  if (fields.is_object())
    for (auto it = fields.begin(); it != fields.end(); ++it) line[it.key()] = it.value();
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\n');
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace sy::log
