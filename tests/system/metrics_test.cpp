// GET /metrics (docs/operations.md) on the real binary: the exposition passes `promtool check
// metrics` while jobs run and after; its counts equal the jobs run, its in-flight gauges rise
// while requests are out and fall back to zero when the engine is idle; with API keys it takes
// a metrics (or admin) key on both listeners.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "config/sha256.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

/// The sum of the samples of `name` whose labels include every one of `labels` (`k="v"`).
double value(const std::string& text, const std::string& name,
             const std::vector<std::string>& labels = {}) {
  double sum = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    const std::string series = line.substr(0, space);
    const std::string metric = series.substr(0, series.find('{'));
    if (metric != name) continue;
    bool all = true;
    for (const auto& l : labels) all = all && series.find(l) != std::string::npos;
    if (all) sum += std::stod(line.substr(space + 1));
  }
  return sum;
}

/// Runs `promtool check metrics` over `text`; its output, empty when the exposition is clean.
std::string promtool_check(const temp_dir& dir, const std::string& text) {
  const auto in = dir.sub("scrape.txt");
  const auto out = dir.sub("promtool.out");
  std::ofstream(in) << text;
  const int rc =
      std::system(("promtool check metrics < '" + in + "' > '" + out + "' 2>&1").c_str());
  std::ifstream o(out);
  std::string report((std::istreambuf_iterator<char>(o)), std::istreambuf_iterator<char>());
  return rc == 0 ? report : "exit " + std::to_string(rc) + ": " + report;
}

