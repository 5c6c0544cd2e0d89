// The budgets' slot hand-offs on CAF's test coordinator (issue 16, item 5), as messages between
// the engine's own actors: the global budget, the model dispatchers, their task fetchers (on the
// scheduler: runs_on::scheduler), the job actors and the writer.
//  - Between models: with one global slot, a slot that the hot model's attempt frees goes to the
//    cold model that was waiting for it, not back to the hot model that asks again at once.
//  - Between a batch lane and single jobs: a lane (a stand-in that speaks the holder protocol of
//    actors/slots.hpp as a batch's actor does) holds the model's only slot and keeps it for its
//    next lines; when a job of the model arrives, the dispatcher asks the lane to yield, the job
//    runs on the slot, and the slot then goes back to the lane, which was waiting.
//  - A message that wakes many tasks (DESIGN rule 3): one slot runs them one after the other from
//    the one delivery, and the message is acked once the last of them is leased, while its
//    request still runs.

#include <gtest/gtest.h>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>

#include "actors/global_budget.hpp"
#include "actors/model_dispatcher.hpp"
#include "actors/outbox_relay.hpp"
#include "tests/integration/flows/flow_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using storage::job_status;

/// The job ids in the order their requests reached the gateway (each body's message content).
std::vector<std::string> request_order(flow_env& env) {
  std::vector<std::string> out;
  for (const auto& b : env.gateway().bodies())
    out.push_back(nlohmann::json::parse(b)["messages"][0]["content"].get<std::string>());
  return out;
}

