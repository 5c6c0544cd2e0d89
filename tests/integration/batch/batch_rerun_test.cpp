// A finished batch rerun through the jobs API (docs/batches.md, "Rerun") against the real engine
// (nats-server, LMDB, the fake gateway): only the lines of its error file run again, the new
// files replace the old on the batch (which stay downloadable), the counts are rebuilt from
// them, and a rerun stopped part way resumes after a restart with every line exactly once.

#include <gtest/gtest.h>

#include "actors/engine.hpp"
#include "tests/integration/batch/batch_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

/// Fails its line's first request with a final 400 (an error line); the rerun's succeeds.
const json fails_once = {{"status", 400}, {"fail_times", 1}};

result<storage::job_record> rerun(batch_env& env, const std::string& id,
                                  const std::string& tenant = "default") {
  return run([&] { return env.engine().rerun(tenant, id); });
}

TEST(batch_rerun, runs_the_failed_lines_again_into_new_files_that_replace_the_old) {
  batch_env env;
  env.start();
  auto first = env.wait_terminal(
      env.create(env.upload(lines_of(4, "ok", "m") + lines_of(2, "bad", "m", fails_once))).id);
  ASSERT_EQ(first.status, batch_status::completed);
  EXPECT_EQ(first.completed, 4);
  EXPECT_EQ(first.failed, 2);
  ASSERT_FALSE(first.error_file_id.empty());
  auto again = rerun(env, first.id);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->kind(), storage::job_kind::batch);
  EXPECT_EQ(again->status, storage::job_status::in_progress);
  EXPECT_EQ(again->run, 2);
  auto done = env.wait_terminal(first.id);
  ASSERT_EQ(done.status, batch_status::completed) << storage::to_string(done.status);
  EXPECT_EQ(done.run, 2);
  EXPECT_EQ(done.total, 6);
  EXPECT_EQ(done.completed, 6);
  EXPECT_EQ(done.failed, 0);
  EXPECT_NE(done.output_file_id, first.output_file_id);
  EXPECT_TRUE(done.error_file_id.empty()) << "nothing failed this run";
  EXPECT_GE(done.completed_at, first.completed_at);
  EXPECT_GT(done.expires_at, done.in_progress_at);
  expect_exactly_once(env, done, 6);
  // Only the failed lines ran again; the old files stay.
  for (const auto& [key, n] : env.gateway().requests_by_key())
    EXPECT_EQ(n, key.starts_with("bad") ? 2 : 1) << key;
  EXPECT_TRUE(env.svc().get_file("default", first.output_file_id).ok());
  EXPECT_TRUE(env.svc().get_file("default", first.error_file_id).ok());
  EXPECT_EQ(env.read_lines(first.output_file_id).size(), 4u);
  EXPECT_EQ(env.read_lines(first.error_file_id).size(), 2u);
  // Nothing is left to rerun.
  auto none = rerun(env, first.id);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, errc::job_not_rerunnable);
}

TEST(batch_rerun, is_refused_while_running_after_failed_validation_and_for_others) {
  batch_env env;
  env.start();
  auto running = env.create(env.upload(lines_of(2, "slow", "m", {{"latency_ms", 5'000}})));
  ASSERT_TRUE(wait_for([&] { return env.get(running.id).status == batch_status::in_progress; }));
  auto r = rerun(env, running.id);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::job_not_rerunnable);
  EXPECT_NE(r.error().message.find("in_progress"), std::string::npos) << r.error().message;
  auto bad = line("x", "m");
  bad.erase("method");
  auto invalid = env.wait_terminal(env.create(env.upload({bad})).id);
  ASSERT_EQ(invalid.status, batch_status::failed);
  r = rerun(env, invalid.id);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::job_not_rerunnable);
  EXPECT_EQ(rerun(env, running.id, "someone-else").error().code, errc::job_not_found);
  EXPECT_EQ(rerun(env, "batch_0000000000000000000000000").error().code, errc::job_not_found);
  // A batch whose input file was deleted cannot be rerun.
  auto in = env.upload(lines_of(1, "gone", "m", fails_once));
  auto ended = env.wait_terminal(env.create(in).id);
  ASSERT_FALSE(ended.error_file_id.empty());
  ASSERT_TRUE(run([&] { return env.svc().delete_file("default", in); }).ok());
  r = rerun(env, ended.id);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, errc::job_not_rerunnable);
  EXPECT_EQ(env.get(ended.id).status, batch_status::completed);
}

/// A rerun stopped (`env.stop()`, as a crash leaves it: nothing recorded for what was in flight)
/// once `stop_when` holds resumes at the next start, each line ending exactly once.
void rerun_resumes_after_a_restart(const std::function<bool(const batch_record&)>& stop_when) {
  batch_env env;
  env.settings().per_model_concurrency = 2;
  env.start();
  json slow_fail = fails_once;
  slow_fail["latency_ms"] = 40;
  auto first = env.wait_terminal(
      env.create(env.upload(lines_of(3, "ok", "m") + lines_of(16, "bad", "m", slow_fail))).id);
  ASSERT_EQ(first.failed, 16);
  ASSERT_TRUE(rerun(env, first.id).ok());
  ASSERT_TRUE(wait_for([&] { return stop_when(env.get(first.id)); }));
  env.stop();
  auto mid = env.stored(first.id);
  EXPECT_EQ(mid.run, 2);
  EXPECT_FALSE(storage::is_terminal(mid.status));
  EXPECT_EQ(mid.error_file_id, first.error_file_id) << "kept until the new end";
  env.start();
  auto done = env.wait_terminal(first.id);
  ASSERT_EQ(done.status, batch_status::completed);
  EXPECT_EQ(done.completed, 19);
  EXPECT_EQ(done.failed, 0);
  expect_exactly_once(env, done, 19);
  // A failed line ran once in the first run and once in the rerun, plus at most once more for
  // a request in flight at the stop (at most the per-model limit of them).
  int64_t thrice = 0;
  for (const auto& [key, n] : env.gateway().requests_by_key()) {
    EXPECT_LE(n, key.starts_with("bad") ? 3 : 1) << key;
    thrice += n == 3;
  }
  EXPECT_LE(thrice, 2);
}

TEST(batch_rerun, resumes_after_a_restart_right_after_it_was_committed) {
  rerun_resumes_after_a_restart([](const batch_record&) { return true; });
}

TEST(batch_rerun, resumes_after_a_restart_in_the_middle_of_its_dispatch) {
  rerun_resumes_after_a_restart([](const batch_record& b) { return b.completed >= 3 + 4; });
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
