// The model dispatcher's decisions, driven without an actor system or NATS, over a real ledger of
// the model's budget (actors/slot_ledger.hpp) wired as the dispatcher wires it.

#include "actors/dispatch_state.hpp"

#include <gtest/gtest.h>

#include "actors/slot_ledger.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

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

/// One dispatcher over its model's budget, as the actor wires it: slots handed to its key by a
/// release become credit and wake it. `cap`: the global slots behind the model's (0: as many).
struct rig {
  explicit rig(int per_model, int cap = 0) : model(per_model), logic(per_model, slots()) {
    if (cap > 0) (void)model.set_cap(cap);
  }
  dispatch_state::slot_source slots() {
    return {
        [this](int want) {
          int got = std::min(want, credit);
          credit -= got;
          if (got < want) {
            got += model.want(key, want - got);
            if (got > 0) (void)model.want(key, 0);
          }
          return got;
        },
        [this](int n) { take_grants(model.release(key, n)); },
    };
  }
  void take_grants(const std::vector<slot_grant>& grants) {
    for (const auto& g : grants)
      if (g.key == key) {
        credit += g.n;
        ++wakes;
      }
  }
  /// Another holder (a batch lane) takes a slot, or gives it back.
  int other_takes() { return model.want(other, 1); }
  void other_releases() { take_grants(model.release(other, 1)); }

  slot_ledger model;
  const uint64_t key = 1, other = 99;
  int credit = 0;
  int wakes = 0;
  dispatch_state logic;
};

TEST(DispatchState, AnIdleModelFetchesOneMessageWithoutHoldingASlot) {
  rig r(4);
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
  EXPECT_EQ(r.model.free(), 3);  // the started attempt holds a slot
}

TEST(DispatchState, ABusyModelTakesSlotsFirstAndGivesBackWhatTheFetchDidNotUse) {
  rig r(4);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);  // now busy, 1 slot in use
  auto a = r.logic.on_fetch(false);
  EXPECT_EQ(a.fetch, 3);  // the 3 slots left of the model's 4
  EXPECT_EQ(r.model.free(), 0);
  auto got = r.logic.on_fetched(msgs(2), "", false);
  EXPECT_EQ(got.start.size(), 2u);
  EXPECT_EQ(r.model.free(), 1);  // the unused one went back
}

TEST(DispatchState, AMessageFetchedWhenNoSlotIsFreeWaitsForOne) {
  rig r(2, 1);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);  // holds the only slot the global one backs
  ASSERT_EQ(r.model.free(), 0);
  // Busy, but no slot: nothing to fetch, queued as a waiter.
  EXPECT_EQ(r.logic.on_fetch(false).fetch, 0);
  // An idle-mode message that arrives with no slot free waits in the dispatcher.
  rig idle(2, 1);
  ASSERT_EQ(idle.other_takes(), 1);  // a batch lane holds the only slot
  (void)idle.logic.on_fetch(false);
  auto waits = idle.logic.on_fetched(msgs(1), "", false);
  EXPECT_TRUE(waits.start.empty());
  EXPECT_TRUE(idle.logic.has_pending());
  EXPECT_TRUE(idle.logic.on_fetch(false).start.empty());  // still no slot
  idle.other_releases();  // handed to the waiting dispatcher, which is woken
  EXPECT_GE(idle.wakes, 1);
  auto go = idle.logic.on_fetch(false);
  ASSERT_EQ(go.start.size(), 1u);
  EXPECT_EQ(go.start[0].data, "task:0");
  EXPECT_FALSE(idle.logic.has_pending());
}

TEST(DispatchState, AnsweredAttemptsStillCommittingCapTheNextFetch) {
  rig r(2);
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
  rig r(3);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  EXPECT_EQ(r.model.free(), 2);
  r.logic.on_done(false);
  EXPECT_EQ(r.model.free(), 3);
  EXPECT_EQ(r.logic.finishing(), 0);
}

TEST(DispatchState, AFailedFetchGivesItsSlotsBackAndPauses) {
  rig r(4);
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
  rig r(2);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  ASSERT_EQ(r.logic.on_fetch(false).fetch, 1);
  auto a = r.logic.on_fetched(msgs(1), "", true);
  EXPECT_EQ(a.hand_back.size(), 1u);
  EXPECT_TRUE(a.start.empty());
  EXPECT_EQ(r.model.free(), 1);  // the fetch's slot went back; the running attempt keeps one
  EXPECT_EQ(r.logic.on_fetch(true).fetch, 0);  // no new fetch

  rig idle(1);
  ASSERT_EQ(idle.other_takes(), 1);
  (void)idle.logic.on_fetch(false);
  (void)idle.logic.on_fetched(msgs(1), "", false);  // waits for a slot
  ASSERT_TRUE(idle.logic.has_pending());
  auto back = idle.logic.on_fetch(true);
  EXPECT_EQ(back.hand_back.size(), 1u);
  EXPECT_FALSE(idle.logic.has_pending());
}

TEST(DispatchState, ABatchLaneThatAsksAgainAtOnceQueuesBehindTheWaitingAttempts) {
  // The model's one slot: a lane holds it; the dispatcher's message waits for it; the lane gives
  // it back and asks again at once, but the slot goes to the dispatcher that was waiting.
  rig r(1);
  ASSERT_EQ(r.other_takes(), 1);
  (void)r.logic.on_fetch(false);
  EXPECT_TRUE(r.logic.on_fetched(msgs(1), "", false).start.empty());  // waits for it
  r.other_releases();
  EXPECT_EQ(r.other_takes(), 0) << "the lane queues behind the waiting dispatcher";
  EXPECT_EQ(r.wakes, 1);
  EXPECT_EQ(r.logic.on_fetch(false).start.size(), 1u);  // the dispatcher got the slot
  r.logic.on_done(false);  // its attempt ends: the slot goes to the lane, which waited
  EXPECT_EQ(r.model.held(r.other), 1);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
