// The budget owners' ledger (actors/slot_ledger.hpp): never grants beyond the cap, hands freed
// slots out one at a time in turn, and asks reusers back for what waiters need.

#include <gtest/gtest.h>

#include <vector>

#include "actors/slot_ledger.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

using grants = std::vector<slot_grant>;

TEST(slot_ledger, grants_what_is_free_and_queues_the_rest) {
  slot_ledger l{5};
  EXPECT_EQ(l.want(1, 3), 3);
  EXPECT_EQ(l.want(2, 3), 2) << "two are free";
  EXPECT_EQ(l.free(), 0);
  EXPECT_EQ(l.waiting(), 1u);
  EXPECT_EQ(l.wanted(), 1);
  EXPECT_EQ(l.release(1, 3), (grants{{2, 1}})) << "the waiter's one slot, then the rest is free";
  EXPECT_EQ(l.free(), 2);
  EXPECT_EQ(l.held(1), 0);
  EXPECT_EQ(l.held(2), 3);
}

TEST(slot_ledger, nobody_takes_a_free_slot_ahead_of_a_waiter) {
  slot_ledger l{2};
  ASSERT_EQ(l.want(1, 2), 2);
  EXPECT_EQ(l.want(2, 1), 0);
  EXPECT_EQ(l.release(1, 1), (grants{{2, 1}}));
  EXPECT_EQ(l.want(1, 1), 0) << "the hot holder asks again at once: it queues";
  EXPECT_EQ(l.release(2, 1), (grants{{1, 1}}));
}

TEST(slot_ledger, freed_slots_go_one_at_a_time_in_turn) {
  slot_ledger l{4};
  ASSERT_EQ(l.want(9, 4), 4);
  EXPECT_EQ(l.want(1, 3), 0);
  EXPECT_EQ(l.want(2, 3), 0);
  EXPECT_EQ(l.release(9, 4), (grants{{1, 2}, {2, 2}})) << "alternating, not 3 then 1";
  EXPECT_EQ(l.wanted(), 2);
}

TEST(slot_ledger, a_new_wish_replaces_the_old_and_zero_leaves_the_queue) {
  slot_ledger l{1};
  ASSERT_EQ(l.want(1, 1), 1);
  EXPECT_EQ(l.want(2, 5), 0);
  EXPECT_EQ(l.want(2, 1), 0);
  EXPECT_EQ(l.wanted(), 1);
  EXPECT_EQ(l.want(2, 0), 0);
  EXPECT_EQ(l.waiting(), 0u);
  EXPECT_TRUE(l.release(1, 1).empty());
  EXPECT_EQ(l.free(), 1);
}

TEST(slot_ledger, the_cap_bounds_grants_and_a_raise_serves_the_waiters) {
  slot_ledger l{4};
  EXPECT_TRUE(l.set_cap(1).empty());
  EXPECT_EQ(l.want(1, 3), 1);
  EXPECT_EQ(l.set_cap(3), (grants{{1, 2}}));
  EXPECT_EQ(l.set_cap(9), grants{}) << "clamped to the limit; nobody waits";
  EXPECT_EQ(l.cap(), 4);
  EXPECT_EQ(l.free(), 1);
}

TEST(slot_ledger, reusers_are_asked_back_one_slot_per_waiter_most_held_first) {
  slot_ledger l{4};
  l.reuses(1);
  l.reuses(2);
  ASSERT_EQ(l.want(1, 3), 3);
  ASSERT_EQ(l.want(2, 1), 1);
  EXPECT_TRUE(l.yields().empty()) << "nobody waits";
  EXPECT_EQ(l.want(3, 2), 0);
  EXPECT_EQ(l.yields(), (std::vector<uint64_t>{1})) << "one waiter, one slot asked";
  EXPECT_TRUE(l.yields().empty()) << "already asked";
  EXPECT_EQ(l.release(1, 1), (grants{{3, 1}}));
  EXPECT_EQ(l.yields(), (std::vector<uint64_t>{1})) << "the waiter wants one more";
  EXPECT_EQ(l.release(1, 1), (grants{{3, 1}}));
  EXPECT_TRUE(l.yields().empty());
}

TEST(slot_ledger, holders_that_do_not_reuse_are_never_asked) {
  slot_ledger l{1};
  ASSERT_EQ(l.want(1, 1), 1);  // a dispatcher's own attempts give their slots back anyway
  EXPECT_EQ(l.want(2, 1), 0);
  EXPECT_TRUE(l.yields().empty());
}

TEST(slot_ledger, a_lowered_cap_asks_back_what_is_held_beyond_it) {
  slot_ledger l{4};
  l.reuses(1);
  ASSERT_EQ(l.want(1, 4), 4);
  EXPECT_TRUE(l.set_cap(2).empty());
  EXPECT_EQ(l.yields(), (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(l.free(), 0);
  EXPECT_TRUE(l.release(1, 2).empty());
  EXPECT_EQ(l.asked(), 0);
  EXPECT_EQ(l.free(), 0);
}

TEST(slot_ledger, a_holder_that_leaves_frees_its_slots_for_the_waiters) {
  slot_ledger l{2};
  l.reuses(1);
  ASSERT_EQ(l.want(1, 2), 2);
  EXPECT_EQ(l.want(2, 2), 0);
  EXPECT_EQ(l.yields().size(), 1u);
  EXPECT_EQ(l.leave(1), (grants{{2, 2}}));
  EXPECT_EQ(l.asked(), 0);
  EXPECT_EQ(l.held(), 2);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