TEST(dispatch_flow, a_slot_the_hot_model_frees_goes_to_the_cold_model_waiting_for_it) {
  flow_env env(/*global_concurrency=*/1, /*per_model_concurrency=*/1);
  const std::string hot = "hot-model";
  const std::string cold = "cold-model";
  auto hot_sub = env.js().subscribe_tasks(hot);
  auto cold_sub = env.js().subscribe_tasks(cold);
  ASSERT_TRUE(hot_sub && cold_sub);
  auto a1 = env.create_job("job_a1", {{"latency_ms", 600'000}}, 0, 3, hot);
  auto a2 = env.create_job("job_a2", nullptr, 0, 3, hot);
  auto b1 = env.create_job("job_b1", nullptr, 0, 3, cold);
  auto a3 = env.create_job("job_a3", nullptr, 0, 3, hot);  // published at the end
  env.publish(a1);
  env.publish(a2);
  env.publish(b1);

  env.keep(caf::actor_cast<caf::actor>(
      actors::spawn_model_dispatcher(env.ctx().dispatcher(), hot, std::move(hot_sub.value()),
                                     env.js().layout_generation(), actors::runs_on::scheduler)));
  ASSERT_TRUE(env.step_until([&] { return env.gateway().requests() == 1; }));

  env.keep(caf::actor_cast<caf::actor>(
      actors::spawn_model_dispatcher(env.ctx().dispatcher(), cold, std::move(cold_sub.value()),
                                     env.js().layout_generation(), actors::runs_on::scheduler)));
  // Both dispatchers wait for a slot now (nothing runs until one frees up).
  ASSERT_TRUE(env.step_until([&] { return !env.sched().has_job(); }));
  EXPECT_EQ(env.gateway().requests(), 1) << "a request went out without a slot";
  EXPECT_EQ(env.job(b1.id)->status, job_status::queued);
  EXPECT_EQ(env.job(a2.id)->status, job_status::queued);

  // The hot model's attempt ends (cancelled): its slot is handed to the cold model, and the hot
  // model, which asks again at once, waits behind it.
  std::optional<actors::write_reply> cancelled;
  env.start_cancel(a1.id, &cancelled);
  ASSERT_TRUE(env.step_until([&] { return env.gateway().requests() == 2; }));
  EXPECT_EQ(request_order(env), (std::vector<std::string>{"job_a1", "job_b1"}))
      << "the freed slot went back to the hot model";
  ASSERT_TRUE(env.step_until([&] {
    return env.job(b1.id)->status == job_status::completed &&
           env.job(a2.id)->status == job_status::completed;
  }));
  EXPECT_EQ(request_order(env), (std::vector<std::string>{"job_a1", "job_b1", "job_a2"}));
  EXPECT_EQ(env.job(a1.id)->status, job_status::cancelled);
  // The cold model keeps the global slot while nobody else waits; the hot model's next job
  // makes the global budget ask for it back. (Jobs are created before the dispatchers run:
  // creating one drives the scheduler until it is idle, which a fetching dispatcher never is.)
  env.publish(a3);
  EXPECT_TRUE(env.step_until([&] { return env.job(a3.id)->status == job_status::completed; }))
      << "a slot kept by an idle model was not given back";
}

/// A batch lane's stand-in: asks `owner` for `want` slots under `key`, keeps what it gets (its
/// "lines" never end by themselves), gives one back per yield, and asks again at once.
struct lane_log {
  int held = 0;
  int yields = 0;
  int regained = 0;  ///< grants after its first yield
};

actors::slot_holder_actor::behavior_type lane_stand_in(actors::slot_holder_actor::pointer self,
                                                       actors::slot_owner_actor owner, uint64_t key,
                                                       int32_t want, lane_log* log) {
  self->send(owner, actors::slot_update{key, 0, want, true}, actors::slot_holder_actor{self});
  return {
      [=](actors::slot_atom, uint64_t, int32_t n) {
        log->held += n;
        if (log->yields > 0) log->regained += n;
      },
      [=](actors::yield_atom, uint64_t, int32_t n) {
        log->yields += n;
        const int32_t back = std::min(n, log->held);
        log->held -= back;
        self->send(owner, actors::slot_update{key, back, back, true},
                   actors::slot_holder_actor{self});
      },
  };
}

TEST(dispatch_flow, a_batch_lane_yields_its_slot_to_a_job_of_its_model_and_gets_it_back) {
  flow_env env(/*global_concurrency=*/4, /*per_model_concurrency=*/1);
  const std::string model = "shared-model";
  auto sub = env.js().subscribe_tasks(model);
  ASSERT_TRUE(sub);
  auto job = env.create_job("job_single", nullptr, 0, 3, model);
  auto dispatcher =
      actors::spawn_model_dispatcher(env.ctx().dispatcher(), model, std::move(sub.value()),
                                     env.js().layout_generation(), actors::runs_on::scheduler);
  env.keep(caf::actor_cast<caf::actor>(dispatcher));
  lane_log lane;
  auto stand_in = env.sys().spawn(lane_stand_in, actors::slot_owner_actor{dispatcher},
                                  actors::next_slot_key(), 1, &lane);
  env.keep(caf::actor_cast<caf::actor>(stand_in));
  ASSERT_TRUE(env.step_until([&] { return lane.held == 1; })) << "the lane got no slot";

  env.publish(job);
  ASSERT_TRUE(env.step_until([&] { return env.job(job.id)->status == job_status::completed; }))
      << "the job never got the lane's slot";
  EXPECT_EQ(lane.yields, 1) << "the dispatcher asked the lane for its slot once";
  EXPECT_EQ(env.gateway().requests(), 1);
  EXPECT_TRUE(env.step_until([&] { return lane.regained == 1 && lane.held == 1; }))
      << "the slot did not go back to the lane that was waiting";
}

TEST(dispatch_flow, one_message_of_three_tasks_runs_them_on_one_slot_and_is_acked_once_all_leased) {
  flow_env env(/*global_concurrency=*/4, /*per_model_concurrency=*/1);
  const std::string model = "grouped-model";
  auto sub = env.js().subscribe_tasks(model);
  ASSERT_TRUE(sub);
  auto j1 = env.create_job("job_g1", nullptr, 0, 3, model);
  auto j2 = env.create_job("job_g2", nullptr, 0, 3, model);
  auto j3 = env.create_job("job_g3", {{"latency_ms", 600'000}}, 0, 3, model);
  // As the relay publishes them: one message naming the three.
  std::vector<storage::outbox_record> records;
  for (const auto* j : {&j1, &j2, &j3})
    records.push_back({records.size() + 1, storage::task_message{model, j->task_id, 1, 0}});
  auto grouped = actors::group_outbox(records, env.js().layout());
  ASSERT_EQ(grouped.size(), 1u);
  ASSERT_TRUE(env.js().publish_batch({grouped[0].msg}, 5'000).at(0));

  env.keep(caf::actor_cast<caf::actor>(
      actors::spawn_model_dispatcher(env.ctx().dispatcher(), model, std::move(sub.value()),
                                     env.js().layout_generation(), actors::runs_on::scheduler)));
  ASSERT_TRUE(env.step_until([&] {
    return env.job(j1.id)->status == job_status::completed &&
           env.job(j2.id)->status == job_status::completed && env.gateway().requests() == 3;
  })) << "the kept tasks did not run on the freed slot";
  EXPECT_EQ(request_order(env), (std::vector<std::string>{"job_g1", "job_g2", "job_g3"}));
  EXPECT_EQ(env.job(j3.id)->status, job_status::in_progress);
  EXPECT_TRUE(env.step_until([&] {
    auto n = env.js().task_backlog(model);
    return n && *n == 0;
  })) << "not acked although every task it names is leased";
  EXPECT_EQ(env.job(j3.id)->status, job_status::in_progress) << "acked at the lease, not the end";
  std::optional<actors::write_reply> cancelled;
  env.start_cancel(j3.id, &cancelled);
  EXPECT_TRUE(env.step_until([&] { return env.job(j3.id)->status == job_status::cancelled; }));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
