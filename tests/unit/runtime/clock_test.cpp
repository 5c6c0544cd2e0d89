#include "runtime/clock.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sy::runtime {
namespace SY_UNITY_ID {

TEST(ManualClock, StartsWhereToldAndMovesOnlyWhenAdvanced) {
  manual_clock c(1'000);
  EXPECT_EQ(c.now_ms(), 1'000);
  EXPECT_EQ(c.now_ms(), 1'000);
  c.advance(250);
  EXPECT_EQ(c.now_ms(), 1'250);
  c.set(5);
  EXPECT_EQ(c.now_ms(), 5);
}

TEST(ManualClock, ItsMonotonicReadingFollowsTimeForwardOnly) {
  manual_clock c(1'000);
  const int64_t m0 = c.monotonic_us();
  c.advance(250);
  EXPECT_EQ(c.monotonic_us() - m0, 250'000);
  c.set(100);  // a step back (clock skew): durations do not go negative
  EXPECT_EQ(c.monotonic_us() - m0, 250'000);
  c.advance(-50);
  EXPECT_EQ(c.monotonic_us() - m0, 250'000);
  c.set(200);  // 150 ms forward from 50
  EXPECT_EQ(c.monotonic_us() - m0, 400'000);
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
  const int64_t m = c.monotonic_us();
  EXPECT_GE(c.monotonic_us(), m);
}

TEST(ManualClockTimer, FiresOnlyWhenTimeIsAdvancedPastItsDue) {
  boost::asio::io_context io;
  manual_clock c(1'000);
  auto t = c.make_timer(io.get_executor());
  int fired = 0, cancelled = 0;
  t->wait(500, [&](bool f) { (f ? fired : cancelled)++; });
  EXPECT_EQ(c.armed(), 1u);
  EXPECT_EQ(c.armed_due_at(1'500), 1u);
  EXPECT_EQ(c.armed_due_at(1'499), 0u);
  EXPECT_EQ(c.armed_due_at(1'501), 0u);
  io.poll();
  io.restart();
  EXPECT_EQ(fired + cancelled, 0);
  c.advance(499);
  io.poll();
  io.restart();
  EXPECT_EQ(fired, 0);
  c.advance(1);
  io.poll();
  io.restart();
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(cancelled, 0);
  EXPECT_EQ(c.armed(), 0u);
}

TEST(ManualClockTimer, ReArmingOrCancellingEndsThePendingWaitUnfired) {
  boost::asio::io_context io;
  manual_clock c;
  auto t = c.make_timer(io.get_executor());
  std::vector<std::pair<int, bool>> ends;
  t->wait(100, [&](bool f) { ends.emplace_back(1, f); });
  t->wait(300, [&](bool f) { ends.emplace_back(2, f); });  // re-armed: the first ends unfired
  c.advance(150);
  io.poll();
  io.restart();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0], std::make_pair(1, false));
  t->cancel();
  c.advance(1'000);
  io.poll();
  io.restart();
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[1], std::make_pair(2, false));
  t->wait(10, [&](bool f) { ends.emplace_back(3, f); });
  t.reset();  // destroyed while armed: ends unfired, and the clock forgets it
  io.poll();
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_EQ(ends[2], std::make_pair(3, false));
  EXPECT_EQ(c.armed(), 0u);
}

TEST(ManualClockTimer, DueTimersFireInDueOrderAndAZeroDelayFiresAtOnce) {
  boost::asio::io_context io;
  manual_clock c;
  auto a = c.make_timer(io.get_executor());
  auto b = c.make_timer(io.get_executor());
  auto z = c.make_timer(io.get_executor());
  std::vector<char> order;
  a->wait(200, [&](bool) { order.push_back('a'); });
  b->wait(100, [&](bool) { order.push_back('b'); });
  z->wait(0, [&](bool f) { order.push_back(f ? 'z' : '!'); });
  io.poll();
  io.restart();
  EXPECT_EQ(order, std::vector<char>({'z'}));
  c.advance(1'000);
  io.poll();
  EXPECT_EQ(order, std::vector<char>({'z', 'b', 'a'}));
}

TEST(ManualClockTimer, ACoroutineSleepsUntilTheClockIsAdvanced) {
  boost::asio::io_context io;
  manual_clock c;
  auto t = c.make_timer(io.get_executor());
  int stage = 0;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        stage = 1;
        bool fired = co_await async_wait(*t, 60'000, boost::asio::use_awaitable);
        stage = fired ? 2 : 3;
      },
      boost::asio::detached);
  io.poll();
  io.restart();
  EXPECT_EQ(stage, 1);
  c.advance(60'000);
  io.poll();
  EXPECT_EQ(stage, 2);
}

TEST(ManualClockTimer, AWaitIsDroppedWhenItsExecutorsContextGoesAway) {
  manual_clock c;
  std::unique_ptr<timer> t;
  bool ended = false;
  {
    boost::asio::io_context io;
    t = c.make_timer(io.get_executor());
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          co_await async_wait(*t, 1'000, boost::asio::use_awaitable);
          ended = true;
        },
        boost::asio::detached);
    io.poll();
    EXPECT_EQ(c.armed(), 1u);
  }  // destroyed with a coroutine waiting on the manual clock (an engine stopped mid-wait)
  EXPECT_EQ(c.armed(), 0u);  // its wait went with the context, not later with the clock
  EXPECT_FALSE(ended);
  c.advance(2'000);  // nothing left to fire
  t.reset();
  EXPECT_FALSE(ended);
}

TEST(SystemClockTimer, FiresAfterItsDelayAndCancelEndsItUnfired) {
  boost::asio::io_context io;
  system_clock_source c;
  auto t = c.make_timer(io.get_executor());
  auto u = c.make_timer(io.get_executor());
  int fired = 0, cancelled = 0;
  t->wait(1, [&](bool f) { (f ? fired : cancelled)++; });
  u->wait(3'600'000, [&](bool f) { (f ? fired : cancelled)++; });
  u->cancel();
  io.run_for(std::chrono::seconds(10));  // returns as soon as both waits ended
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(cancelled, 1);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
