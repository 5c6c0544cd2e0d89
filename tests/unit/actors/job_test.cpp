// The job actor's decisions (actors/attempt.hpp) and the job registry's table
// (actors/job_registry.hpp) without an actor system, and the registry's message flow on CAF's
// test coordinator.

#include <utility>  // before any Asio header (Boost 1.74)

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/attempt.hpp"
#include "actors/job_registry.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

using phase = attempt_state::phase;

TEST(attempt_state, an_abort_while_sending_aborts_at_once) {
  attempt_state a;
  EXPECT_FALSE(a.on_sending());
  EXPECT_TRUE(a.beating());
  EXPECT_TRUE(a.on_abort(abort_reason::cancel));
  EXPECT_EQ(a.reason(), abort_reason::cancel);
  EXPECT_FALSE(a.released());
}

TEST(attempt_state, an_abort_while_starting_is_applied_when_sending_begins) {
  attempt_state a;
  EXPECT_FALSE(a.on_abort(abort_reason::deadline));  // nothing to abort yet
  EXPECT_EQ(a.now(), phase::starting);
  EXPECT_TRUE(a.on_sending());  // abort the request at once
  EXPECT_EQ(a.reason(), abort_reason::deadline);
}

TEST(attempt_state, an_abort_after_the_exchange_changes_nothing) {
  attempt_state a;
  (void)a.on_sending();
  a.on_answered();
  EXPECT_FALSE(a.beating());
  EXPECT_FALSE(a.on_abort(abort_reason::shutdown));
  EXPECT_FALSE(a.released()) << "the outcome is known: it is recorded, not given back";
  EXPECT_EQ(a.reason(), abort_reason::none);
}

TEST(attempt_state, a_shutdown_releases_even_after_another_abort) {
  attempt_state a;
  (void)a.on_sending();
  EXPECT_TRUE(a.on_abort(abort_reason::cancel));
  EXPECT_TRUE(a.on_abort(abort_reason::shutdown));
  EXPECT_EQ(a.reason(), abort_reason::cancel) << "the first reason is kept";
  EXPECT_TRUE(a.released());
}

TEST(attempt_state, a_lost_lease_stops_the_heartbeat) {
  attempt_state a;
  EXPECT_FALSE(a.beating()) << "no heartbeat before the request goes out";
  (void)a.on_sending();
  a.on_lease_lost();
  EXPECT_FALSE(a.beating());
}

TEST(judge_start, only_a_committed_start_with_its_job_sends) {
  storage::op_reply r;
  r.what = storage::op_reply::kind::done;
  EXPECT_EQ(judge_start(r), start_verdict::drop) << "no job in the reply";
  r.job = storage::job_record{};
  EXPECT_EQ(judge_start(r), start_verdict::send);
  r.what = storage::op_reply::kind::not_yet;
  EXPECT_EQ(judge_start(r), start_verdict::nak_later);
  for (auto k : {storage::op_reply::kind::stale, storage::op_reply::kind::busy,
                 storage::op_reply::kind::not_found}) {
    r.what = k;
    EXPECT_EQ(judge_start(r), start_verdict::drop);
  }
}

TEST(job_table, finds_every_actor_of_a_job_and_forgets_each_by_its_id) {
  job_table<std::string> t;
  t.add("task-a", 1, "actor1");
  t.add("task-a", 2, "actor2");  // a redelivery running beside the first
  t.add("task-b", 3, "actor3");
  EXPECT_EQ(t.jobs(), 2u);
  EXPECT_EQ(t.actors(), 3u);
  EXPECT_EQ(t.find("task-a"), (std::vector<std::string>{"actor1", "actor2"}));
  EXPECT_TRUE(t.find("task-c").empty());
  EXPECT_TRUE(t.remove(1));
  EXPECT_FALSE(t.remove(1)) << "already forgotten";
  EXPECT_EQ(t.find("task-a"), (std::vector<std::string>{"actor2"}));
  EXPECT_TRUE(t.remove(2));
  EXPECT_TRUE(t.find("task-a").empty());
  EXPECT_EQ(t.jobs(), 1u);
  std::vector<std::string> all;
  t.for_each([&](const std::string& a) { all.push_back(a); });
  EXPECT_EQ(all, (std::vector<std::string>{"actor3"}));
  EXPECT_TRUE(t.remove(3));
  EXPECT_TRUE(t.empty());
}

