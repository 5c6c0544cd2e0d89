// Waits of the engine on its own clock, as message flows on CAF's test coordinator (issue 40,
// item 6): nothing happens until the test moves the manual clock past them, and nothing a
// millisecond before.
//  - A worker's long poll: a lease request of a runtime's queue with nothing queued is answered
//    empty when the clock passes its wait (its timer's `tick`), not before.
//  - A batch's completion window: the batch's actor, spawned on the scheduler with its blocking
//    steps (ingestion, drain, finalization) on the execution context this thread polls, waits for
//    a slot of its model that no one grants; when the clock passes created_at + window, its
//    timer's `expire` stops the batch and every line is drained with batch_expired.
// See flow_env.hpp for what is real.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>

#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/batch_actor.hpp"
#include "actors/batch_manager.hpp"
#include "actors/dispatcher_directory.hpp"
#include "actors/runtime_queue.hpp"
#include "tests/integration/flows/flow_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using storage::batch_status;

/// Asks `queue` for up to one task, waiting `wait_ms`, and keeps the answer in `*out`.
caf::behavior lease_asker(caf::event_based_actor* self, actors::runtime_queue_actor queue,
                          int64_t wait_ms, std::optional<actors::lease_reply>* out) {
  self->request(queue, caf::infinite, actors::lease_atom::value, int32_t{1}, wait_ms, uint64_t{0})
      .then([self, out](actors::lease_reply& r) {
        *out = std::move(r);
        self->quit();
      });
  return {};
}

TEST(long_poll_flow, a_lease_with_nothing_queued_is_answered_empty_once_the_clock_passes_its_wait) {
  flow_env env;
  const std::string runtime = "flow-rt";
  env.settings().runtimes[runtime] = config::runtime_settings{};
  // The queue's fetcher runs on the scheduler: each fetch blocks this thread up to 250 ms of real
  // time (JetStream's wait) and ends empty. Nothing is leased, so no token is ever minted.
  auto queue = actors::spawn_runtime_queue({env.ctx().fetch(), env.ctx().writer, {}}, runtime,
                                           actors::runs_on::scheduler);
  env.keep(caf::actor_cast<caf::actor>(queue));
  const int64_t wait_ms = 30'000;
  std::optional<actors::lease_reply> got;
  const size_t armed = env.clock().armed();  // the registry's own timers
  env.sys().spawn(lease_asker, queue, wait_ms, &got);

  // Runs `n` actor steps; an empty fetch is one (blocking up to 250 ms), its answer another.
  auto run_steps = [&](int n) {
    for (int ran = 0; ran < n && !got;) {
      if (env.sched().try_run_once()) ++ran;
      env.io().poll();
    }
  };
  run_steps(6);  // the lease, then empty fetches
  EXPECT_FALSE(got) << "answered before its wait passed";
  EXPECT_EQ(env.clock().armed(), armed + 1) << "the wait's timer";

  env.clock().advance(wait_ms - 1);
  run_steps(4);  // more empty fetches, each followed by a look at the wait
  EXPECT_FALSE(got) << "answered a millisecond before its wait passed";

  env.clock().advance(1);  // its timer fires: `tick`, and the wait is over
  ASSERT_TRUE(env.step_until([&] { return got.has_value(); }, std::chrono::seconds(5)));
  EXPECT_TRUE(got->tasks.empty());
}

/// A dispatcher directory that answers every model with `owner`.
actors::dispatcher_directory_actor::behavior_type directory_of(
    actors::dispatcher_directory_actor::pointer self, actors::slot_owner_actor owner) {
  return {
      [=](actors::dispatchers_wanted& w) {
        actors::dispatchers_found found;
        found.owners.assign(w.models.size(), owner);
        return found;
      },
      [=](actors::stop_atom) {
        self->quit();
        return int32_t{0};
      },
  };
}

TEST(batch_flow, the_completion_window_expires_the_batch_when_the_clock_passes_it_not_before) {
  flow_env env;
  dispatcher_log seen;  // what the batch's lane tells its model's dispatcher (it grants nothing)
  auto dispatcher = env.recording_dispatcher(&seen);
  env.ctx().dispatchers =
      env.sys().spawn(directory_of, caf::actor_cast<actors::slot_owner_actor>(dispatcher));
  env.keep(caf::actor_cast<caf::actor>(env.ctx().dispatchers));
  const runtime::webhook_policy webhooks;  // the batch has no webhook
  auto mgr = std::make_unique<actors::batch_manager>(env.ctx(), env.store(), webhooks,
                                                     env.io().get_executor());
  ASSERT_TRUE(mgr->start());

  // The input file and the batch, committed as the API's upload and create would.
  storage::file_record f;
  f.id = "file-flow-input";
  f.tenant = "tenant";
  f.filename = "input.jsonl";
  f.purpose = "batch";
  f.created_at = env.clock().now_ms() / 1000;
  std::string body;
  for (int i = 0; i < 3; ++i)
    body +=
        nlohmann::json{
            {"custom_id", "r" + std::to_string(i)},
            {"method", "POST"},
            {"url", "/v1/chat/completions"},
            {"body",
             {{"model", flow_env::model}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}}}
            .dump() +
        "\n";
  std::ofstream(mgr->file_path(f.id), std::ios::binary) << body;
  f.bytes = static_cast<int64_t>(body.size());
  ASSERT_TRUE(env.write(storage::create_file_op{f}).reply);
  const int64_t window_ms = 3'600'000;
  storage::batch_record b;
  b.id = "batch_flow";
  b.tenant = "tenant";
  b.endpoint = "/v1/chat/completions";
  b.input_file_id = f.id;
  b.completion_window = "1h";
  b.created_at = env.clock().now_ms() / 1000;
  b.deadline_ms = env.clock().now_ms() + window_ms;
  b.expires_at = b.deadline_ms / 1000;
  ASSERT_TRUE(env.write(storage::create_batch_op{b}).reply);
  auto batch = [&] { return *storage::get_batch(env.store().begin_read(), b.id); };

  actors::spawn_batch_actor(mgr->actor_deps(), b.id);
  // Ingested, planned, dispatching: its lane asked the model's dispatcher for a slot and waits.
  ASSERT_TRUE(env.drive_until(
      [&] { return std::find(seen.begin(), seen.end(), "slot_update") != seen.end(); }));
  EXPECT_EQ(batch().status, batch_status::in_progress);

  env.clock().set(b.deadline_ms - 1);
  env.settle();
  EXPECT_EQ(batch().status, batch_status::in_progress) << "expired a millisecond early";
  EXPECT_TRUE(batch().stop_code.empty());

  env.clock().advance(1);  // the window's timer fires: `expire`
  ASSERT_TRUE(env.drive_until([&] { return storage::is_terminal(batch().status); }));
  const auto done = batch();
  EXPECT_EQ(done.status, batch_status::expired);
  EXPECT_EQ(done.expired_at, b.deadline_ms / 1000);
  EXPECT_EQ(done.completed, 0);
  EXPECT_EQ(done.failed, 3) << "every line drained with batch_expired";
  EXPECT_EQ(env.gateway().requests(), 0);

  mgr->stop();
  env.settle();  // the file sweep's wait ends before the manager goes
  mgr.reset();
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
