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

std::vector<runtime::delivery> one_of(runtime::delivery d) {
  std::vector<runtime::delivery> v;
  v.push_back(std::move(d));
  return v;
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
      : model(per_model),
        logic(
            per_model, slots(),
            [this](const runtime::delivery& d, auto again) {
              finished.push_back(d.reply + (again ? " nak " + std::to_string(*again) : " ack"));
            },
            /*per_slot=*/1) {
    if (cap > 0) (void)model.set_cap(cap);
    logic.note_exchange_ms(1);  // a fast model leases ahead (one test below is slow)
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
  EXPECT_EQ(r.model.free(), 4) << "an attempt commits its lease before it takes a slot";
  EXPECT_EQ(r.logic.starting(), 1);
  r.logic.on_ready(7);
  auto go = r.logic.on_fetch(false);
  EXPECT_EQ(go.go, (std::vector<uint64_t>{7}));
  EXPECT_EQ(r.model.free(), 3);  // the leased attempt holds a slot while it sends
}

TEST(DispatchState, ABusyModelFetchesAsManyMessagesAsItsLookaheadHasRoom) {
  rig r(4);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);  // now busy: one attempt starting
  auto a = r.logic.on_fetch(false);
  EXPECT_EQ(a.fetch, 3);  // the lookahead is the model's 4, one is starting
  EXPECT_EQ(r.model.free(), 4) << "a fetch holds no slot";
  auto got = r.logic.on_fetched(msgs(2), "", false);
  EXPECT_EQ(got.start.size(), 2u);
  EXPECT_EQ(r.logic.starting(), 3);
  r.logic.on_ready(1);
  r.logic.on_ready(2);
  r.logic.on_ready(3);
  auto go = r.logic.on_fetch(false);
  EXPECT_EQ(go.go, (std::vector<uint64_t>{1, 2, 3}));  // in the order they became ready
  EXPECT_EQ(go.fetch, 4) << "ready attempts that went out leave the lookahead";
}

TEST(DispatchState, TheLookaheadIsFourAttemptsPerSlotByDefault) {
  std::vector<std::string> acks;
  dispatch_state d(2, {[](int want) { return want; }, [](int) {}},
                   [&](const runtime::delivery& m, auto) { acks.push_back(m.reply); });
  d.note_exchange_ms(1);
  (void)d.on_fetch(false);
  auto a = d.on_fetched(one_of(msg(0, 10)), "", false);
  EXPECT_EQ(a.start.size(), 8u) << "2 slots, 4 attempts starting or leased per slot";
  EXPECT_EQ(d.kept(), 2u);
  for (uint64_t id = 1; id <= 8; ++id) d.on_ready(id);
  auto go = d.on_fetch(false);
  EXPECT_EQ(go.go.size(), 2u) << "the slot source grants what is asked: at most the limit";
  EXPECT_EQ(go.start.size(), 2u) << "the two that went out made room for the kept two";
}

TEST(DispatchState, ALeasedAttemptWaitsForASlotAndGetsTheFirstOneFreed) {
  rig r(2, 1);
  ASSERT_EQ(r.other_takes(), 1);  // a batch lane holds the only slot the global one backs
  (void)r.logic.on_fetch(false);
  auto a = r.logic.on_fetched(msgs(1), "", false);
  ASSERT_EQ(a.start.size(), 1u) << "its lease does not wait for a slot";
  r.logic.on_ready(1);
  EXPECT_TRUE(r.logic.on_fetch(false).go.empty());  // no slot: it waits in turn
  EXPECT_EQ(r.logic.ready(), 1u);
  r.other_releases();  // handed to the waiting dispatcher, which is woken
  EXPECT_GE(r.wakes, 1);
  auto go = r.logic.on_fetch(false);
  EXPECT_EQ(go.go, (std::vector<uint64_t>{1}));
  EXPECT_EQ(r.logic.ready(), 0u);
}

