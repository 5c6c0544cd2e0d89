// Batches against the real engine (nats-server, LMDB, the fake gateway), driven through the
// batch_service the HTTP API uses: lifecycle, exactly-once output, errors, retries and dead
// letters, cancel, expiry, restart, concurrency limits, file expiry.

#include <gtest/gtest.h>

#include "tests/integration/batch/batch_env.hpp"
#include "tests/integration/engine/nats_subscriber.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

TEST(batch, a_clean_batch_across_three_models_completes_with_one_output_line_each) {
  batch_env env;
  per_model_gateways(env);
  env.start();
  std::vector<json> lines;
  for (int i = 0; i < 60; ++i)
    lines.push_back(line("req-" + std::to_string(i), models[i % 3], json::object(),
                         "system prompt " + std::to_string(i % 4)));
  auto b = env.create(env.upload(lines));
  EXPECT_EQ(b.status, batch_status::validating);
  auto done = env.wait_terminal(b.id);
  ASSERT_EQ(done.status, batch_status::completed) << storage::to_string(done.status);
  EXPECT_EQ(done.total, 60);
  EXPECT_EQ(done.completed, 60);
  EXPECT_EQ(done.failed, 0);
  EXPECT_TRUE(done.error_file_id.empty()) << "a clean batch has no error file";
  EXPECT_GT(done.in_progress_at, 0);
  EXPECT_GT(done.finalizing_at, 0);
  EXPECT_GT(done.completed_at, 0);
  expect_exactly_once(env, done, 60);
  auto out = env.read_lines(done.output_file_id);
  for (const auto& l : out) {
    EXPECT_EQ(l["response"]["status_code"], 200);
    EXPECT_TRUE(l["error"].is_null());
    EXPECT_EQ(l["id"].get<std::string>().rfind("batch_req_", 0), 0u);
    EXPECT_EQ(l["response"]["body"]["object"], "chat.completion");
  }
  // Usage is the sum of the responses'.
  int64_t prompt = 0;
  for (const auto& l : out)
    prompt += l["response"]["body"]["usage"]["prompt_tokens"].get<int64_t>();
  EXPECT_EQ(done.usage.input, prompt);
  // Each request reached the gateway exactly once.
  auto by_key = env.gateway().requests_by_key();
  EXPECT_EQ(by_key.size(), 60u);
  for (const auto& [k, n] : by_key) EXPECT_EQ(n, 1) << k;
  auto output_file = env.svc().get_file("default", done.output_file_id);
  ASSERT_TRUE(output_file.ok());
  EXPECT_EQ(output_file->purpose, "batch_output");
}

TEST(batch, gateway_4xx_answers_go_to_the_error_file_with_their_status) {
  batch_env env;
  env.start();
  std::vector<json> lines;
  for (int i = 0; i < 10; ++i)
    lines.push_back(
        line("r" + std::to_string(i), "m", i % 2 ? json{{"status", 400}} : json::object()));
  auto done = env.wait_terminal(env.create(env.upload(lines)).id);
  ASSERT_EQ(done.status, batch_status::completed);
  EXPECT_EQ(done.completed, 5);
  EXPECT_EQ(done.failed, 5);
  expect_exactly_once(env, done, 10);
  for (const auto& l : env.read_lines(done.error_file_id)) {
    EXPECT_EQ(l["response"]["status_code"], 400);
    EXPECT_TRUE(l["response"]["body"].contains("error"));
  }
}

