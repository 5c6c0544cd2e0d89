#include "runtime/clock.hpp"

#include <chrono>

namespace sy::runtime {

int64_t system_clock_source::now_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace sy::runtime
