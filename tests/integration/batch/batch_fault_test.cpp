// Real faults after dispatch, against the real engine: the directory the result files go to is
// replaced by a regular file (so creating them fails with ENOTDIR, whoever runs the test — as
// root, permissions would not stop a write), or a batch's plans vanish before a cancel drains
// them. Finalization and draining are retried with backoff, then the batch ends `failed` with a
// batch_failed error saying what was lost, keeping what could be written; a fault that clears
// in time lets the batch complete. Nothing is left in `finalizing`/`cancelling`, and no line is
// written twice.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "tests/integration/batch/batch_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// Puts a regular file where directory `dir` was (the directory moves aside), or back.
class blocked_dir {
 public:
  explicit blocked_dir(std::string dir) : dir_(std::move(dir)) {}
  ~blocked_dir() { restore(); }

  void block() {
    fs::rename(dir_, aside());
    std::ofstream(dir_) << "not a directory\n";
    blocked_ = true;
  }
  void restore() {
    if (!blocked_.exchange(false)) return;
    fs::remove(dir_);
    fs::rename(aside(), dir_);
  }

 private:
  std::string aside() const { return dir_ + ".aside"; }
  std::string dir_;
  std::atomic<bool> blocked_{false};
};

/// The names in the files directory, apart from the uploads folder.
std::set<std::string> stored_files(batch_env& env) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(env.settings().data_dir + "/files"))
    if (e.path().filename() != "uploads") out.insert(e.path().filename().string());
  return out;
}

/// Blocks `dir` from the gateway's io thread when the `n`th request arrives, before it is
/// answered: every line is dispatched (the input file is open) and finalization cannot have
/// begun, since it waits for that last answer.
void block_at_request(batch_env& env, blocked_dir& dir, int n) {
  auto seen = std::make_shared<std::atomic<int>>(0);
  env.gateway().on_request([seen, &dir, n](const fakes::received_request&) {
    if (++*seen == n) dir.block();
  });
}

TEST(batch_fault, result_files_that_cannot_be_written_fail_the_batch_after_bounded_retries) {
  batch_env env;
  env.start();
  env.manager().set_retry_policy({3, 20ms, 40ms});
  const int n = 12;
  auto input = env.upload(lines_of(n, "r", "m"));
  blocked_dir files(env.settings().data_dir + "/files");
  block_at_request(env, files, n);
  auto done = env.wait_terminal(env.create(input).id);
  ASSERT_EQ(done.status, batch_status::failed) << storage::to_string(done.status);
  EXPECT_GT(done.failed_at, 0);
  EXPECT_EQ(env.manager().failed_tries(), 3u) << "one failure per try, and no more tries";
  ASSERT_EQ(done.errors.size(), 1u);
  EXPECT_EQ(done.errors[0].code, "batch_failed");
  const std::string& why = done.errors[0].message;
  EXPECT_NE(why.find("cannot write the output file of 12 lines (after 3 tries: cannot create "),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("Not a directory"), std::string::npos) << why;
  // Every request ran once and is counted; its result could not be kept anywhere.
  EXPECT_EQ(done.total, n);
  EXPECT_EQ(done.completed, n);
  EXPECT_TRUE(done.output_file_id.empty());
  EXPECT_TRUE(done.error_file_id.empty());
  for (const auto& [key, count] : env.gateway().requests_by_key()) EXPECT_EQ(count, 1) << key;
  // Nothing half-written is left behind, and the batch's plans are gone.
  files.restore();
  EXPECT_EQ(stored_files(env), std::set<std::string>{input});
  // (removed just after the commit that made the batch terminal)
  const std::string plans = env.settings().data_dir + "/batches/" + done.id;
  EXPECT_TRUE(wait_for([&] { return !fs::exists(plans); }, 10s));
}

TEST(batch_fault, a_write_fault_that_clears_before_the_tries_run_out_lets_the_batch_complete) {
  batch_env env;
  env.start();
  env.manager().set_retry_policy({100, 20ms, 100ms});
  const int n = 12;
  auto input = env.upload(lines_of(n, "r", "m") + lines_of(3, "e", "m", {{"status", 400}}));
  blocked_dir files(env.settings().data_dir + "/files");
  block_at_request(env, files, n + 3);
  auto b = env.create(input);
  ASSERT_TRUE(wait_for([&] { return env.manager().failed_tries() >= 2; }, 30s))
      << storage::to_string(env.get(b.id).status);
  EXPECT_EQ(env.get(b.id).status, batch_status::finalizing) << "it waits, neither stuck nor done";
  files.restore();
  auto done = env.wait_terminal(b.id);
  ASSERT_EQ(done.status, batch_status::completed) << storage::to_string(done.status);
  EXPECT_TRUE(done.errors.empty());
  EXPECT_EQ(done.completed, n);
  EXPECT_EQ(done.failed, 3);
  expect_exactly_once(env, done, n + 3);
  // Only the input and the two files of the successful try: the failed tries left nothing.
  EXPECT_EQ(stored_files(env),
            (std::set<std::string>{input, done.output_file_id, done.error_file_id}));
}

// The plans vanish while the batch runs; a cancel then cannot drain the lines that have no
// result. The batch fails saying so, and the finished lines are kept in the output file.
TEST(batch_fault, a_drain_that_cannot_read_the_plans_fails_the_batch_keeping_finished_lines) {
  batch_env env;
  env.settings().per_model_concurrency = 1;
  env.settings().gateway->request_timeout_ms = 60'000;
  env.start();
  env.manager().set_retry_policy({3, 20ms, 40ms});
  // Dispatched in input order (one system prompt): 3 fast lines, then a slow one stays in
  // flight until the cancel aborts it.
  auto lines = lines_of(3, "fast", "m") + lines_of(6, "slow", "m", {{"latency_ms", 30'000}});
  auto b = env.create(env.upload(lines));
  ASSERT_TRUE(wait_for([&] { return env.get(b.id).completed == 3; }, 30s));
  blocked_dir plans(env.settings().data_dir + "/batches/" + b.id);
  plans.block();
  ASSERT_TRUE(run([&] { return env.svc().cancel_batch("default", b.id); }).ok());
  auto done = env.wait_terminal(b.id);
  ASSERT_EQ(done.status, batch_status::failed) << storage::to_string(done.status);
  EXPECT_EQ(env.manager().failed_tries(), 3u);
  ASSERT_FALSE(done.errors.empty());
  EXPECT_EQ(done.errors.back().code, "batch_failed");
  const std::string& why = done.errors.back().message;
  EXPECT_NE(why.find("cannot record the 6 requests that have no result as batch_cancelled "
                     "(after 3 tries: cannot open the plan of model m"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("Not a directory"), std::string::npos) << why;
  // Partial output kept: the finished lines, once each; the undrained ones are in no file.
  EXPECT_EQ(done.total, 9);
  EXPECT_EQ(done.completed, 3);
  EXPECT_EQ(done.failed, 0);
  auto out = env.read_lines(done.output_file_id);
  std::set<std::string> ids;
  for (const auto& l : out) ids.insert(l["custom_id"].get<std::string>());
  EXPECT_EQ(ids, (std::set<std::string>{"fast0", "fast1", "fast2"}));
  EXPECT_EQ(out.size(), 3u);
  EXPECT_TRUE(done.error_file_id.empty());
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