TEST(DispatchState, AnsweredAttemptsStillCommittingCapTheNextStartAndFetch) {
  rig r(2);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  r.logic.on_ready(1);
  auto a = r.logic.on_fetch(false);
  ASSERT_EQ(a.go.size(), 1u);
  ASSERT_EQ(a.fetch, 2);
  (void)r.logic.on_fetched(msgs(1), "", false);
  r.logic.on_ready(2);
  ASSERT_EQ(r.logic.on_fetch(false).go.size(), 1u);
  r.logic.on_answered(1);
  r.logic.on_answered(1);  // both slots back, both outcomes still committing
  EXPECT_EQ(r.model.free(), 2);
  EXPECT_EQ(r.logic.finishing(), 2);
  (void)r.logic.on_fetched(msgs(1), "", false);  // the fetch asked for before: kept, not started
  EXPECT_EQ(r.logic.kept(), 1u);
  auto capped = r.logic.on_fetch(false);
  EXPECT_TRUE(capped.start.empty()) << "at the limit: wait for a `done`";
  EXPECT_EQ(capped.fetch, 0);
  r.logic.on_done(attempt_stage::answered, 1);
  EXPECT_EQ(r.logic.on_fetch(false).start.size(), 1u);
}

TEST(DispatchState, AnAttemptThatEndsGivesBackWhatItHeld) {
  rig r(3);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  r.logic.on_done(attempt_stage::starting, 0);  // stale: it never leased
  EXPECT_EQ(r.logic.starting(), 0);
  EXPECT_EQ(r.model.free(), 3);
  // Granted a slot it never used (withdrawn while the `start` was on its way): the slot comes
  // back.
  (void)r.logic.on_fetched(msgs(1), "", false);
  r.logic.on_ready(5);
  ASSERT_EQ(r.logic.on_fetch(false).go.size(), 1u);
  EXPECT_EQ(r.model.free(), 2);
  r.logic.on_done(attempt_stage::ready, 5);
  EXPECT_EQ(r.model.free(), 3);
  // Withdrawn while it waited: it leaves the turn, no slot to give.
  rig busy(1, 1);
  ASSERT_EQ(busy.other_takes(), 1);
  (void)busy.logic.on_fetch(false);
  (void)busy.logic.on_fetched(msgs(1), "", false);
  busy.logic.on_ready(6);
  ASSERT_TRUE(busy.logic.on_fetch(false).go.empty());
  busy.logic.on_done(attempt_stage::ready, 6);
  EXPECT_EQ(busy.logic.ready(), 0u);
  EXPECT_EQ(busy.model.held(busy.other), 1);
  // Granted and never answered (no gateway, or the send failed inside the engine).
  rig g(1);
  (void)g.logic.on_fetch(false);
  (void)g.logic.on_fetched(msgs(1), "", false);
  g.logic.on_ready(8);
  ASSERT_EQ(g.logic.on_fetch(false).go.size(), 1u);
  g.logic.on_done(attempt_stage::granted, 8);
  EXPECT_EQ(g.model.free(), 1);
  EXPECT_EQ(g.logic.finishing(), 0);
}

TEST(DispatchState, AFailedFetchPauses) {
  rig r(4);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  ASSERT_EQ(r.logic.on_fetch(false).fetch, 3);
  auto a = r.logic.on_fetched({}, "connection closed", false);
  EXPECT_TRUE(a.pause);
  EXPECT_TRUE(a.start.empty());
  EXPECT_EQ(r.model.free(), 4);
  EXPECT_FALSE(r.logic.error_reported(true));  // first failure: log it
  EXPECT_TRUE(r.logic.error_reported(true));   // later ones: already logged
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched({}, "", false);  // a fetch that works ends the outage
  EXPECT_FALSE(r.logic.error_reported(false));
}

