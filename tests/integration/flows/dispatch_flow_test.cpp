// The model dispatchers' slot hand-off on CAF's test coordinator (issue 16, item 5): with one
// global slot, a slot that the hot model's attempt frees goes to the cold model that was waiting
// for it, not back to the hot model that asks again at once. The dispatchers, their task fetchers
// (on the scheduler: runs_on::scheduler), the job actors, the writer and the budgets are the
// engine's own; the hot model's first request is held at the fake gateway until it is cancelled.
//
// Not tested here: the hand-off between a batch lane and single jobs. Batch lanes still take
// their slots by calling the budgets, not by message (issue 16, item 2), so there is no message
// flow to run yet; global_budget's own tests cover its fairness.

#include <gtest/gtest.h>

#include "actors/model_dispatcher.hpp"
#include "tests/integration/flows/flow_env.hpp"

namespace sy::test {
namespace {

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
  env.publish(a1);
  env.publish(a2);
  env.publish(b1);

  env.keep(caf::actor_cast<caf::actor>(
      actors::spawn_model_dispatcher(env.ctx(), hot, std::move(hot_sub.value()),
                                     env.js().layout_generation(), actors::runs_on::scheduler)));
  ASSERT_TRUE(env.step_until([&] { return env.gateway().requests() == 1; }));
  EXPECT_EQ(env.ctx().budget.free(), 0) << "the hot model's attempt holds the only slot";

  env.keep(caf::actor_cast<caf::actor>(
      actors::spawn_model_dispatcher(env.ctx(), cold, std::move(cold_sub.value()),
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
  // A busy model takes its slots before it fetches; once a fetch comes back empty they return.
  EXPECT_TRUE(env.step_until([&] {
    return env.ctx().budget.free() == 1 && env.ctx().model_budget(hot).free() == 1 &&
           env.ctx().model_budget(cold).free() == 1;
  })) << "a slot was not given back";
}

}  // namespace
}  // namespace sy::test
