// GET /v1/jobs/{id}/events: server-sent events against the real engine.

#include <gtest/gtest.h>

#include "tests/integration/client/sse_client.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

/// Reads events until the terminal one (or the stream ends or stalls).
std::vector<sse_message> read_all(sse_client& s) {
  std::vector<sse_message> out;
  while (auto m = s.next()) {
    out.push_back(*m);
    if (m->event == "completed" || m->event == "failed" || m->event == "cancelled" ||
        m->event == "expired")
      break;
  }
  return out;
}

TEST(events, stream_from_queued_to_completed_then_end) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string id = env.submit(c, "watch me", {{"latency_ms", 500}}).json()["id"];
  sse_client s(env.port());
  ASSERT_EQ(s.open("/v1/jobs/" + id + "/events"), 200);
  EXPECT_EQ(s.header("Content-Type"), "text/event-stream");
  EXPECT_EQ(s.header("Cache-Control"), "no-cache");
  auto events = read_all(s);
  ASSERT_GE(events.size(), 3u);
  std::vector<std::string> states;
  uint64_t prev = 0;
  for (const auto& e : events) {
    states.push_back(e.event);
    uint64_t seq = std::stoull(e.id);
    EXPECT_GT(seq, prev);
    prev = seq;
    auto data = json::parse(e.data);
    EXPECT_EQ(data["job_id"], id);
    EXPECT_EQ(data["sequence"], seq);
    EXPECT_EQ(data["state"], e.event);
  }
  EXPECT_EQ(states.front(), "queued");
  EXPECT_EQ(states.back(), "completed");
  EXPECT_NE(std::find(states.begin(), states.end(), "in_progress"), states.end());
  auto last = json::parse(events.back().data);
  EXPECT_EQ(last["result"]["status_code"], 200);
  EXPECT_NE(last["result"]["body"].dump().find("watch me"), std::string::npos);
  // After the terminal event the body ends.
  EXPECT_FALSE(s.next(std::chrono::seconds(5)).has_value());
  EXPECT_TRUE(s.ended());
}

TEST(events, last_event_id_resumes_after_it) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string id = env.submit(c, "resume").json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  sse_client full(env.port());
  ASSERT_EQ(full.open("/v1/jobs/" + id + "/events"), 200);
  auto all = read_all(full);
  ASSERT_GE(all.size(), 3u);
  ASSERT_EQ(all.back().event, "completed");

  sse_client resumed(env.port());
  ASSERT_EQ(resumed.open("/v1/jobs/" + id + "/events", {{"Last-Event-ID", all[0].id}}), 200);
  auto later = read_all(resumed);
  ASSERT_EQ(later.size(), all.size() - 1);
  for (size_t i = 0; i < later.size(); ++i) EXPECT_EQ(later[i].id, all[i + 1].id);

  // Resuming after the terminal event: nothing left, the stream just ends.
  sse_client finished(env.port());
  ASSERT_EQ(finished.open("/v1/jobs/" + id + "/events", {{"Last-Event-ID", all.back().id}}), 200);
  EXPECT_FALSE(finished.next(std::chrono::seconds(5)).has_value());
  EXPECT_TRUE(finished.ended());
}

TEST(events, unknown_job_is_a_json_404_and_bad_last_event_id_a_400) {
  engine_env env;
  env.start();
  http_client c(env.port());
  sse_client s(env.port());
  ASSERT_EQ(s.open("/v1/jobs/job_01NOSUCHJOB0000000000000/events"), 404);
  EXPECT_EQ(s.header("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(s.body())["error"]["code"], "job_not_found");
  std::string id = env.submit(c, "x").json()["id"];
  auto bad = c.get("/v1/jobs/" + id + "/events", {{"Last-Event-ID", "yesterday"}});
  ASSERT_EQ(bad.status, 400) << bad.error;
  EXPECT_EQ(bad.json()["error"]["param"], "Last-Event-ID");
}

TEST(events, clients_that_read_nothing_do_not_stall_other_requests) {
  engine_env env;
  env.settings().gateway->request_timeout_ms = 60'000;
  env.start();
  http_client c(env.port());
  // More silent streams than the server has io threads (http_threads = 2).
  std::vector<std::string> ids;
  std::vector<std::unique_ptr<sse_client>> silent;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(env.submit(c, "slow " + std::to_string(i), {{"latency_ms", 3000}}).json()["id"]);
    silent.push_back(std::make_unique<sse_client>(env.port()));
    ASSERT_EQ(silent.back()->open("/v1/jobs/" + ids.back() + "/events"), 200);
  }
  // Other requests are answered while those streams are open and their jobs still run.
  auto quick = env.submit(c, "quick", {{"key", "quick"}}, {{"Prefer", "wait=10"}});
  ASSERT_EQ(quick.status, 200) << quick.body;
  EXPECT_EQ(c.get("/healthz").status, 200);
  auto slow_job = c.get("/v1/jobs/" + ids[0]).json();
  EXPECT_FALSE(slow_job["status"] == "completed") << "the quick request waited for the slow jobs";
  // The silent clients lost nothing: they read every event up to the end now.
  for (auto& s : silent) {
    auto events = read_all(*s);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.front().event, "queued");
    EXPECT_EQ(events.back().event, "completed");
  }
}

TEST(events, silence_is_broken_by_a_keep_alive_comment) {
  engine_env env;
  env.settings().gateway->request_timeout_ms = 60'000;
  env.settings().events_keepalive_ms = 300;
  env.start();
  http_client c(env.port());
  std::string id = env.submit(c, "quiet", {{"latency_ms", 40'000}}).json()["id"];
  sse_client s(env.port());
  ASSERT_EQ(s.open("/v1/jobs/" + id + "/events"), 200);
  ASSERT_TRUE(s.next().has_value());  // queued
  ASSERT_TRUE(s.next().has_value());  // in_progress
  // No event while the job runs; the stream stays open and says so, every 300 ms.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for(
      [&] {
        s.next(std::chrono::milliseconds(100));
        return s.comments() >= 3 || s.ended();
      },
      std::chrono::seconds(20)));
  // The first comment may come sooner than 300 ms after t0 (the silence began before it).
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2 * 300))
      << "keep-alives came faster than one per events_keepalive_ms";
  EXPECT_FALSE(s.ended());
}

TEST(events, a_graceful_stop_ends_open_streams) {
  engine_env env;
  env.settings().gateway->request_timeout_ms = 60'000;
  env.start();
  http_client c(env.port());
  std::string id = env.submit(c, "never finishes here", {{"latency_ms", 30'000}}).json()["id"];
  sse_client s(env.port());
  ASSERT_EQ(s.open("/v1/jobs/" + id + "/events"), 200);
  ASSERT_TRUE(s.next().has_value());                                 // queued
  ASSERT_TRUE(s.next().has_value());                                 // in_progress
  EXPECT_FALSE(s.next(std::chrono::milliseconds(800)).has_value());  // then quiet, still open
  ASSERT_FALSE(s.ended());
  auto t0 = std::chrono::steady_clock::now();
  env.stop();
  auto took = std::chrono::steady_clock::now() - t0;
  while (s.next(std::chrono::seconds(5))) {
  }
  EXPECT_TRUE(s.ended());  // closed by the server, not timed out
  EXPECT_LT(took, std::chrono::milliseconds(env.settings().shutdown_timeout_ms * 2));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