TEST(DispatchState, OnceShutdownBeganFetchedAndKeptMessagesAreHandedBack) {
  rig r(2);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);
  ASSERT_EQ(r.logic.on_fetch(false).fetch, 1);
  auto a = r.logic.on_fetched(msgs(1), "", true);
  EXPECT_EQ(a.hand_back.size(), 1u);
  EXPECT_TRUE(a.start.empty());
  EXPECT_EQ(r.logic.on_fetch(true).fetch, 0);  // no new fetch

  rig full(1);
  (void)full.logic.on_fetch(false);
  (void)full.logic.on_fetched(one_of(msg(0, 2)), "", false);  // one starts, one is kept
  ASSERT_TRUE(full.logic.has_pending());
  auto back = full.logic.on_fetch(true);
  EXPECT_EQ(back.hand_back.size(), 1u);
  EXPECT_FALSE(full.logic.has_pending());
}

TEST(DispatchState, ABatchLaneThatAsksAgainAtOnceQueuesBehindTheWaitingAttempts) {
  // The model's one slot: a lane holds it; the dispatcher's leased attempt waits for it; the
  // lane gives it back and asks again at once, but the slot goes to the attempt that was waiting.
  rig r(1);
  ASSERT_EQ(r.other_takes(), 1);
  (void)r.logic.on_fetch(false);
  ASSERT_EQ(r.logic.on_fetched(msgs(1), "", false).start.size(), 1u);
  r.logic.on_ready(1);
  EXPECT_TRUE(r.logic.on_fetch(false).go.empty());  // waits for it
  r.other_releases();
  EXPECT_EQ(r.other_takes(), 0) << "the lane queues behind the waiting dispatcher";
  EXPECT_EQ(r.wakes, 1);
  EXPECT_EQ(r.logic.on_fetch(false).go.size(), 1u);  // the attempt got the slot
  r.logic.on_done(attempt_stage::granted, 1);  // it ends: the slot goes to the lane, which waited
  EXPECT_EQ(r.model.held(r.other), 1);
}

