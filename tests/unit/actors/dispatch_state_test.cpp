// The model dispatcher's decisions, driven without an actor system or NATS, over real budgets.

#include "actors/dispatch_state.hpp"

#include <gtest/gtest.h>

#include "actors/budget.hpp"

namespace sy::actors {
namespace {

runtime::delivery msg(int i) {
  runtime::delivery d;
  d.data = "task:" + std::to_string(i);
  d.reply = "$JS.ACK.test." + std::to_string(i);
  return d;
}

std::vector<runtime::delivery> msgs(int n) {
  std::vector<runtime::delivery> out;
  for (int i = 0; i < n; ++i) out.push_back(msg(i));
  return out;
}

/// One dispatcher over a per-model budget and a global one, as the actor wires them.
struct rig {
  rig(int per_model, int global, uint64_t id = 1)
      : model(per_model), shared_global(global), logic(per_model, slots(id)) {}
  dispatch_state::slot_source slots(uint64_t id) {
    return dispatch_state::both(model, shared_global, id, [this] { ++wakes; });
  }
  global_budget model;
  global_budget shared_global;
  int wakes = 0;
  dispatch_state logic;
};

TEST(DispatchState, AnIdleModelFetchesOneMessageWithoutHoldingASlot) {
  rig r(4, 4);
  auto a = r.logic.on_fetch(false);
  EXPECT_EQ(a.fetch, 1);
  EXPECT_TRUE(r.logic.fetch_outstanding());
  EXPECT_EQ(r.model.free(), 4);                 // nothing held while it waits for work
  EXPECT_EQ(r.logic.on_fetch(false).fetch, 0);  // one fetch outstanding at a time
  auto none = r.logic.on_fetched({}, "", false);
  EXPECT_TRUE(none.start.empty());
  EXPECT_FALSE(r.logic.fetch_outstanding());
  EXPECT_EQ(r.logic.on_fetch(false).fetch, 1);  // still idle: one again
  auto one = r.logic.on_fetched(msgs(1), "", false);
  ASSERT_EQ(one.start.size(), 1u);
  EXPECT_EQ(r.model.free(), 3);  // the started attempt holds a slot of each budget
  EXPECT_EQ(r.shared_global.free(), 3);
}

TEST(DispatchState, ABusyModelTakesSlotsFirstAndGivesBackWhatTheFetchDidNotUse) {
  rig r(4, 10);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);  // now busy, 1 slot in use
  auto a = r.logic.on_fetch(false);
  EXPECT_EQ(a.fetch, 3);  // the 3 slots left of the model's 4
  EXPECT_EQ(r.model.free(), 0);
  auto got = r.logic.on_fetched(msgs(2), "", false);
  EXPECT_EQ(got.start.size(), 2u);
  EXPECT_EQ(r.model.free(), 1);  // the unused one went back
  EXPECT_EQ(r.shared_global.free(), 7);
}

TEST(DispatchState, AMessageFetchedWhenNoSlotIsFreeWaitsForOne) {
  rig r(2, 1);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);  // holds the only global slot
  ASSERT_EQ(r.shared_global.free(), 0);
  // Busy, but no global slot: nothing to fetch, queued as a waiter.
  EXPECT_EQ(r.logic.on_fetch(false).fetch, 0);
  // An idle-mode message that arrives with no slot free waits in the dispatcher.
  rig idle(2, 1, 7);
  ASSERT_TRUE(idle.shared_global.try_acquire());  // someone else holds the global slot
  (void)idle.logic.on_fetch(false);
  auto waits = idle.logic.on_fetched(msgs(1), "", false);
  EXPECT_TRUE(waits.start.empty());
  EXPECT_TRUE(idle.logic.has_pending());
  EXPECT_TRUE(idle.logic.on_fetch(false).start.empty());  // still no slot
  idle.shared_global.release(1);  // handed to the waiting dispatcher, which is woken
  EXPECT_GE(idle.wakes, 1);
  auto go = idle.logic.on_fetch(false);
  ASSERT_EQ(go.start.size(), 1u);
  EXPECT_EQ(go.start[0].data, "task:0");
  EXPECT_FALSE(idle.logic.has_pending());
}