TEST(metrics, counts_equal_the_jobs_run_and_gauges_return_to_zero_when_idle) {
  system_env env;
  env.start_gateway(400);
  env.start_engine();
  http_client c(env.port());
  http_client gw(env.gateway_port());
  // The first two requests are rejected (400 is final: those two jobs fail).
  ASSERT_EQ(gw.post_json("/_fake/control", {{"fail_next", 2}, {"status", 400}}).status, 200);
  constexpr int jobs = 20;
  std::vector<std::string> ids;
  for (int i = 0; i < jobs; ++i) ids.push_back(env.submit(c, "m-" + std::to_string(i)));
  for (const auto& id : ids) ASSERT_FALSE(id.empty());

  // While the gateway holds requests, the in-flight gauges show them. A request's meter counts
  // it in the process's gauge and then in its model's, and a scrape reads one family after the
  // other: wait for one scrape that shows all three.
  std::string during;
  ASSERT_TRUE(wait_for(
      [&] {
        during = c.get("/metrics").body;
        return value(during, "processor_inflight_requests") > 0 &&
               value(during, "model_inflight_requests", {R"(model="sys-model")"}) > 0 &&
               value(during, "active_workers") > 0;
      },
      std::chrono::seconds(60)))
      << during;
  EXPECT_GT(value(during, "model_inflight_requests", {R"(model="sys-model")"}), 0);
  EXPECT_EQ(value(during, "active_workers") > 0, true);
  EXPECT_EQ(promtool_check(env.dir(), during), "");

  int completed = 0;
  for (const auto& id : ids) completed += env.wait_terminal(c, id) == "completed" ? 1 : 0;
  EXPECT_EQ(completed, jobs - 2);

  // Idle: every count equals the jobs run; every in-flight gauge is back at zero (the queue
  // gauges are measured by the reaper every 2 s).
  std::string after;
  const bool settled = wait_for(
      [&] {
        after = c.get("/metrics").body;
        return value(after, "jobs_processed_total") == jobs &&
               value(after, "processor_inflight_requests") == 0 &&
               value(after, "active_workers") == 0 && value(after, "switchyard_queue_depth") == 0 &&
               value(after, "job_queue_wait_duration_seconds_count") == jobs;
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(settled) << after;
  EXPECT_EQ(value(after, "jobs_processed_total", {R"(result="success")", R"(reason="none")"}),
            jobs - 2);
  EXPECT_EQ(value(after, "jobs_processed_total", {R"(result="failed")"}), 2);
  EXPECT_EQ(value(after, "switchyard_submissions_total", {R"(surface="http")", R"(status="202")"}),
            jobs);
  const std::string model = R"(model="sys-model")";
  EXPECT_EQ(value(after, "switchyard_attempts_total", {model, R"(outcome="succeeded")"}), jobs - 2);
  EXPECT_EQ(value(after, "switchyard_attempts_total", {model, R"(outcome="failed")"}), 2);
  EXPECT_EQ(value(after, "model_request_execution_duration_seconds_count", {model}), jobs);
  EXPECT_EQ(value(after, "switchyard_attempt_duration_seconds_count", {model}), jobs);
  EXPECT_EQ(value(after, "request_errors_by_model_total", {model}), 2);
  EXPECT_EQ(value(after, "switchyard_gateway_responses_total", {model, R"(class="4xx")"}), 2);
  EXPECT_EQ(value(after, "switchyard_gateway_responses_total", {model, R"(class="2xx")"}),
            jobs - 2);
  EXPECT_EQ(value(after, "model_inflight_requests", {model}), 0);
  EXPECT_EQ(value(after, "switchyard_model_concurrency_limit", {model}), 10);
  EXPECT_EQ(value(after, "processor_max_inflight_concurrency"), 100);
  EXPECT_EQ(value(after, "job_processing_duration_seconds_count", {R"(size_bucket="1")"}), jobs);
  // Each job's creation and its two transitions commit: at least that many operations.
  EXPECT_GE(value(after, "switchyard_storage_commit_operations_sum"), 3 * jobs);
  EXPECT_GT(value(after, "switchyard_storage_map_used_bytes"), 0);
  EXPECT_EQ(value(after, "switchyard_nats_connected"), 1);
  EXPECT_GT(value(after, "switchyard_http_requests_total", {R"(route="/v1/jobs/{id}")"}), 0);
  EXPECT_GT(value(after, "process_resident_memory_bytes"), 0);
  EXPECT_EQ(promtool_check(env.dir(), after), "");

  // The internal listener serves the same registry.
  auto internal = http_client(env.internal_port()).get("/metrics");
  EXPECT_EQ(internal.status, 200);
  EXPECT_EQ(value(internal.body, "jobs_processed_total"), jobs);
}

TEST(metrics, queue_gauges_show_the_tasks_waiting_for_a_slot) {
  system_env env;
  env.start_gateway(1500);
  env.start_engine({"--per-model-concurrency", "1"});
  http_client c(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(env.submit(c, "q-" + std::to_string(i)));
  const std::string queue = R"(queue="sys-model")";
  const std::string model = R"(model="sys-model")";
  std::string text;
  // One runs; the others wait their turn, 1.5 s each. The queue gauges are the reaper's last
  // sweep (every 2 s), the in-flight gauge is live: a sweep can come before the first job is
  // dispatched, or a scrape between two jobs, so wait for a scrape that shows both.
  ASSERT_TRUE(wait_for(
      [&] {
        text = c.get("/metrics").body;
        return value(text, "switchyard_queue_depth", {queue}) >= 2 &&
               value(text, "switchyard_queue_oldest_age_seconds", {queue}) > 0 &&
               value(text, "model_inflight_requests", {model}) == 1;
      },
      std::chrono::seconds(30)))
      << text;
  EXPECT_EQ(value(text, "model_inflight_requests", {model}), 1);
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c, id), "completed");
  ASSERT_TRUE(wait_for(
      [&] {
        text = c.get("/metrics").body;
        return value(text, "switchyard_queue_depth", {queue}) == 0 &&
               value(text, "switchyard_queue_oldest_age_seconds", {queue}) == 0;
      },
      std::chrono::seconds(30)))
      << text;
}

TEST(metrics, take_a_metrics_or_admin_key_when_api_keys_are_configured) {
  system_env env;
  env.start_gateway(0);
  const auto config = env.dir().sub("switchyard.yaml");
  std::ofstream(config) << "api_keys:\n"
                        << "  - {sha256: " << config::sha256_hex("sk-client") << ", tenant: t1}\n"
                        << "  - {sha256: " << config::sha256_hex("sk-metrics")
                        << ", role: metrics}\n"
                        << "  - {sha256: " << config::sha256_hex("sk-admin") << ", role: admin}\n";
  env.start_engine({"--config", config});
  for (uint16_t port : {env.port(), env.internal_port()}) {
    http_client c(port);
    auto none = c.get("/metrics");
    EXPECT_EQ(none.status, 401) << port;
    EXPECT_EQ(none.json()["error"]["code"], "missing_api_key");
    auto client = c.get("/metrics", {{"Authorization", "Bearer sk-client"}});
    EXPECT_EQ(client.status, 401) << port;
    EXPECT_EQ(client.json()["error"]["code"], "invalid_api_key");
    auto metrics = c.get("/metrics", {{"Authorization", "Bearer sk-metrics"}});
    EXPECT_EQ(metrics.status, 200) << port;
    EXPECT_EQ(metrics.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_GT(value(metrics.body, "switchyard_http_requests_total", {R"(code="401")"}), 0);
    EXPECT_EQ(c.get("/metrics", {{"Authorization", "Bearer sk-admin"}}).status, 200) << port;
  }
  // A metrics key is nothing more: the jobs API refuses it.
  EXPECT_EQ(
      http_client(env.port()).get("/v1/jobs", {{"Authorization", "Bearer sk-metrics"}}).status,
      401);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
