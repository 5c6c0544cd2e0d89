// The job actor's message flows on CAF's test coordinator (issue 16, item 5): an attempt ending
// each way, cancel while queued and while running, the job's deadline on the manual clock, and
// shutdown's release while the attempt is still starting. Each test chooses the interleaving by
// what it sends before it runs the scheduler; see flow_env.hpp for what is real.

#include <gtest/gtest.h>

#include <algorithm>

#include <caf/send.hpp>

#include "actors/event_json.hpp"
#include "actors/job_actor.hpp"
#include "tests/integration/flows/flow_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using storage::job_status;
using storage::task_state;

struct job_flow : ::testing::Test {
  flow_env env;
  dispatcher_log seen;  ///< what the job actors told their dispatcher
  actors::model_dispatcher_actor dispatcher = env.recording_dispatcher(&seen);

  /// The job actor has ended (its exit tells the dispatcher `done`).
  bool ended() const { return !seen.empty() && seen.back().rfind("done:", 0) == 0; }
  /// Drives until the job actor ended.
  bool run_to_end() {
    return env.drive_until([&] { return ended(); });
  }
  /// JetStream holds no unacked message of the model any more (the delivery was acked).
  bool acked() {
    return env.drive_until([&] { return env.backlog() == 0; });
  }
  /// Creates a job whose request carries `fake`, delivers it and runs its job actor to the end.
  storage::job_record run_attempt(const std::string& id, nlohmann::json fake) {
    auto job = env.create_job(id, std::move(fake));
    env.spawn_job(env.deliver(job), dispatcher);
    EXPECT_TRUE(run_to_end()) << "the job actor did not end";
    return job;
  }
};

// --- an attempt ending each way

TEST_F(job_flow, an_answered_attempt_commits_the_result_acks_and_frees_its_slot_first) {
  auto job = run_attempt("job_ok", nullptr);
  EXPECT_EQ(seen, (dispatcher_log{"lease", "answered", "done:answered"}))
      << "the slot is freed (answered) before the actor ends";
  auto j = env.job(job.id);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->status, job_status::completed);
  ASSERT_TRUE(j->result);
  EXPECT_EQ(j->result->status_code, 200);
  EXPECT_EQ(env.task(job.task_id)->state, task_state::done);
  EXPECT_FALSE(env.lease(job.task_id)) << "the lease ends with the attempt";
  EXPECT_EQ(env.gateway().requests(), 1);
  EXPECT_TRUE(acked());
}

TEST_F(job_flow, a_rejected_attempt_fails_the_job_and_acks) {
  auto job = run_attempt("job_rejected", {{"status", 400}});
  EXPECT_EQ(seen, (dispatcher_log{"lease", "answered", "done:answered"}));
  auto j = env.job(job.id);
  EXPECT_EQ(j->status, job_status::failed);
  ASSERT_TRUE(j->error);
  EXPECT_EQ(j->error->code, "gateway_rejected");
  EXPECT_EQ(env.task(job.task_id)->state, task_state::done);
  EXPECT_TRUE(acked());
}

TEST_F(job_flow, a_retryable_failure_queues_the_next_attempt_through_the_outbox_and_acks) {
  auto job = run_attempt("job_retry", {{"status", 503}});
  EXPECT_EQ(seen, (dispatcher_log{"lease", "answered", "done:answered"}));
  auto t = env.task(job.task_id);
  EXPECT_EQ(t->state, task_state::queued);
  EXPECT_EQ(t->attempt, 2);
  EXPECT_EQ(env.job(job.id)->status, job_status::queued);
  const auto ids = env.outbox_ids();
  EXPECT_NE(std::find(ids.begin(), ids.end(), actors::task_message_id(job.task_id, 2)), ids.end())
      << "the next attempt's message is committed with the retry";
  EXPECT_TRUE(acked()) << "the first attempt's message is done with";
}