TEST(DispatchState, AnsweredAttemptsStillCommittingCapTheNextFetch) {
  rig r(2, 10);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  auto a = r.logic.on_fetch(false);
  ASSERT_EQ(a.fetch, 1);
  (void)r.logic.on_fetched(msgs(1), "", false);
  r.logic.on_answered();
  r.logic.on_answered();  // both slots back, both outcomes still committing
  EXPECT_EQ(r.model.free(), 2);
  EXPECT_EQ(r.logic.finishing(), 2);
  EXPECT_EQ(r.logic.on_fetch(false).fetch, 0);  // at the limit: wait for a `done`
  r.logic.on_done(true);
  EXPECT_EQ(r.logic.on_fetch(false).fetch, 2);
}

TEST(DispatchState, AnAttemptThatNeverSentGivesItsSlotBackWhenItEnds) {
  rig r(3, 3);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  EXPECT_EQ(r.model.free(), 2);
  r.logic.on_done(false);
  EXPECT_EQ(r.model.free(), 3);
  EXPECT_EQ(r.shared_global.free(), 3);
  EXPECT_EQ(r.logic.finishing(), 0);
}

TEST(DispatchState, AFailedFetchGivesItsSlotsBackAndPauses) {
  rig r(4, 4);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  ASSERT_EQ(r.logic.on_fetch(false).fetch, 3);
  auto a = r.logic.on_fetched({}, "connection closed", false);
  EXPECT_TRUE(a.pause);
  EXPECT_TRUE(a.start.empty());
  EXPECT_EQ(r.model.free(), 3);
  EXPECT_FALSE(r.logic.error_reported(true));  // first failure: log it
  EXPECT_TRUE(r.logic.error_reported(true));   // later ones: already logged
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched({}, "", false);  // a fetch that works ends the outage
  EXPECT_FALSE(r.logic.error_reported(false));
}

TEST(DispatchState, OnceShutdownBeganFetchedAndWaitingMessagesAreHandedBack) {
  rig r(2, 2);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  ASSERT_EQ(r.logic.on_fetch(false).fetch, 1);
  auto a = r.logic.on_fetched(msgs(1), "", true);
  EXPECT_EQ(a.hand_back.size(), 1u);
  EXPECT_TRUE(a.start.empty());
  EXPECT_EQ(r.model.free(), 1);  // the fetch's slot went back; the running attempt keeps one
  EXPECT_EQ(r.logic.on_fetch(true).fetch, 0);  // no new fetch

  rig idle(1, 1, 9);
  ASSERT_TRUE(idle.shared_global.try_acquire());
  (void)idle.logic.on_fetch(false);
  (void)idle.logic.on_fetched(msgs(1), "", false);  // waits for a slot
  ASSERT_TRUE(idle.logic.has_pending());
  auto back = idle.logic.on_fetch(true);
  EXPECT_EQ(back.hand_back.size(), 1u);
  EXPECT_FALSE(idle.logic.has_pending());
}

TEST(DispatchState, AHotModelDoesNotStarveAColdOneOfTheGlobalBudget) {
  // Two dispatchers over one global budget of 1: the hot one releases and asks again at once,
  // but the slot goes to the cold one that was already waiting.
  global_budget global(1);
  global_budget hot_model(4), cold_model(4);
  int cold_woken = 0;
  auto slots = [&](global_budget& model, uint64_t id, int* woken) {
    return dispatch_state::both(model, global, id, [woken] {
      if (woken) ++*woken;
    });
  };
  dispatch_state hot(4, slots(hot_model, 1, nullptr));
  dispatch_state cold(4, slots(cold_model, 2, &cold_woken));
  (void)hot.on_fetch(false);
  ASSERT_EQ(hot.on_fetched(msgs(1), "", false).start.size(), 1u);  // holds the slot
  (void)cold.on_fetch(false);
  EXPECT_TRUE(cold.on_fetched(msgs(1), "", false).start.empty());  // waits for it
  hot.on_done(false);  // the hot attempt ends and the hot model asks again at once
  EXPECT_EQ(hot.on_fetch(false).fetch, 0);  // no slot: it queues behind the cold model
  EXPECT_EQ(cold_woken, 1);
  EXPECT_EQ(cold.on_fetch(false).start.size(), 1u);  // the cold model got the slot
}

}  // namespace
}  // namespace sy::actors