// --- the registry's message flow, on CAF's test coordinator (deterministic: nothing runs until
// the test runs the scheduler)

/// A job actor's interface that writes what it receives into `seen` ("<name>:<what>") and ends
/// on `release`.
job_actor::behavior_type recording_job(job_actor::pointer self, std::string name,
                                       std::vector<std::string>* seen) {
  return {
      [=](cancel_atom) { seen->push_back(name + ":cancel"); },
      [=](expire_atom) { seen->push_back(name + ":expire"); },
      [=](release_atom) {
        seen->push_back(name + ":release");
        self->quit();
      },
      [=](beat_atom) { seen->push_back(name + ":beat"); },
      [=](runtime::gateway_outcome&) {},
  };
}

/// Asks `registry` to drain and sets `*drained` when it answers.
caf::behavior drain_asker(caf::event_based_actor* self, job_registry_actor registry,
                          bool* drained) {
  self->request(registry, caf::infinite, drain_atom::value).then([=](bool) { *drained = true; });
  return {};
}

struct registry_flow : ::testing::Test {
  registry_flow() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.console", caf::atom("none"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
  }
  /// Runs what the registry's timer posted, then the scheduler, until both are idle.
  void settle() {
    do {
      io.restart();
      io.poll();
    } while (sched->run() > 0);
  }
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;
  /// A registry (ticking every 5 s) with two recording jobs, "a" and "b", registered under
  /// task-a and task-b; what they receive goes to `seen`.
  std::tuple<job_registry_actor, job_actor, job_actor> two_registered_jobs() {
    auto registry = spawn_job_registry(*sys, clock, io.get_executor(), 5'000);
    job_actor a = sys->spawn(recording_job, std::string("a"), &seen);
    job_actor b = sys->spawn(recording_job, std::string("b"), &seen);
    caf::anon_send(registry, register_atom::value, std::string("task-a"), job_control_actor{a});
    caf::anon_send(registry, register_atom::value, std::string("task-b"), job_control_actor{b});
    return {registry, a, b};
  }
  runtime::manual_clock clock{1'000};
  boost::asio::io_context io;
  std::vector<std::string> seen;
};

TEST_F(registry_flow, forwards_by_id_and_answers_drain_only_when_its_last_job_ended) {
  auto [registry, a, b] = two_registered_jobs();
  sched->run();

  caf::anon_send(registry, cancel_atom::value, std::string("task-a"));
  caf::anon_send(registry, expire_atom::value, std::string("task-b"));
  caf::anon_send(registry, cancel_atom::value, std::string("task-elsewhere"));
  sched->run();
  EXPECT_EQ(seen, (std::vector<std::string>{"a:cancel", "b:expire"}));

  bool drained = false;
  sys->spawn(drain_asker, registry, &drained);
  sched->run();
  EXPECT_FALSE(drained) << "two jobs are still running";

  caf::anon_send(registry, release_atom::value);  // shutdown: both end, the registry hears it
  sched->run();
  EXPECT_TRUE(drained);
  EXPECT_EQ(seen.size(), 4u);
  seen.clear();
  caf::anon_send(registry, cancel_atom::value, std::string("task-a"));
  sched->run();
  EXPECT_TRUE(seen.empty()) << "an ended job is forgotten";
  caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
  sched->run();
}

TEST_F(registry_flow, its_one_timer_paces_the_heartbeats_of_every_registered_job) {
  auto [registry, a, b] = two_registered_jobs();
  settle();
  ASSERT_EQ(clock.armed(), 1u) << "one timer for all jobs, not one per job";

  clock.advance(4'999);
  settle();
  EXPECT_TRUE(seen.empty()) << "no tick before its time";
  clock.advance(1);
  settle();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"a:beat", "b:beat"}));
  EXPECT_EQ(clock.armed(), 1u) << "the tick is armed again";

  seen.clear();
  caf::anon_send(a, release_atom::value);  // a ends: the next tick reaches only b
  settle();
  clock.advance(5'000);
  settle();
  EXPECT_EQ(seen, (std::vector<std::string>{"a:release", "b:beat"}));

  caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
  settle();
  EXPECT_EQ(clock.armed(), 0u) << "the registry's end cancels its tick";
  caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
  settle();
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