TEST(batch, a_line_is_tried_max_attempts_times_and_one_that_exhausts_them_is_a_dead_letter) {
  batch_env env;
  env.settings().gateway->max_retries = 5;  // the batch's max_attempts bounds a line, not this
  env.start();
  nats_subscriber dlq(env.nats().url(), "sy.dlq.>");
  auto b = env.create(env.upload({line("fine", "m1"), line("down", "m1", {{"status", 500}}),
                                  line("bad", "m1", {{"status", 400}})}),
                      86'400'000, 0, 2);
  EXPECT_EQ(b.max_attempts, 2);
  auto done = env.wait_terminal(b.id);
  ASSERT_EQ(done.status, batch_status::completed);
  EXPECT_EQ(done.completed, 1);
  EXPECT_EQ(done.failed, 2);
  expect_exactly_once(env, done, 3);
  auto tries = env.gateway().requests_by_key();
  EXPECT_EQ(tries["fine"], 1);
  EXPECT_EQ(tries["down"], 2);
  EXPECT_EQ(tries["bad"], 1) << "a final 4xx is not retried";
  std::map<std::string, json> errors;
  for (auto& l : env.read_lines(done.error_file_id)) errors[l["custom_id"]] = l;
  EXPECT_EQ(errors["down"]["response"]["status_code"], 500);
  EXPECT_EQ(errors["bad"]["response"]["status_code"], 400);
  // The 500 line, and only it, is on SY_DLQ, named by its request id.
  auto m = dlq.next(10'000);
  ASSERT_TRUE(m) << "no dead letter";
  EXPECT_EQ(m->first, "sy.dlq.m1");
  auto letter = json::parse(m->second);
  EXPECT_EQ(letter["job_id"], b.id);
  EXPECT_EQ(letter["custom_id"], "down");
  EXPECT_EQ(letter["task_id"], errors["down"]["id"]);
  EXPECT_EQ(letter["model"], "m1");
  EXPECT_EQ(letter["attempts"], 2);
  EXPECT_EQ(letter["error"]["code"], "gateway_error");
  // Every outbox record was published (and acked): the stream holds that one letter.
  ASSERT_TRUE(wait_for([&] { return env.count(storage::db::outbox) == 0; }));
  auto letters = env.js().stream_message_count(env.js().stream_name("DLQ"));
  ASSERT_TRUE(letters);
  EXPECT_EQ(*letters, 1u);
}

TEST(batch, an_invalid_input_file_fails_the_batch_with_line_errors_and_sends_nothing) {
  batch_env env;
  env.start();
  std::vector<json> lines = {line("a", "m"), line("a", "m")};
  auto bad_url = line("b", "m");
  bad_url["url"] = "/v1/embeddings";
  lines.push_back(bad_url);
  auto done = env.wait_terminal(env.create(env.upload(lines)).id);
  ASSERT_EQ(done.status, batch_status::failed);
  ASSERT_EQ(done.errors.size(), 2u);
  EXPECT_EQ(done.errors[0].code, "duplicate_custom_id");
  EXPECT_EQ(done.errors[0].line, 2);
  EXPECT_EQ(done.errors[1].code, "invalid_url");
  EXPECT_EQ(done.errors[1].line, 3);
  EXPECT_TRUE(done.output_file_id.empty());
  EXPECT_GT(done.failed_at, 0);
  EXPECT_EQ(env.gateway().requests(), 0);
  // No request was accepted, so OpenAI's request_counts are {total: 0, completed: 0, failed: 0}.
  http_client c(env.port());
  auto shown = c.get("/v1/batches/" + done.id).json();
  EXPECT_EQ(shown["request_counts"], (json{{"total", 0}, {"completed", 0}, {"failed", 0}}))
      << shown.dump();
}

TEST(batch, an_unknown_model_fails_validation_in_per_model_mode) {
  batch_env env;
  per_model_gateways(env);
  env.start();
  auto done =
      env.wait_terminal(env.create(env.upload({line("a", "model-a"), line("b", "nope")})).id);
  ASSERT_EQ(done.status, batch_status::failed);
  ASSERT_EQ(done.errors.size(), 1u);
  EXPECT_EQ(done.errors[0].code, "model_not_found");
  EXPECT_EQ(done.errors[0].line, 2);
}

TEST(batch, cancel_keeps_finished_lines_and_drains_the_rest_as_batch_cancelled) {
  batch_env env;
  env.settings().per_model_concurrency = 2;
  env.start();
  auto lines = lines_of(40, "r", "m", {{"latency_ms", 100}});
  auto b = env.create(env.upload(lines));
  ASSERT_TRUE(wait_for([&] { return env.get(b.id).completed >= 4; }));
  auto c = run([&] { return env.svc().cancel_batch("default", b.id); });
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->status == batch_status::cancelling || c->status == batch_status::cancelled);
  auto done = env.wait_terminal(b.id);
  ASSERT_EQ(done.status, batch_status::cancelled);
  EXPECT_GT(done.cancelling_at, 0);
  EXPECT_GT(done.cancelled_at, 0);
  EXPECT_GE(done.completed, 4);
  EXPECT_GT(done.failed, 0);
  expect_exactly_once(env, done, 40);
  for (const auto& l : env.read_lines(done.error_file_id))
    EXPECT_EQ(l["error"]["code"], "batch_cancelled");
  EXPECT_LT(env.gateway().requests(), 40);
  // Cancelling again answers the batch; a finished batch is not cancellable.
  auto again = run([&] { return env.svc().cancel_batch("default", b.id); });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, batch_status::cancelled);
}