TEST_F(job_flow, a_delivery_before_its_backoff_is_naked_and_one_for_a_finished_task_dropped) {
  // The first request fails (503), the next one with this key succeeds.
  auto job = run_attempt("job_backoff", {{"status", 503}, {"fail_times", 1}, {"key", "backoff"}});
  ASSERT_TRUE(acked());
  seen.clear();
  const runtime::pub_msg second{env.js().task_subject(flow_env::model),
                                actors::task_message_id(job.task_id, 2),
                                actors::task_message_payload(job.task_id, 2)};
  ASSERT_TRUE(env.js().publish_batch({second}, 5'000).at(0));
  auto early = env.fetch(5'000);
  ASSERT_TRUE(early);
  env.spawn_job(*early, dispatcher);
  ASSERT_TRUE(run_to_end());
  EXPECT_EQ(seen, (dispatcher_log{"done:starting"})) << "never sent: the slot is freed at the end";
  EXPECT_EQ(env.gateway().requests(), 1) << "too early: not sent";
  EXPECT_EQ(env.task(job.task_id)->state, task_state::queued);
  EXPECT_FALSE(env.lease(job.task_id));

  // The nak asked JetStream to redeliver after the remaining backoff (at most 200 ms).
  env.clock().advance(1'000);
  auto again = env.fetch(5'000);
  ASSERT_TRUE(again) << "the nak'ed message was not redelivered";
  EXPECT_EQ(again->delivered, 2u);
  seen.clear();
  env.spawn_job(*again, dispatcher);
  ASSERT_TRUE(run_to_end());
  EXPECT_EQ(seen, (dispatcher_log{"lease", "answered", "done:answered"}));
  EXPECT_EQ(env.job(job.id)->status, job_status::completed);

  // A copy of attempt 2's message (JetStream redelivers after AckWait) finds the task done.
  const runtime::pub_msg copy{second.subject, "copy", second.payload};
  ASSERT_TRUE(env.js().publish_batch({copy}, 5'000).at(0));
  auto stale = env.fetch(5'000);
  ASSERT_TRUE(stale);
  seen.clear();
  env.spawn_job(*stale, dispatcher);
  ASSERT_TRUE(run_to_end());
  EXPECT_EQ(seen, (dispatcher_log{"done:starting"}));
  EXPECT_EQ(env.gateway().requests(), 2) << "a finished task is never sent again";
  EXPECT_TRUE(acked()) << "a stale delivery is acked and dropped";
}

// --- cancel

TEST_F(job_flow, a_cancel_committed_while_queued_makes_the_start_drop_the_delivery) {
  auto job = env.create_job("job_cancel_queued", {{"latency_ms", 600'000}});
  auto d = env.deliver(job);
  std::optional<actors::write_reply> cancelled;
  env.start_cancel(job.id, &cancelled);
  ASSERT_TRUE(env.drive_until([&] { return cancelled.has_value(); }))
      << "the owner commits the cancel before the attempt starts";
  env.spawn_job(d, dispatcher);
  ASSERT_TRUE(run_to_end());
  ASSERT_TRUE(cancelled && cancelled->reply);
  EXPECT_FALSE(cancelled->reply->abort_inflight) << "nothing was running";
  EXPECT_EQ(seen, (dispatcher_log{"done:starting"}));
  EXPECT_EQ(env.job(job.id)->status, job_status::cancelled);
  EXPECT_FALSE(env.lease(job.task_id));
  EXPECT_EQ(env.gateway().requests(), 0);
  EXPECT_TRUE(acked());
}

TEST_F(job_flow, a_cancel_committed_right_after_the_start_aborts_before_the_request_leaves) {
  auto job = env.create_job("job_cancel_start", {{"latency_ms", 600'000}});
  auto d = env.deliver(job);
  env.spawn_job(d, dispatcher);
  std::optional<actors::write_reply> cancelled;
  env.start_cancel(job.id, &cancelled);  // the same commit as the start, after it
  ASSERT_TRUE(run_to_end());
  ASSERT_TRUE(cancelled && cancelled->reply);
  EXPECT_TRUE(cancelled->reply->abort_inflight);
  EXPECT_EQ(seen, (dispatcher_log{"lease", "answered", "done:answered"}));
  auto j = env.job(job.id);
  EXPECT_EQ(j->status, job_status::cancelled);
  EXPECT_EQ(j->error->code, "cancelled");
  EXPECT_EQ(env.gateway().requests(), 0) << "aborted before it was sent";
  EXPECT_FALSE(env.lease(job.task_id));
  EXPECT_TRUE(acked());
}

TEST_F(job_flow, a_cancel_while_running_aborts_the_request_in_flight) {
  auto job = env.create_job("job_cancel_running", {{"latency_ms", 600'000}});
  env.spawn_job(env.deliver(job), dispatcher);
  ASSERT_TRUE(env.drive_until([&] { return env.gateway().requests() == 1; }));
  EXPECT_EQ(seen, dispatcher_log{"lease"}) << "still waiting for the gateway";
  EXPECT_EQ(env.job(job.id)->status, job_status::in_progress);

  auto r = env.cancel(job.id);
  ASSERT_TRUE(r.reply);
  EXPECT_TRUE(r.reply->abort_inflight);
  ASSERT_TRUE(run_to_end()) << "the request was not aborted (the fake answers in 10 minutes)";
  EXPECT_EQ(seen, (dispatcher_log{"lease", "answered", "done:answered"}));
  EXPECT_EQ(env.job(job.id)->status, job_status::cancelled);
  EXPECT_FALSE(env.lease(job.task_id));
  EXPECT_TRUE(acked());
  EXPECT_EQ(env.ctx().gateways.for_model(flow_env::model)->open_connections(), 0)
      << "the aborted exchange's connection is closed, not pooled";
}

// --- the deadline

TEST_F(job_flow, the_deadline_timer_aborts_the_request_when_the_manual_clock_reaches_it) {
  auto job = env.create_job("job_deadline", {{"latency_ms", 600'000}}, 60'000);
  env.spawn_job(env.deliver(job), dispatcher);
  ASSERT_TRUE(env.drive_until([&] { return env.gateway().requests() == 1; }));

  env.clock().advance(59'999);  // heartbeats come due meanwhile; the deadline not yet
  ASSERT_TRUE(env.drive_until([&] {
    return env.lease(job.task_id)->expires_at_ms > flow_env::start_ms + 30'000;
  })) << "a heartbeat extended the lease";
  env.settle();
  EXPECT_EQ(seen, dispatcher_log{"lease"}) << "aborted before the deadline";
  EXPECT_EQ(env.job(job.id)->status, job_status::in_progress);

  env.clock().advance(1);
  ASSERT_TRUE(run_to_end()) << "the deadline did not abort the request";
  EXPECT_EQ(seen, (dispatcher_log{"lease", "answered", "done:answered"}));
  auto j = env.job(job.id);
  EXPECT_EQ(j->status, job_status::expired);
  EXPECT_EQ(j->error->code, "deadline_exceeded");
  EXPECT_FALSE(env.lease(job.task_id));
  EXPECT_TRUE(acked());
}

// --- shutdown

TEST_F(job_flow, a_release_while_starting_is_kept_and_gives_the_task_back_uncounted) {
  auto job = env.create_job("job_release", {{"latency_ms", 600'000}});
  env.spawn_job(env.deliver(job), dispatcher);
  // One step: the job actor registers and asks the writer to commit its start. The release
  // goes to the registry at once; it reaches the attempt (registry, owner, attempt) once the
  // start has committed and before the dispatcher's `start` does: it is withdrawn unsent.
  ASSERT_TRUE(env.sched().try_run_once());
  caf::anon_send(env.ctx().jobs, actors::release_atom::value);
  ASSERT_TRUE(run_to_end());
  EXPECT_EQ(seen, (dispatcher_log{"lease", "done:ready"}));
  EXPECT_EQ(env.gateway().requests(), 0) << "aborted before it was sent";
  auto t = env.task(job.task_id);
  EXPECT_EQ(t->state, task_state::queued);
  EXPECT_EQ(t->attempt, 1) << "a released attempt is not counted";
  EXPECT_EQ(env.job(job.id)->status, job_status::queued);
  EXPECT_FALSE(env.lease(job.task_id));
  // Its message was acked when the lease was taken (DESIGN rule 3): the task goes back through
  // the outbox, with a fresh message id (the first may still sit in the duplicate window).
  EXPECT_TRUE(acked());
  const auto ids = env.outbox_ids();
  const std::string fresh = actors::task_message_id(job.task_id, 1) + ":r";
  EXPECT_TRUE(std::any_of(ids.begin(), ids.end(), [&](const std::string& id) {
    return id.starts_with(fresh);
  })) << "a released task is not published again";
}

// --- an attempt that registers after a cancel (a chain's next task)

/// An attempt's stand-in that records the control messages it gets.
actors::job_actor::behavior_type told_attempt(actors::job_actor::pointer,
                                              std::vector<std::string>* told) {
  return {
      [=](actors::cancel_atom) { told->push_back("cancel"); },
      [=](actors::expire_atom) { told->push_back("expire"); },
      [=](actors::release_atom) { told->push_back("release"); },
      [=](actors::beat_atom) {},
      [=](actors::start_atom, bool) {},
      [=](runtime::gateway_outcome&) {},
  };
}

TEST_F(job_flow, an_attempt_that_registers_after_its_job_was_cancelled_is_told_at_once) {
  // A chained task is leased with its predecessor's outcome and registered with the job's
  // owner only then: a cancel committed in between has already named the running attempts.
  auto job = env.create_job("job_late_register", {{"latency_ms", 600'000}});
  std::vector<std::string> first, late;
  auto running = env.sys().spawn(told_attempt, &first);
  auto chained = env.sys().spawn(told_attempt, &late);
  env.keep(caf::actor_cast<caf::actor>(running));
  env.keep(caf::actor_cast<caf::actor>(chained));
  caf::anon_send(env.ctx().jobs, actors::register_atom::value, job.id, job.task_id,
                 actors::job_control_actor{running});  // keeps the owner alive
  std::optional<actors::write_reply> cancelled;
  env.start_cancel(job.id, &cancelled);
  ASSERT_TRUE(env.drive_until([&] { return cancelled.has_value(); }));
  ASSERT_TRUE(cancelled->reply);
  caf::anon_send(env.ctx().jobs, actors::register_atom::value, job.id, std::string("next-task"),
                 actors::job_control_actor{chained});
  ASSERT_TRUE(env.drive_until([&] { return !late.empty(); }))
      << "an attempt registered after the cancel was not told";
  EXPECT_EQ(late, (std::vector<std::string>{"cancel"}));
}

// --- leased ahead of its slot (DESIGN rule 3)

TEST_F(job_flow, a_leased_attempt_waiting_for_a_slot_heartbeats_and_a_cancel_withdraws_it) {
  dispatcher_log held;
  auto no_slot = env.recording_dispatcher(&held, false);  // every slot is busy
  auto job = env.create_job("job_waits", {{"latency_ms", 600'000}});
  env.spawn_job(env.deliver(job), no_slot);
  ASSERT_TRUE(env.drive_until([&] { return held == dispatcher_log{"lease"}; }));
  EXPECT_EQ(env.job(job.id)->status, job_status::in_progress) << "leased: it is this node's";
  EXPECT_TRUE(acked()) << "its message is done with once the lease is committed";
  env.clock().advance(29'000);  // the lease would run out at 30 s: heartbeats keep it
  ASSERT_TRUE(env.drive_until([&] {
    return env.lease(job.task_id)->expires_at_ms > flow_env::start_ms + 30'000;
  })) << "a leased attempt waiting for a slot did not extend its lease";
  EXPECT_EQ(env.gateway().requests(), 0);

  auto r = env.cancel(job.id);
  ASSERT_TRUE(r.reply);
  ASSERT_TRUE(env.drive_until([&] { return held.size() == 2; }))
      << "the cancel did not withdraw the waiting attempt";
  EXPECT_EQ(held, (dispatcher_log{"lease", "done:ready"})) << "it leaves its turn, no slot used";
  EXPECT_EQ(env.job(job.id)->status, job_status::cancelled);
  EXPECT_FALSE(env.lease(job.task_id));
  EXPECT_EQ(env.gateway().requests(), 0) << "never sent";
}

TEST_F(job_flow, a_release_while_waiting_for_a_slot_gives_the_task_back_uncounted) {
  dispatcher_log held;
  auto no_slot = env.recording_dispatcher(&held, false);
  auto job = env.create_job("job_waits_release", {{"latency_ms", 600'000}});
  env.spawn_job(env.deliver(job), no_slot);
  ASSERT_TRUE(env.drive_until([&] { return held == dispatcher_log{"lease"}; }));
  caf::anon_send(env.ctx().jobs, actors::release_atom::value);
  ASSERT_TRUE(env.drive_until([&] { return held.size() == 2; }));
  EXPECT_EQ(held, (dispatcher_log{"lease", "done:ready"}));
  auto t = env.task(job.task_id);
  EXPECT_EQ(t->state, task_state::queued);
  EXPECT_EQ(t->attempt, 1) << "a released attempt is not counted";
  EXPECT_FALSE(env.lease(job.task_id));
  EXPECT_EQ(env.gateway().requests(), 0);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