TEST(DispatchState, AModelWithLongExchangesTakesTheSlotBeforeItLeases) {
  rig r(2, 1);
  r.logic.note_exchange_ms(10'000);  // the average is now well over lease_ahead_below_ms
  ASSERT_FALSE(r.logic.leasing_ahead());
  ASSERT_EQ(r.other_takes(), 1);  // a batch lane holds the only slot
  (void)r.logic.on_fetch(false);
  auto a = r.logic.on_fetched(one_of(msg(0, 3)), "", false);
  EXPECT_TRUE(a.start.empty()) << "no slot: nothing is leased (its job stays queued)";
  EXPECT_EQ(r.logic.kept(), 3u);
  EXPECT_EQ(r.logic.on_fetch(false).fetch, 0) << "no fetch while tasks are kept";
  r.other_releases();
  auto go = r.logic.on_fetch(false);
  ASSERT_EQ(go.start.size(), 1u) << "one slot: one lease";
  EXPECT_EQ(r.model.free(), 0);
  r.logic.on_ready(4);  // its slot is already its own
  EXPECT_EQ(r.logic.on_fetch(false).go, (std::vector<uint64_t>{4}));
  EXPECT_EQ(r.logic.ready(), 0u);
  EXPECT_TRUE(r.logic.on_fetch(false).start.empty()) << "its one slot is in use";
  // An attempt that ends before its lease gives the slot taken for it back.
  r.logic.on_done(attempt_stage::granted, 4);
  auto third = r.logic.on_fetch(false);
  ASSERT_EQ(third.start.size(), 1u);
  r.logic.on_done(attempt_stage::starting, 0);  // stale
  EXPECT_EQ(r.model.free(), 1);
}

// --- a message that wakes many tasks (DESIGN rule 3)

TEST(DispatchState, AMessageOfManyTasksStartsWhatTheLookaheadAllowsAndKeepsTheRestWithoutFetching) {
  rig r(2);
  (void)r.logic.on_fetch(false);  // idle: one message
  auto a = r.logic.on_fetched(one_of(msg(0, 5)), "", false);
  ASSERT_EQ(a.start.size(), 2u);  // the lookahead of 2
  EXPECT_EQ(a.start[0].task_id, "t0");
  EXPECT_EQ(a.start[1].task_id, "t0.1");
  EXPECT_EQ(r.logic.kept(), 3u);
  auto none = r.logic.on_fetch(false);
  EXPECT_EQ(none.fetch, 0) << "no fetch while tasks are kept";
  EXPECT_TRUE(none.start.empty());
  ASSERT_EQ(r.logic.kept_messages().size(), 1u);  // kept alive by the dispatcher
  // The started tasks are leased: the message waits for the kept ones.
  for (auto& t : a.start) t.msg->settled();
  EXPECT_TRUE(r.finished.empty()) << "acked before every task it names was leased";
  r.logic.on_ready(1);  // t0 leased: it goes out, and the next kept task starts, no fetch
  auto next = r.logic.on_fetch(false);
  EXPECT_EQ(next.go, (std::vector<uint64_t>{1}));
  EXPECT_EQ(next.fetch, 0);
  ASSERT_EQ(next.start.size(), 1u);
  EXPECT_EQ(next.start[0].task_id, "t0.2");
  r.logic.on_done(attempt_stage::starting, 0);  // t0.1 was stale: room for the next kept task
  auto third = r.logic.on_fetch(false);
  ASSERT_EQ(third.start.size(), 1u);
  EXPECT_EQ(third.start[0].task_id, "t0.3");
  r.logic.on_done(attempt_stage::starting, 0);  // t0.2 and t0.3 stale too
  r.logic.on_done(attempt_stage::starting, 0);
  auto last = r.logic.on_fetch(false);
  ASSERT_EQ(last.start.size(), 1u);  // the last kept task
  EXPECT_EQ(last.start[0].task_id, "t0.4");
  EXPECT_EQ(r.logic.kept(), 0u);
  for (auto* t : {&next.start[0], &third.start[0], &last.start[0]}) t->msg->settled();
  EXPECT_EQ(r.finished, (std::vector<std::string>{"$JS.ACK.test.0 ack"})) << "acked once";
  EXPECT_EQ(last.fetch, 1) << "nothing kept: it fetches into the lookahead's room";
}

TEST(DispatchState, ABusyFetchStartsWhatTheLookaheadHasRoomForFromEveryMessage) {
  rig r(4);
  (void)r.logic.on_fetch(false);
  (void)r.logic.on_fetched(msgs(1), "", false);  // busy, one attempt starting
  ASSERT_EQ(r.logic.on_fetch(false).fetch, 3);
  std::vector<runtime::delivery> got;
  got.push_back(msg(1, 2));
  got.push_back(msg(2, 3));
  auto a = r.logic.on_fetched(std::move(got), "", false);
  ASSERT_EQ(a.start.size(), 3u);
  EXPECT_EQ(a.start[2].task_id, "t2");
  EXPECT_EQ(r.logic.kept(), 2u);
  EXPECT_EQ(r.logic.starting(), 4);
  EXPECT_EQ(r.logic.kept_messages().size(), 1u);
}

TEST(DispatchState, KeptTasksAreHandedBackAtShutdownAndTheMessageNakedOnceTheRestSettled) {
  rig r(1);
  (void)r.logic.on_fetch(false);
  auto a = r.logic.on_fetched(one_of(msg(0, 3)), "", false);
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
  d.emplace(
      1, dispatch_state::slot_source{[](int want) { return want; }, [](int) {}},
      [&](const runtime::delivery& m, auto again) {
        gone.push_back(m.reply + (again ? " nak " + std::to_string(*again) : " ack"));
      },
      1);
  (void)d->on_fetch(false);
  auto started = d->on_fetched(one_of(msg(7, 2)), "", false);
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
  auto a = r.logic.on_fetched(one_of(std::move(bad)), "", false);
  EXPECT_EQ(a.term.size(), 1u);
  EXPECT_TRUE(a.start.empty());
  EXPECT_EQ(r.model.free(), 2);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
