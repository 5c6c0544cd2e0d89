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
#include "actors/job_owner.hpp"
#include "actors/job_registry.hpp"
#include "config/settings.hpp"
#include "storage/ops.hpp"

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

TEST(attempt_state, a_leased_attempt_heartbeats_and_an_abort_before_its_lease_withdraws_it) {
  attempt_state a;
  EXPECT_FALSE(a.on_leased());
  EXPECT_EQ(a.now(), phase::leased);
  EXPECT_TRUE(a.beating()) << "it keeps its lease while it waits for a slot";
  EXPECT_FALSE(a.on_abort(abort_reason::cancel)) << "nothing in flight: the actor withdraws it";
  attempt_state early;
  EXPECT_FALSE(early.on_abort(abort_reason::shutdown));
  EXPECT_TRUE(early.on_leased()) << "an abort while starting withdraws it once leased";
  EXPECT_TRUE(early.released());
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

TEST(owner_table, a_job_has_one_owner_and_it_stops_only_when_nothing_is_on_its_way) {
  owner_table<std::string, std::string> t;
  auto& e = t.add_owner("job_A", 1, "owner1");
  e.routed = 2;  // two messages sent to it
  EXPECT_FALSE(t.claim("job_A", 2, "batch")) << "the id has its owner";
  EXPECT_TRUE(t.claim("batch_B", 3, "batch-actor"));
  EXPECT_FALSE(t.idle("job_A", 1, 1)) << "one message is still on its way to it";
  EXPECT_FALSE(t.idle("job_A", 9, 2)) << "another actor's report";
  EXPECT_TRUE(t.idle("job_A", 1, 2));
  EXPECT_EQ(t.find("job_A"), nullptr) << "forgotten: the next message makes a new owner";
  EXPECT_FALSE(t.remove(1)) << "its end is not counted twice";
  EXPECT_EQ(t.jobs(), 1u);
  std::vector<std::string> claimed;
  t.for_each([&](auto& x) { claimed.push_back(*x.claimed); }, true);
  EXPECT_EQ(claimed, (std::vector<std::string>{"batch-actor"}));
  EXPECT_TRUE(t.remove(3));
  EXPECT_TRUE(t.empty());
}

TEST(owner_book, names_the_attempts_a_committed_change_stops_and_is_idle_only_when_empty) {
  owner_book<std::string> b;
  EXPECT_TRUE(b.idle());
  b.add(1, "A-00000001", "first");
  b.add(2, "A-00000001", "redelivered");  // a redelivery running beside the first
  b.add(3, "A-00000002", "other");
  storage::op_reply r;
  r.what = storage::op_reply::kind::done;
  r.abort_tasks = {"A-00000001"};
  EXPECT_EQ(b.named_by(r), (std::vector<std::string>{"first", "redelivered"}));
  b.add(4, "", "ingest");  // a worker of the job that runs no task: told of every change
  EXPECT_EQ(b.named_by(r), (std::vector<std::string>{"ingest", "first", "redelivered"}));
  EXPECT_TRUE(b.remove(4));
  r.what = storage::op_reply::kind::existing;
  EXPECT_TRUE(b.named_by(r).empty()) << "a change that changed nothing stops nothing";
  storage::op_reply single;
  single.abort_inflight = true;
  single.task = storage::task_record{};
  single.task->id = "A-00000002";
  EXPECT_EQ(b.named_by(single), (std::vector<std::string>{"other"}));
  b.commit_sent();
  EXPECT_TRUE(b.remove(1) && b.remove(2) && b.remove(3));
  EXPECT_FALSE(b.remove(3));
  EXPECT_FALSE(b.idle()) << "a commit is outstanding";
  b.commit_answered();
  EXPECT_TRUE(b.idle());
}

TEST(job_id_of_task, is_the_job_of_a_single_task_and_of_a_list_task) {
  EXPECT_EQ(storage::job_id_of_task("01JABC-0"), "job_01JABC");
  EXPECT_EQ(storage::job_id_of_task(storage::list_task_id("job_01JABC", 12)), "job_01JABC");
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
      [=](start_atom, bool) {},
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
    at.emplace(ambient{*sys, settings, clock, io});
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
  /// A registry (ticking every 5 s) with two recording attempts, "a" and "b", registered for
  /// tasks of job_A and job_B; what they receive goes to `seen`. Its owners have no writer:
  /// these tests commit nothing (the flow tests do, tests/integration/flows).
  std::tuple<job_registry_actor, job_actor, job_actor> two_registered_jobs() {
    auto registry = spawn_job_registry(*at, storage_writer_actor{}, 5'000);
    job_actor a = sys->spawn(recording_job, std::string("a"), &seen);
    job_actor b = sys->spawn(recording_job, std::string("b"), &seen);
    register_attempt(registry, "job_A", a);
    register_attempt(registry, "job_B", b);
    return {registry, a, b};
  }
  static void register_attempt(const job_registry_actor& registry, const std::string& job,
                               const job_actor& a) {
    caf::anon_send(registry, register_atom::value, job, job.substr(4) + "-0", job_control_actor{a});
  }
  runtime::manual_clock clock{1'000};
  boost::asio::io_context io;
  config::settings settings;
  std::optional<ambient> at;  ///< set once `sys` is made
  std::vector<std::string> seen;
};

TEST_F(registry_flow, forwards_by_id_and_answers_drain_only_when_its_last_job_ended) {
  auto [registry, a, b] = two_registered_jobs();
  sched->run();

  caf::anon_send(registry, cancel_atom::value, std::string("job_A"));
  caf::anon_send(registry, expire_atom::value, std::string("job_B"));
  caf::anon_send(registry, cancel_atom::value, std::string("job_elsewhere"));
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
  caf::anon_send(registry, cancel_atom::value, std::string("job_A"));
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

TEST_F(registry_flow, an_owner_watches_its_jobs_deadline_and_a_new_one_follows_an_idle_one) {
  auto [registry, a, b] = two_registered_jobs();
  caf::anon_send(registry, deadline_atom::value, std::string("job_A"), int64_t{3'000});
  settle();
  clock.advance(1'999);
  settle();
  EXPECT_TRUE(seen.empty()) << "not before the deadline";
  clock.advance(1);
  settle();
  EXPECT_EQ(seen, (std::vector<std::string>{"a:expire"})) << "the owner tells its attempt";

  seen.clear();
  caf::anon_send(a, release_atom::value);  // the attempt ends: job_A's owner is idle and stops
  settle();
  job_actor c = sys->spawn(recording_job, std::string("c"), &seen);
  register_attempt(registry, "job_A", c);  // a redelivery: a new owner for job_A
  caf::anon_send(registry, cancel_atom::value, std::string("job_A"));
  settle();
  EXPECT_EQ(seen, (std::vector<std::string>{"a:release", "c:cancel"}));

  bool drained = false;
  sys->spawn(drain_asker, registry, &drained);
  caf::anon_send(registry, release_atom::value);
  settle();
  EXPECT_TRUE(drained) << "every owner stopped once its attempts ended";
  caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
  settle();
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
