// The model dispatcher's decisions, driven without an actor system or NATS, over a real ledger of
// the model's budget (actors/slot_ledger.hpp) wired as the dispatcher wires it.

#include "actors/dispatch_state.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "actors/slot_ledger.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

/// A message naming `tasks` tasks (`t<i>`, `t<i>.1`, ...), as the relay groups them.
runtime::delivery msg(int i, int tasks = 1) {
  runtime::delivery d;
  for (int k = 0; k < tasks; ++k) {
    if (k > 0) d.data += '\n';
    d.data += "t" + std::to_string(i) + (k > 0 ? "." + std::to_string(k) : "") + ":1";
  }
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
  explicit rig(int per_model, int cap = 0)
      : model(per_model), logic(per_model, slots(), [this](const runtime::delivery& d, auto again) {
          finished.push_back(d.reply + (again ? " nak " + std::to_string(*again) : " ack"));
        }) {
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
  std::vector<std::string> finished;  ///< "<reply> ack" / "<reply> nak <ms>", as the holds end
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
  EXPECT_EQ(go.start[0].task_id, "t0");
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

// --- a message that wakes many tasks (DESIGN rule 3)

std::vector<runtime::delivery> one(runtime::delivery d) {
  std::vector<runtime::delivery> v;
  v.push_back(std::move(d));
  return v;
}

TEST(DispatchState, AMessageOfManyTasksStartsWhatTheSlotsAllowAndKeepsTheRestWithoutFetching) {
  rig r(2);
  (void)r.logic.on_fetch(false);  // idle: one message
  auto a = r.logic.on_fetched(one(msg(0, 5)), "", false);
  ASSERT_EQ(a.start.size(), 2u);  // both slots
  EXPECT_EQ(a.start[0].task_id, "t0");
  EXPECT_EQ(a.start[1].task_id, "t0.1");
  EXPECT_EQ(r.logic.kept(), 3u);
  EXPECT_EQ(r.model.free(), 0);
  auto none = r.logic.on_fetch(false);
  EXPECT_EQ(none.fetch, 0) << "no fetch while tasks are kept";
  EXPECT_TRUE(none.start.empty());
  ASSERT_EQ(r.logic.kept_messages().size(), 1u);  // kept alive by the dispatcher
  // The started tasks are leased: the message waits for the kept ones.
  for (auto& t : a.start) t.msg->settled();
  EXPECT_TRUE(r.finished.empty()) << "acked before every task it names was leased";
  r.logic.on_done(false);  // an attempt ends: its slot starts a kept task, no fetch
  auto next = r.logic.on_fetch(false);
  EXPECT_EQ(next.fetch, 0);
  ASSERT_EQ(next.start.size(), 1u);
  EXPECT_EQ(next.start[0].task_id, "t0.2");
  r.logic.on_answered();  // t0.1's exchange is over: its slot starts the next kept task
  r.logic.on_done(true);
  auto third = r.logic.on_fetch(false);
  ASSERT_EQ(third.start.size(), 1u);
  EXPECT_EQ(third.start[0].task_id, "t0.3");
  r.logic.on_done(false);  // t0.2 and t0.3 end without sending: both slots free
  r.logic.on_done(false);
  auto last = r.logic.on_fetch(false);
  ASSERT_EQ(last.start.size(), 1u);  // the last kept task
  EXPECT_EQ(last.start[0].task_id, "t0.4");
  EXPECT_EQ(r.logic.kept(), 0u);
  EXPECT_EQ(r.model.free(), 1) << "a slot taken for a task that was not there";
  for (auto* t : {&next.start[0], &third.start[0], &last.start[0]}) t->msg->settled();
  EXPECT_EQ(r.finished, (std::vector<std::string>{"$JS.ACK.test.0 ack"})) << "acked once";
  // Nothing kept: the next look fetches (busy: as many messages as it holds slots).
  r.logic.on_done(false);
  EXPECT_EQ(r.logic.on_fetch(false).fetch, 2);
}

TEST(DispatchState, ABusyFetchStartsAsManyTasksAsItHoldsSlotsFromEveryMessage) {
  rig r(4);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);  // busy, one slot in use
  ASSERT_EQ(r.logic.on_fetch(false).fetch, 3);
  std::vector<runtime::delivery> got;
  got.push_back(msg(1, 2));
  got.push_back(msg(2, 3));
  auto a = r.logic.on_fetched(std::move(got), "", false);
  ASSERT_EQ(a.start.size(), 3u);
  EXPECT_EQ(a.start[2].task_id, "t2");
  EXPECT_EQ(r.logic.kept(), 2u);
  EXPECT_EQ(r.model.free(), 0) << "every slot the fetch held went to a task";
  EXPECT_EQ(r.logic.kept_messages().size(), 1u);
}

TEST(DispatchState, KeptTasksAreHandedBackAtShutdownAndTheMessageNakedOnceTheRestSettled) {
  rig r(1);
  (void)r.logic.on_fetch(false);
  auto a = r.logic.on_fetched(one(msg(0, 3)), "", false);
  ASSERT_EQ(a.start.size(), 1u);
  auto back = r.logic.on_fetch(true);
  ASSERT_EQ(back.hand_back.size(), 2u);
  EXPECT_EQ(r.logic.kept(), 0u);
  for (auto& t : back.hand_back) t.msg->redeliver(0);
  EXPECT_TRUE(r.finished.empty()) << "the started task has not settled yet";
  a.start[0].msg->settled();
  EXPECT_EQ(r.finished, (std::vector<std::string>{"$JS.ACK.test.0 nak 0"}));
  // A dispatcher that goes with tasks still kept hands them back too.
  std::vector<std::string> gone;
  std::optional<dispatch_state> d;
  d.emplace(1, dispatch_state::slot_source{[](int want) { return want; }, [](int) {}},
            [&](const runtime::delivery& m, auto again) {
              gone.push_back(m.reply + (again ? " nak " + std::to_string(*again) : " ack"));
            });
  (void)d->on_fetch(false);
  auto started = d->on_fetched(one(msg(7, 2)), "", false);
  ASSERT_EQ(started.start.size(), 1u);
  started.start[0].msg->settled();
  EXPECT_TRUE(gone.empty());
  d.reset();
  EXPECT_EQ(gone, (std::vector<std::string>{"$JS.ACK.test.7 nak 0"}));
}

TEST(DispatchState, AMessageIsNakedWithTheShortestDelayItsTasksAskedAndABadOneTerminated) {
  std::vector<std::string> out;
  task_message_hold hold(msg(0, 3), 3, [&](const runtime::delivery&, auto again) {
    out.push_back(again ? "nak " + std::to_string(*again) : "ack");
  });
  hold.redeliver(500);  // its backoff is not over
  hold.settled();       // leased
  hold.redeliver(200);
  hold.settled();  // a settle too many changes nothing
  EXPECT_EQ(out, (std::vector<std::string>{"nak 200"}));

  rig r(2);
  (void)r.logic.on_fetch(false);
  runtime::delivery bad;
  bad.data = "not a task";
  auto a = r.logic.on_fetched(one(std::move(bad)), "", false);
  EXPECT_EQ(a.term.size(), 1u);
  EXPECT_TRUE(a.start.empty());
  EXPECT_EQ(r.model.free(), 2);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
