// Waits of the engine on its own clock, as message flows on CAF's test coordinator (issue 40,
// item 6): nothing happens until the test moves the manual clock past them, and nothing a
// millisecond before.
//  - A worker's long poll: a lease request of a runtime's queue with nothing queued is answered
//    empty when the clock passes its wait (its timer's `tick`), not before.
//  - A batch's completion window: the batch manager's actor (start, the upload, the create) and
//    the batch's actor it spawns, both on the scheduler with their file I/O (the upload's rename,
//    ingestion, drain, finalization) on the execution context this thread polls; the batch waits
//    for a slot of its model that no one grants; when the clock passes created_at + window, its
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
#include "tests/support/admit.hpp"

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

/// Asks the batch manager `m` and keeps its answer in `*out`.
template <class Msg>
caf::behavior manager_asker(caf::event_based_actor* self, actors::batch_manager_actor mgr, Msg m,
                            std::optional<actors::batch_answer>* out) {
  self->request(mgr, caf::infinite, std::move(m)).then([self, out](actors::batch_answer& a) {
    *out = std::move(a);
    self->quit();
  });
  return {};
}

TEST(batch_flow, the_completion_window_expires_the_batch_when_the_clock_passes_it_not_before) {
  flow_env env;
  dispatcher_log seen;  // what the batch's lane tells its model's dispatcher (it grants nothing)
  auto dispatcher = env.recording_dispatcher(&seen);
  env.ctx().dispatchers =
      env.sys().spawn(directory_of, caf::actor_cast<actors::slot_owner_actor>(dispatcher));
  env.keep(caf::actor_cast<caf::actor>(env.ctx().dispatchers));
  // The batch manager's actor on the coordinator, its file I/O on the context this thread polls.
  const runtime::webhook_policy webhooks;  // the batch has no webhook
  auto deps = actors::make_batch_deps(env.ctx(), env.store(), env.io().get_executor(),
                                      std::make_shared<actors::batch_tries>());
  auto mgr = actors::spawn_batch_manager({deps, &webhooks});
  env.keep(caf::actor_cast<caf::actor>(mgr));
  auto ask = [&](auto msg) {
    std::optional<actors::batch_answer> got;
    env.sys().spawn(manager_asker<decltype(msg)>, mgr, std::move(msg), &got);
    EXPECT_TRUE(env.drive_until([&] { return got.has_value(); }));
    return got ? std::move(got->value) : actors::core::reply{};
  };
  ASSERT_TRUE(std::holds_alternative<actors::core::done>(ask(actors::start_atom::value)));

  // The input file and the batch, through the manager as the API's upload and create do.
  storage::file_record f;
  f.tenant = "tenant";
  f.filename = "input.jsonl";
  f.purpose = "batch";
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
  const std::string staged = deps->paths.files_dir + "/uploads/input.part";
  std::ofstream(staged, std::ios::binary) << body;
  f.bytes = static_cast<int64_t>(body.size());
  auto file = actors::core::take<storage::file_record>(
      ask(actors::core::create_file{admit::as_is(actors::staged_file{f, staged, 0})}));
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->created_at, env.clock().now_ms() / 1000) << "the manager's clock";
  const int64_t window_ms = 3'600'000;
  actors::batch_request req;
  req.tenant = "tenant";
  req.endpoint = "/v1/chat/completions";
  req.input_file_id = file->id;
  req.completion_window = "1h";
  req.completion_window_ms = window_ms;
  auto b = actors::core::take<storage::batch_record>(
      ask(actors::core::create_batch{admit::as_is(std::move(req))}));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->deadline_ms, flow_env::start_ms + window_ms);
  auto batch = [&] { return *storage::get_batch(env.store().begin_read(), b->id); };

  // The manager started the batch's actor. Ingested, planned, dispatching: its lane asked the
  // model's dispatcher for a slot and waits.
  ASSERT_TRUE(env.drive_until(
      [&] { return std::find(seen.begin(), seen.end(), "slot_update") != seen.end(); }));
  EXPECT_EQ(batch().status, batch_status::in_progress);

  env.clock().set(b->deadline_ms - 1);
  env.settle();
  EXPECT_EQ(batch().status, batch_status::in_progress) << "expired a millisecond early";
  EXPECT_TRUE(batch().stop_code.empty());

  env.clock().advance(1);  // the window's timer fires: `expire`
  ASSERT_TRUE(env.drive_until([&] { return storage::is_terminal(batch().status); }));
  const auto done = batch();
  EXPECT_EQ(done.status, batch_status::expired);
  EXPECT_EQ(done.expired_at, b->deadline_ms / 1000);
  EXPECT_EQ(done.completed, 0);
  EXPECT_EQ(done.failed, 3) << "every line drained with batch_expired";
  EXPECT_EQ(env.gateway().requests(), 0);

  EXPECT_TRUE(std::holds_alternative<actors::core::done>(ask(actors::stop_atom::value)));
  env.settle();  // the file sweep's wait ends before the manager goes
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
