#include "runtime/clock.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace sy::runtime {
namespace {

TEST(ManualClock, StartsWhereToldAndMovesOnlyWhenAdvanced) {
  manual_clock c(1'000);
  EXPECT_EQ(c.now_ms(), 1'000);
  EXPECT_EQ(c.now_ms(), 1'000);
  c.advance(250);
  EXPECT_EQ(c.now_ms(), 1'250);
  c.set(5);
  EXPECT_EQ(c.now_ms(), 5);
}

TEST(ManualClock, UsableThroughTheInterfaceAndFromManyThreads) {
  manual_clock c;
  const clock& as_clock = c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1'000; ++i) c.advance(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(as_clock.now_ms(), 4'000);
}

TEST(SystemClock, ReadsPlausibleRealtimeMilliseconds) {
  system_clock_source c;
  const int64_t a = c.now_ms();
  EXPECT_GT(a, int64_t{1'600'000'000'000});  // after 2020
  EXPECT_LT(a, int64_t{4'102'444'800'000});  // before 2100
  EXPECT_GE(c.now_ms() + 1'000, a);          // does not jump backwards by seconds
}

}  // namespace
}  // namespace sy::runtime
