// GET /metrics (docs/operations.md) on the real binary: every family the doc lists is served
// from start, its known label sets at 0; the exposition passes `promtool check metrics` before
// any job, while jobs run and after; its counts equal the jobs run, its in-flight gauges rise
// while requests are out and fall back to zero when the engine is idle; with API keys it takes
// a metrics (or admin) key on both listeners.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "config/sha256.hpp"
#include "tests/support/metric_samples.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

/// A metric family as docs/operations.md lists it: its name and type (empty where the table
/// leaves the type out, as the process row does).
struct documented {
  std::string name;
  std::string type;
};

/// Every family in the tables of docs/operations.md's `GET /metrics` section: the backquoted
/// names in each row's first cell (one row may name several) and the type in its second.
std::vector<documented> documented_families() {
  std::ifstream doc(std::string(SY_SOURCE_DIR) + "/docs/operations.md");
  std::vector<documented> out;
  bool in_section = false;
  const std::regex quoted("`([a-z_]+)`");
  for (std::string line; std::getline(doc, line);) {
    if (line.starts_with("## ")) in_section = line == "## `GET /metrics`";
    if (!in_section || !line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 2) continue;
    std::string type = cells[1];
    std::erase(type, ' ');
    for (std::sregex_iterator it(cells[0].begin(), cells[0].end(), quoted), end; it != end; ++it)
      out.push_back({(*it)[1], type});
  }
  return out;
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

TEST(metrics, every_documented_family_is_served_from_start) {
  system_env env;
  env.start_gateway(0);
  env.start_engine();
  const auto fresh = http_client(env.port()).get("/metrics");
  ASSERT_EQ(fresh.status, 200);
  const std::string text = "\n" + fresh.body;  // every line, the first too, follows a newline

  const auto families = documented_families();
  ASSERT_GT(families.size(), 40U) << "docs/operations.md's metric tables did not parse";
  for (const auto& f : families) {
    EXPECT_NE(text.find("\n# HELP " + f.name + " "), std::string::npos) << f.name;
    const std::string type_line = "\n# TYPE " + f.name + " " + f.type;
    EXPECT_NE(text.find(f.type.empty() ? type_line : type_line + "\n"), std::string::npos)
        << f.name << " " << f.type;
  }

  // The label sets known in advance read 0 before their first event (a sample of each family
  // that has them; runtime/metrics.cpp, add_known_series, makes them).
  const std::vector<std::pair<std::string, std::vector<std::string>>> zeros = {
      {"jobs_processed_total", {R"(result="success")", R"(reason="none")"}},
      {"jobs_processed_total", {R"(result="cancelled")", R"(reason="none")"}},
      {"jobs_processed_total", {R"(result="failed")", R"(reason="gateway_rejected")"}},
      {"jobs_processed_total", {R"(result="failed")", R"(reason="system_error")"}},
      {"jobs_processed_total", {R"(result="re_enqueued")", R"(reason="lease_expired")"}},
      {"jobs_processed_total", {R"(result="expired")", R"(reason="expired_dequeue")"}},
      {"jobs_processed_total", {R"(result="expired")", R"(reason="expired_execution")"}},
      {"job_processing_duration_seconds_count", {R"(size_bucket="1")"}},
      {"job_processing_duration_seconds_count", {R"(size_bucket="100001+")"}},
      {"plan_build_duration_seconds_count", {R"(size_bucket="2-100")"}},
      {"batch_job_e2e_latency_seconds_count", {R"(status="completed")"}},
      {"batch_job_e2e_latency_seconds_count", {R"(status="failed")"}},
      {"batch_cancellation_total", {R"(phase="queued")"}},
      {"batch_cancellation_total", {R"(phase="finalizing")"}},
      {"batch_startup_recovery_total", {R"(status="in_progress")", R"(action="resumed")"}},
      {"batch_startup_recovery_total", {R"(status="validating")", R"(action="resumed")"}},
      {"file_storage_operations_total",
       {R"(operation="store")", R"(component="apiserver")", R"(status="success")"}},
      {"file_storage_operations_total",
       {R"(operation="store")", R"(component="processor")", R"(status="retry")"}},
      {"file_storage_operations_total",
       {R"(operation="delete")", R"(component="garbage-collector")", R"(status="exhausted")"}},
      {"switchyard_submissions_total", {R"(surface="http")", R"(status="202")"}},
      {"switchyard_submissions_total", {R"(surface="http")", R"(status="503")"}},
      {"switchyard_submissions_total", {R"(surface="batch")", R"(status="200")"}},
      {"switchyard_submissions_total", {R"(surface="nats")", R"(status="202")"}},
      {"switchyard_outbox_published_total", {R"(kind="task")"}},
      {"switchyard_outbox_published_total", {R"(kind="dlq")"}},
      {"switchyard_webhook_deliveries_total", {R"(outcome="delivered")"}},
      {"switchyard_webhook_deliveries_total", {R"(outcome="retried")"}},
      {"switchyard_webhook_deliveries_total", {R"(outcome="dropped")"}},
      {"switchyard_trace_spans_dropped_total", {R"(reason="queue_full")"}},
  };
  for (const auto& [name, labels] : zeros) {
    std::string which = name;
    for (const auto& l : labels) which += " " + l;
    EXPECT_EQ(samples(text, name, labels), std::vector<double>{0}) << which;
  }
  EXPECT_EQ(promtool_check(env.dir(), fresh.body), "");
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
