#include "runtime/failpoint.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

#include "runtime/log.hpp"

namespace sy::runtime {
namespace {

std::set<std::string, std::less<>> armed_points() {
  std::set<std::string, std::less<>> out;
  const char* env = std::getenv("SY_FAILPOINTS");
  if (env == nullptr) return out;
  std::string_view rest{env};
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto name = rest.substr(0, comma);
    if (!name.empty()) out.emplace(name);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return out;
}

}  // namespace

void failpoint(std::string_view name) {
  static const auto armed = armed_points();
  if (armed.empty() || !armed.contains(name)) return;
  log::warn("failpoint", "failpoint hit; killing the process", {{"name", std::string(name)}});
  ::kill(::getpid(), SIGKILL);
  std::abort();  // not reached: SIGKILL cannot be caught
}

}  // namespace sy::runtime
