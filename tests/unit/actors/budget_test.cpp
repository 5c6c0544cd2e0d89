// The global concurrency budget: never over-grants, and wakes waiting dispatchers in FIFO order.

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

}  // namespace
}  // namespace sy::actors
