// The concurrency budget: never over-grants, and hands released slots to waiters in FIFO order
// (a caller that was not waiting cannot take a slot ahead of them).

#include <gtest/gtest.h>

#include <vector>

#include "actors/budget.hpp"

namespace sy::actors {
namespace {

TEST(global_budget, grants_at_most_what_is_free) {
  global_budget b{5};
  EXPECT_EQ(b.acquire(3, 1, [] {}), 3);
  EXPECT_EQ(b.acquire(3, 2, [] {}), 2);
  EXPECT_EQ(b.free(), 0);
  b.release(4);
  EXPECT_EQ(b.free(), 4);
}

TEST(global_budget, waiters_are_woken_in_order_once_each) {
  global_budget b{1};
  ASSERT_EQ(b.acquire(1, 1, [] {}), 1);
  std::vector<int> woken;
  EXPECT_EQ(b.acquire(1, 2, [&] { woken.push_back(2); }), 0);
  EXPECT_EQ(b.acquire(1, 3, [&] { woken.push_back(3); }), 0);
  EXPECT_EQ(b.acquire(1, 2, [&] { woken.push_back(99); }), 0);  // already queued: not twice
  b.release(1);
  EXPECT_EQ(woken, (std::vector<int>{2}));
  EXPECT_EQ(b.acquire(1, 2, [] {}), 1);  // the woken model takes the slot
  b.release(1);
  EXPECT_EQ(woken, (std::vector<int>{2, 3}));
}

TEST(global_budget, clear_waiters_forgets_them) {
  global_budget b{0};
  bool woken = false;
  EXPECT_EQ(b.acquire(1, 1, [&] { woken = true; }), 0);
  b.clear_waiters();
  b.release(1);
  EXPECT_FALSE(woken);
}

// The starvation this prevents: a hot model's worker releases its slot and asks again at once,
// before the woken cold model runs. The slot is the cold model's; the hot one queues behind it.
TEST(global_budget, a_released_slot_is_handed_to_the_waiter_not_to_whoever_asks_first) {
  global_budget b{1};
  ASSERT_EQ(b.acquire(1, /*hot*/ 1, [] {}), 1);
  int cold_woken = 0;
  EXPECT_EQ(b.acquire(1, /*cold*/ 2, [&] { ++cold_woken; }), 0);
  b.release(1);  // the hot model's request finished
  EXPECT_EQ(cold_woken, 1);
  EXPECT_EQ(b.free(), 0);
  EXPECT_EQ(b.reserved(), 1);
  EXPECT_FALSE(b.try_acquire());  // the hot model's next request: no barging
  bool hot_woken = false;
  EXPECT_EQ(b.acquire(1, 1, [&] { hot_woken = true; }), 0);  // it queues instead
  EXPECT_EQ(b.acquire(1, 2, [] {}), 1);                      // the cold model takes its slot
  EXPECT_EQ(b.reserved(), 0);
  b.release(1);
  EXPECT_TRUE(hot_woken);
  EXPECT_EQ(b.acquire(1, 1, [] {}), 1);
}

TEST(global_budget, nobody_takes_a_free_slot_while_others_wait) {
  global_budget b{2};
  ASSERT_EQ(b.acquire(2, 1, [] {}), 2);
  EXPECT_EQ(b.acquire(1, 2, [] {}), 0);
  EXPECT_EQ(b.acquire(1, 3, [] {}), 0);
  b.release(1);  // reserved for 2; 3 still waits
  EXPECT_EQ(b.acquire(5, 4, [] {}), 0) << "4 arrived after 3";
  EXPECT_EQ(b.acquire(1, 2, [] {}), 1);
  b.release(2);  // one for 3, one for 4
  EXPECT_EQ(b.reserved(), 2);
  EXPECT_EQ(b.acquire(5, 4, [] {}), 1) << "4 gets what was handed to it, not more";
  EXPECT_EQ(b.acquire(1, 3, [] {}), 1);
  EXPECT_EQ(b.free(), 0);
}

TEST(global_budget, a_waiter_that_cancels_passes_its_slot_on) {
  global_budget b{1};
  ASSERT_EQ(b.acquire(1, 1, [] {}), 1);
  std::vector<int> woken;
  EXPECT_EQ(b.acquire(1, 2, [&] { woken.push_back(2); }), 0);
  EXPECT_EQ(b.acquire(1, 3, [&] { woken.push_back(3); }), 0);
  b.release(1);  // reserved for 2, which stops before it takes it
  b.cancel(2);
  EXPECT_EQ(woken, (std::vector<int>{2, 3}));
  EXPECT_EQ(b.acquire(1, 3, [] {}), 1);
  b.cancel(3);  // holds nothing any more: a no-op
  EXPECT_EQ(b.free(), 0);
  b.release(1);
  EXPECT_EQ(b.free(), 1);
  EXPECT_EQ(b.reserved(), 0);
}

TEST(global_budget, a_queued_waiter_that_cancels_is_not_woken) {
  global_budget b{1};
  ASSERT_EQ(b.acquire(1, 1, [] {}), 1);
  bool woken = false;
  EXPECT_EQ(b.acquire(1, 2, [&] { woken = true; }), 0);
  b.cancel(2);
  b.release(1);
  EXPECT_FALSE(woken);
  EXPECT_TRUE(b.try_acquire());
}

}  // namespace
}  // namespace sy::actors
