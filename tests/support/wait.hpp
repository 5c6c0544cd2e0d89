#pragma once
/// Waiting on a condition with a deadline — never a bare sleep. The condition is re-checked every
/// few milliseconds; the deadline bounds a broken test.

#include <chrono>
#include <thread>

namespace sy::test {

template <class F>
bool wait_for(F condition, std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace sy::test