TEST(batch, a_completed_batch_is_not_cancellable_and_unknown_ids_are_not_found) {
  batch_env env;
  env.start();
  auto done = env.wait_terminal(env.create(env.upload({line("a", "m")})).id);
  ASSERT_EQ(done.status, batch_status::completed);
  auto c = run([&] { return env.svc().cancel_batch("default", done.id); });
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, "batch_not_cancellable");
  auto missing = run([&] { return env.svc().cancel_batch("default", "batch_nope"); });
  EXPECT_EQ(missing.error().code, "batch_not_found");
  EXPECT_EQ(env.svc().get_batch("other-tenant", done.id).error().code, "batch_not_found");
  actors::batch_request req;
  req.tenant = "default";
  req.input_file_id = "file-nope";
  req.endpoint = "/v1/chat/completions";
  req.completion_window_ms = 1000;
  auto bad = run([&] { return env.svc().create_batch(admit::as_is(req)); });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "file_not_found");
}

TEST(batch, expiry_stops_dispatch_aborts_in_flight_and_marks_the_rest_batch_expired) {
  batch_env env;
  // The completion window is a timer of the engine's clock: it passes when the test moves it.
  auto& clock = env.use_manual_clock();
  env.settings().per_model_concurrency = 2;
  env.settings().gateway->request_timeout_ms = 60'000;
  env.start();
  auto lines = lines_of(4, "fast", "m") + lines_of(10, "slow", "m", {{"latency_ms", 30'000}});
  auto b = env.create(env.upload(lines), 3'600'000);
  // The results' gather before their commit is a timer of the same clock: each look moves it
  // 5 ms (far from the hour's window).
  ASSERT_TRUE(wait_for(
      [&] {
        clock.advance(5);
        return env.get(b.id).completed == 4;
      },
      std::chrono::seconds(15)))
      << "the fast lines did not finish";
  EXPECT_EQ(env.get(b.id).status, batch_status::in_progress) << "expired before its window";
  clock.advance(3'600'000);
  auto done = env.wait_terminal(b.id, std::chrono::seconds(15));
  ASSERT_EQ(done.status, batch_status::expired);
  EXPECT_GT(done.expired_at, 0);
  EXPECT_EQ(done.completed, 4);
  EXPECT_EQ(done.failed, 10);
  expect_exactly_once(env, done, 14);
  for (const auto& l : env.read_lines(done.error_file_id))
    EXPECT_EQ(l["error"]["code"], "batch_expired");
  EXPECT_LE(env.gateway().requests(), 6);  // 4 fast + at most 2 slow in flight
}

TEST(batch, the_per_model_limit_holds) {
  batch_env env;
  env.settings().per_model_concurrency = 2;
  env.start();
  auto lines = lines_of(20, "r", "m", {{"latency_ms", 20}});
  auto done = env.wait_terminal(env.create(env.upload(lines)).id);
  ASSERT_EQ(done.status, batch_status::completed);
  EXPECT_EQ(env.gateway().peak_in_flight(), 2);
}

TEST(batch, its_max_inflight_caps_its_lines_across_models_below_their_limits) {
  batch_env env;
  env.settings().per_model_concurrency = 4;
  env.start();
  auto lines =
      lines_of(12, "a", "m1", {{"latency_ms", 20}}) + lines_of(12, "b", "m2", {{"latency_ms", 20}});
  auto b = env.create(env.upload(lines), 86'400'000, 3);
  EXPECT_EQ(b.max_inflight, 3);
  auto done = env.wait_terminal(b.id);
  ASSERT_EQ(done.status, batch_status::completed);
  EXPECT_EQ(done.completed, 24);
  EXPECT_LE(env.gateway().peak_in_flight(), 3);
  EXPECT_GE(env.gateway().peak_in_flight(), 2);
}

TEST(batch, jobs_and_batches_of_one_model_share_its_limit) {
  batch_env env;
  env.settings().per_model_concurrency = 2;
  env.start();
  http_client c(env.port());
  std::vector<std::string> jobs;
  for (int i = 0; i < 6; ++i)
    jobs.push_back(env.submit(c, "job" + std::to_string(i), {{"latency_ms", 50}}).json()["id"]);
  auto lines = lines_of(10, "r", "test-model", {{"latency_ms", 50}});
  auto done = env.wait_terminal(env.create(env.upload(lines)).id);
  ASSERT_EQ(done.status, batch_status::completed);
  for (const auto& id : jobs)
    EXPECT_EQ(env.engine_env::wait_terminal(c, id)["status"], "completed");
  EXPECT_LE(env.gateway().peak_in_flight(), 2);
}

TEST(batch, a_job_of_a_model_whose_only_slot_a_batch_holds_runs_long_before_the_batch_ends) {
  // The lane sends windows of up to 64 fast lines on its one slot; asked for it back, it gives it
  // up when its window ends (within about 20 ms), so the job does not wait for the batch. Each
  // line takes at least 1 ms, so the batch lasts at least 3 s: a loaded machine (sanitizers,
  // parallel tests) slows the job's turn without making the margin below a race.
  batch_env env;
  env.settings().per_model_concurrency = 1;
  env.start();
  const int n = 3000;
  auto b = env.create(env.upload(lines_of(n, "r", "test-model", {{"latency_ms", 1}})));
  ASSERT_TRUE(wait_for([&] { return env.get(b.id).completed >= 100; }, std::chrono::seconds(60)));
  http_client c(env.port());
  auto id = env.submit(c, "job", json::object()).json()["id"].get<std::string>();
  EXPECT_EQ(env.engine_env::wait_terminal(c, id)["status"], "completed");
  const auto when_done = env.get(b.id);
  EXPECT_LT(when_done.completed, n - 500) << "the job waited for most of the batch";
  // The lane takes its slot back: the batch goes on (not waiting for the rest of its 3,000 lines,
  // which take 21 s under ASan and 110 s under TSan); then it is cancelled.
  ASSERT_TRUE(wait_for([&] { return env.get(b.id).completed >= when_done.completed + 100; },
                       std::chrono::seconds(60)))
      << "the batch did not resume after the job";
  ASSERT_TRUE(run([&] { return env.svc().cancel_batch("default", b.id); }).ok());
  auto done = env.wait_terminal(b.id, std::chrono::seconds(60));
  EXPECT_EQ(done.status, batch_status::cancelled);
  EXPECT_LT(done.completed, n);
  EXPECT_EQ(env.gateway().peak_in_flight(), 1);
}

/// Runs `lines` with the given limits and returns the model of each request in arrival order.
std::vector<std::string> arrival_order(batch_env& env, int per_model, int global,
                                       const std::vector<json>& lines, int64_t expect_peak) {
  per_model_gateways(env);
  env.settings().per_model_concurrency = per_model;
  env.settings().global_concurrency = global;
  env.start();
  std::mutex mu;
  std::vector<std::string> arrivals;
  env.gateway().on_request([&](const fakes::received_request& r) {
    auto model = json::parse(r.body)["model"].get<std::string>();
    std::lock_guard lock{mu};
    arrivals.push_back(model);
  });
  auto done = env.wait_terminal(env.create(env.upload(lines)).id);
  EXPECT_EQ(done.status, batch_status::completed);
  EXPECT_LE(env.gateway().peak_in_flight(), expect_peak);
  std::lock_guard lock{mu};
  EXPECT_EQ(arrivals.size(), lines.size());
  return arrivals;
}

/// The position of the last request for `model` in `arrivals`.
size_t last_of(const std::vector<std::string>& arrivals, const std::string& model) {
  size_t last = 0;
  for (size_t i = 0; i < arrivals.size(); ++i)
    if (arrivals[i] == model) last = i;
  return last;
}

TEST(batch, the_global_limit_holds_and_a_hot_model_does_not_starve_another) {
  batch_env env;
  auto lines = lines_of(40, "hot", "model-a", {{"latency_ms", 20}}) +
               lines_of(3, "cold", "model-b", {{"latency_ms", 20}});
  auto arrivals = arrival_order(env, 2, 3, lines, 3);
  // model-a may hold 2 slots at most, so model-b always has one: its 3 requests go out early.
  EXPECT_LT(last_of(arrivals, "model-b"), 15u) << "model-b waited behind model-a";
}

// The hot model could take the whole global budget here: the cold model gets slots only because
// a released slot is handed to the model waiting for it, not to the hot model asking again.
TEST(batch, a_hot_model_that_can_fill_the_global_budget_does_not_starve_another) {
  batch_env env;
  auto lines = lines_of(60, "hot", "model-a", {{"latency_ms", 10}}) +
               lines_of(3, "cold", "model-b", {{"latency_ms", 10}});
  auto arrivals = arrival_order(env, 2, 2, lines, 2);
  EXPECT_LT(last_of(arrivals, "model-b"), 12u) << "model-b waited behind model-a";
}

TEST(batch, two_hot_models_do_not_starve_a_third) {
  batch_env env;
  auto lines = lines_of(50, "a", "model-a", {{"latency_ms", 10}}) +
               lines_of(50, "b", "model-b", {{"latency_ms", 10}}) +
               lines_of(3, "cold", "model-c", {{"latency_ms", 10}});
  auto arrivals = arrival_order(env, 2, 4, lines, 4);
  EXPECT_LT(last_of(arrivals, "model-c"), 20u) << "model-c waited behind model-a and model-b";
}

TEST(batch, requests_sharing_a_system_prompt_go_out_together) {
  batch_env env;
  env.settings().per_model_concurrency = 1;
  env.start();
  std::mutex mu;
  std::vector<std::string> prompts;
  env.gateway().on_request([&](const fakes::received_request& r) {
    auto body = json::parse(r.body);
    std::lock_guard lock{mu};
    prompts.push_back(body["messages"][0]["content"].get<std::string>());
  });
  std::vector<json> lines;
  for (int i = 0; i < 12; ++i)
    lines.push_back(
        line("r" + std::to_string(i), "m", json::object(), "prompt " + std::to_string(i % 3)));
  auto done = env.wait_terminal(env.create(env.upload(lines)).id);
  ASSERT_EQ(done.status, batch_status::completed);
  std::lock_guard lock{mu};
  ASSERT_EQ(prompts.size(), 12u);
  int runs = 1;
  for (size_t i = 1; i < prompts.size(); ++i) runs += prompts[i] != prompts[i - 1];
  EXPECT_EQ(runs, 3) << "input order interleaves 3 prompts; dispatch groups them";
}

TEST(batch, a_restart_resumes_without_resending_finished_lines) {
  batch_env env;
  env.settings().per_model_concurrency = 2;
  env.start();
  auto lines = lines_of(30, "r", "m", {{"latency_ms", 60}});
  auto b = env.create(env.upload(lines));
  ASSERT_TRUE(wait_for([&] { return env.get(b.id).completed >= 6; }));
  env.stop();
  auto mid = env.stored(b.id);
  EXPECT_FALSE(storage::is_terminal(mid.status));
  env.start();
  auto done = env.wait_terminal(b.id);
  ASSERT_EQ(done.status, batch_status::completed);
  expect_exactly_once(env, done, 30);
  EXPECT_EQ(done.completed, 30);
  // Lines finished before the stop were not sent again; only those in flight at the stop (at
  // most the per-model limit) went twice.
  int64_t twice = 0;
  for (const auto& [k, n] : env.gateway().requests_by_key()) {
    EXPECT_LE(n, 2) << k;
    if (n == 2) ++twice;
  }
  EXPECT_LE(twice, 2);
}

TEST(batch, files_with_expires_after_are_deleted_when_due) {
  batch_env env;
  env.start();
  auto id = env.upload({line("a", "m")});
  auto f = *env.svc().get_file("default", id);
  (void)f;
  std::string staged = env.svc().upload_dir() + "/x.part";
  std::ofstream(staged) << "{}\n";
  storage::file_record g;
  g.id = "file-expiring";
  g.tenant = "default";
  g.filename = "x.jsonl";
  g.purpose = "user_data";
  g.bytes = 3;
  g.created_at = std::time(nullptr);
  // Two seconds ahead of a time truncated to the second: the file is due at least one second
  // from now, so the check just below cannot race the sweeper (with one it could, and did).
  g.expires_at = g.created_at + 2;
  ASSERT_TRUE(run([&] {
                return env.svc().create_file(admit::as_is(actors::staged_file{g, staged, 0}));
              }).ok());
  EXPECT_TRUE(env.svc().get_file("default", g.id).ok());
  ASSERT_TRUE(wait_for([&] { return !std::filesystem::exists(env.svc().file_path(g.id)); },
                       std::chrono::seconds(10)));
  EXPECT_EQ(env.svc().get_file("default", g.id).error().code, "file_not_found");
  // Deleting a file removes record and bytes; a second delete is not found.
  auto d = run([&] { return env.svc().delete_file("default", id); });
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(std::filesystem::exists(env.svc().file_path(id)));
  auto again = run([&] { return env.svc().delete_file("default", id); });
  EXPECT_EQ(again.error().code, "file_not_found");
}

TEST(batch, a_system_failure_fails_the_batch_keeping_finished_lines_and_accounting_for_all) {
  batch_env env;
  env.settings().per_model_concurrency = 2;
  env.start();
  auto lines = lines_of(30, "r", "m", {{"latency_ms", 60}});
  auto file_id = env.upload(lines);
  auto b = env.create(file_id);
  ASSERT_TRUE(wait_for([&] { return env.get(b.id).completed >= 4; }));
  env.stop();
  // The input file's bytes are lost while the engine is down.
  std::filesystem::remove(env.settings().data_dir + "/files/" + file_id);
  env.start();
  auto done = env.wait_terminal(b.id);
  ASSERT_EQ(done.status, batch_status::failed);
  EXPECT_GT(done.failed_at, 0);
  ASSERT_FALSE(done.errors.empty());
  EXPECT_EQ(done.errors.back().code, "batch_failed");
  EXPECT_NE(done.errors.back().message.find("input file"), std::string::npos);
  EXPECT_GE(done.completed, 4);
  EXPECT_EQ(done.completed + done.failed, 30);
  EXPECT_EQ(static_cast<int64_t>(env.read_lines(done.output_file_id).size()), done.completed);
  auto errors = env.read_lines(done.error_file_id);
  EXPECT_EQ(static_cast<int64_t>(errors.size()), done.failed);
  for (const auto& l : errors) EXPECT_EQ(l["error"]["code"], "batch_failed");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
