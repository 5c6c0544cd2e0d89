// The lease reaper's and the outbox relay's message flows on CAF's test coordinator (issue 16,
// item 5): the reaper expires a dead lease only once the manual clock passed it (or at once when
// an earlier run held it), and the relay keeps an outbox record until JetStream acked it. The
// reaper's ticks and the relay's retries are timers of the manual clock: they fire only when the
// test moves it.

#include <gtest/gtest.h>

#include <algorithm>

#include "actors/event_json.hpp"
#include "actors/lease_reaper.hpp"
#include "actors/outbox_relay.hpp"
#include "tests/integration/flows/flow_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;
using storage::job_status;
using storage::task_state;

bool holds(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

struct reaper_flow : ::testing::Test {
  flow_env env;
  reaper_flow() { env.settings().reaper_interval_ms = 1; }  // each step below is a tick
  /// The timers of the manual clock armed by others (the job registry's tick) before the reaper.
  const size_t others_armed = env.clock().armed();

  /// Commits the start of attempt 1 of `job` for `holder` now, as a job actor that then died
  /// would have left it; returns the lease's expiry.
  int64_t leave_lease(const storage::job_record& job, const std::string& holder) {
    auto r = env.write(storage::start_attempt_op{
        job.task_id, 1, "token-1", holder, env.clock().now_ms(), env.settings().lease_ttl_ms});
    EXPECT_TRUE(r.reply && r.reply->what == storage::op_reply::kind::done) << r.err.message;
    return env.lease(job.task_id)->expires_at_ms;
  }
  /// Moves the manual clock to `at`, which fires the reaper's tick (a timer of that clock,
  /// `reaper_interval_ms` after its last pass), and runs the pass it makes.
  void tick_at(int64_t at) {
    EXPECT_EQ(env.clock().armed(), others_armed + 1) << "the reaper keeps one tick armed";
    env.clock().set(at);
    env.settle();
    EXPECT_EQ(env.sched().trigger_timeouts(), 0u) << "a tick on CAF's own clock";
  }
};

TEST_F(reaper_flow, expires_a_lease_without_heartbeats_once_the_clock_passed_it) {
  auto job = env.create_job("job_lease");
  const int64_t expires = leave_lease(job, env.ctx().holder);
  env.keep(caf::actor_cast<caf::actor>(
      actors::spawn_lease_reaper(env.ctx().reaper("local/"), actors::runs_on::scheduler)));
  env.settle();  // the first pass, at start
  ASSERT_TRUE(env.lease(job.task_id)) << "a live lease of this run is kept";

  tick_at(expires - 1);
  ASSERT_TRUE(env.lease(job.task_id)) << "expired a millisecond early";
  EXPECT_EQ(env.task(job.task_id)->state, task_state::leased);

  tick_at(expires);
  EXPECT_FALSE(env.lease(job.task_id)) << "the dead lease was not expired";
  auto t = env.task(job.task_id);
  EXPECT_EQ(t->state, task_state::queued);
  EXPECT_EQ(t->attempt, 2) << "an expired lease counts as a failed attempt";
  EXPECT_NE(t->last_error.find("without a heartbeat"), std::string::npos) << t->last_error;
  EXPECT_EQ(env.job(job.id)->status, job_status::queued);
  EXPECT_TRUE(holds(env.outbox_ids(), actors::task_message_id(job.task_id, 2)))
      << "the next attempt's message is queued with the expiry";
}

TEST_F(reaper_flow, expires_the_lease_of_an_earlier_run_at_once_and_not_anyone_elses) {
  auto earlier = env.create_job("job_earlier");
  auto other = env.create_job("job_other_node");
  leave_lease(earlier, "local/earlier-run");
  leave_lease(other, "node-b/its-run");  // another node's live lease: not ours to take
  env.keep(caf::actor_cast<caf::actor>(
      actors::spawn_lease_reaper(env.ctx().reaper("local/"), actors::runs_on::scheduler)));
  env.settle();  // the first pass, at start: no time has passed
  EXPECT_FALSE(env.lease(earlier.task_id)) << "an earlier run of this node holds nothing";
  auto t = env.task(earlier.task_id);
  EXPECT_EQ(t->attempt, 2);
  EXPECT_NE(t->last_error.find("engine stopped"), std::string::npos) << t->last_error;
  EXPECT_TRUE(env.lease(other.task_id));
  EXPECT_EQ(env.task(other.task_id)->state, task_state::leased);
}

// --- the outbox relay

TEST(relay_flow, keeps_a_record_while_publishing_fails_and_deletes_it_only_after_the_ack) {
  flow_env env;
  env.nats().kill9();
  ASSERT_TRUE(wait_for([&] { return !env.js().connected(); }, 10s));
  auto job = env.create_job("job_relay");
  const std::string task_msg = actors::task_message_id(job.task_id, 1);
  ASSERT_TRUE(holds(env.outbox_ids(), task_msg));

  actors::outbox_relay_options opts;
  opts.publish_timeout_ms = 2'000;
  opts.retry_timer = env.clock().make_timer(env.ctx().exec.get_executor());
  const size_t others_armed = env.clock().armed();
  auto relay = actors::spawn_outbox_relay(env.sys(), env.store(), env.ctx().writer, env.js(), opts,
                                          actors::runs_on::scheduler);
  env.keep(caf::actor_cast<caf::actor>(relay));
  env.settle();  // its first pass publishes what is there, and fails
  EXPECT_TRUE(holds(env.outbox_ids(), task_msg)) << "deleted although nothing was acked";
  ASSERT_EQ(env.clock().armed(), others_armed + 1) << "a retry is armed";
  env.clock().advance(opts.retry_interval_ms);
  env.settle();  // the retry fails too: NATS is still down
  EXPECT_TRUE(holds(env.outbox_ids(), task_msg));

  ASSERT_TRUE(env.nats().restart().ok());
  ASSERT_TRUE(wait_for(
      [&] {
        return env.js().connected() &&
               env.js().stream_message_count(env.js().stream_name("TASKS")).ok();
      },
      10s))
      << "JetStream is not back";
  ASSERT_EQ(env.clock().armed(), others_armed + 1) << "the relay keeps retrying";
  env.clock().advance(opts.retry_interval_ms);
  while (env.sched().jobs.empty() && env.ctx().exec.poll_one() > 0) {
  }
  // One step: the relay publishes, JetStream acks, and the relay asks the writer to delete.
  ASSERT_TRUE(env.sched().try_run_once());
  EXPECT_TRUE(holds(env.outbox_ids(), task_msg)) << "the delete is a commit of its own";
  auto d = env.fetch(5'000);
  ASSERT_TRUE(d) << "acked, so JetStream has it";
  EXPECT_EQ(d->data, actors::task_message_payload(job.task_id, 1));
  env.settle();  // the writer commits the delete
  EXPECT_FALSE(holds(env.outbox_ids(), task_msg)) << "an acked record stays in the outbox";
  EXPECT_EQ(env.clock().armed(), others_armed) << "nothing left to retry";
  EXPECT_EQ(env.sched().trigger_timeouts(), 0u) << "a retry on CAF's own clock";
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
