// The job/task state machine as committed by the storage writer: creation with idempotency,
// starting under a lease, fencing, retries up to max_attempts, release at shutdown.

#include <gtest/gtest.h>

#include "storage/lmdb_env.hpp"
#include "storage/ops.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::storage {
namespace {

class ops_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = environment::open(dir_.path(), 64 << 20);
    ASSERT_TRUE(e.ok()) << e.error().message;
    env_ = std::move(e.value());
  }

  op_reply run(const write_op& op) {
    auto txn = env_->begin_write();
    EXPECT_TRUE(txn.ok());
    auto r = apply(*txn, op);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    EXPECT_TRUE(txn->commit().ok());
    return r.value();
  }

  create_job_op make_job(const std::string& id, const std::string& key = {},
                         const std::string& hash = "h1", int max_attempts = 3) {
    create_job_op op;
    op.job.id = id;
    op.job.tenant = "t1";
    op.job.model = "m";
    op.job.endpoint = "/v1/chat/completions";
    op.job.idempotency_key = key;
    op.job.request_hash = hash;
    op.job.task_id = "task-" + id;
    op.job.max_attempts = max_attempts;
    op.task.id = op.job.task_id;
    op.task.job_id = id;
    op.task.model = "m";
    op.task.max_attempts = max_attempts;
    op.publish = {0, task_message_id(op.task.id, 1), "sy.tasks.m",
                  task_message_payload(op.task.id, 1)};
    return op;
  }

  start_attempt_op start(const std::string& task, int attempt, const std::string& token,
                         int64_t now = 1000) {
    return start_attempt_op{task, attempt, token, "local/a", now, 30'000};
  }

  finish_attempt_op finish(const std::string& task, int attempt, const std::string& token,
                           attempt_end end, int64_t now = 2000) {
    finish_attempt_op f;
    f.task_id = task;
    f.attempt = attempt;
    f.token = token;
    f.end = end;
    f.now_ms = now;
    f.backoff_ms = 500;
    f.subject = "sy.tasks.m";
    f.error_code = "gateway_error";
    f.error_message = "boom";
    if (end == attempt_end::succeeded) f.response = gateway_result{200, "{}"};
    return f;
  }

  std::optional<job_record> job(const std::string& id) {
    auto txn = env_->begin_read();
    return get_job(txn, id);
  }

  size_t outbox_size() {
    auto txn = env_->begin_read();
    return read_outbox(txn, 0, 1000).size();
  }

  test::temp_dir dir_;
  std::unique_ptr<environment> env_;
};

TEST_F(ops_test, create_queues_the_first_message) {
  auto r = run(make_job("j1"));
  EXPECT_EQ(r.what, op_reply::kind::done);
  EXPECT_TRUE(r.outbox_appended);
  EXPECT_EQ(outbox_size(), 1u);
  EXPECT_EQ(job("j1")->status, job_status::queued);
}

TEST_F(ops_test, idempotency_key_returns_the_same_job_or_conflicts) {
  run(make_job("j1", "key", "h1"));
  auto again = run(make_job("j2", "key", "h1"));
  EXPECT_EQ(again.what, op_reply::kind::existing);
  EXPECT_EQ(again.job->id, "j1");
  EXPECT_FALSE(job("j2").has_value());
  auto other = run(make_job("j3", "key", "h2"));
  EXPECT_EQ(other.what, op_reply::kind::conflict);
  EXPECT_FALSE(job("j3").has_value());
  EXPECT_EQ(outbox_size(), 1u);
}

TEST_F(ops_test, duplicates_in_one_transaction_make_one_job) {
  auto txn = env_->begin_write();
  ASSERT_TRUE(txn.ok());
  auto a = apply(*txn, make_job("j1", "k"));
  auto b = apply(*txn, make_job("j2", "k"));
  ASSERT_TRUE(txn->commit().ok());
  EXPECT_EQ(a->what, op_reply::kind::done);
  EXPECT_EQ(b->what, op_reply::kind::existing);
  EXPECT_EQ(b->job->id, "j1");
}

TEST_F(ops_test, success_completes_the_job_once) {
  run(make_job("j1"));
  EXPECT_EQ(run(start("task-j1", 1, "tok")).what, op_reply::kind::done);
  EXPECT_EQ(job("j1")->status, job_status::in_progress);
  EXPECT_EQ(run(finish("task-j1", 1, "tok", attempt_end::succeeded)).what, op_reply::kind::done);
  auto j = job("j1");
  EXPECT_EQ(j->status, job_status::completed);
  EXPECT_EQ(j->result->status_code, 200);
  EXPECT_EQ(j->attempts, 1);
  // A duplicate delivery and a duplicate result are both fenced out.
  EXPECT_EQ(run(start("task-j1", 1, "tok2")).what, op_reply::kind::stale);
  EXPECT_EQ(run(finish("task-j1", 1, "tok", attempt_end::succeeded)).what,
            op_reply::kind::stale);
}

TEST_F(ops_test, a_second_start_while_leased_is_busy_and_a_wrong_token_is_stale) {
  run(make_job("j1"));
  run(start("task-j1", 1, "tok"));
  EXPECT_EQ(run(start("task-j1", 1, "other")).what, op_reply::kind::busy);
  EXPECT_EQ(run(finish("task-j1", 1, "other", attempt_end::succeeded)).what,
            op_reply::kind::stale);
  EXPECT_EQ(job("j1")->status, job_status::in_progress);
}

TEST_F(ops_test, retry_requeues_with_backoff_then_fails_at_max_attempts) {
  run(make_job("j1", {}, "h", 2));
  run(start("task-j1", 1, "a"));
  auto r = run(finish("task-j1", 1, "a", attempt_end::retry, 2000));
  EXPECT_TRUE(r.outbox_appended);
  EXPECT_EQ(r.task->attempt, 2);
  EXPECT_EQ(job("j1")->status, job_status::queued);
  EXPECT_EQ(outbox_size(), 2u);
  // The old attempt's message is stale; the new one must wait out the backoff.
  EXPECT_EQ(run(start("task-j1", 1, "b", 2100)).what, op_reply::kind::stale);
  auto early = run(start("task-j1", 2, "b", 2100));
  EXPECT_EQ(early.what, op_reply::kind::not_yet);
  EXPECT_EQ(early.delay_ms, 400);
  EXPECT_EQ(run(start("task-j1", 2, "b", 2500)).what, op_reply::kind::done);
  run(finish("task-j1", 2, "b", attempt_end::retry, 3000));
  auto j = job("j1");
  EXPECT_EQ(j->status, job_status::failed);
  EXPECT_EQ(j->error->code, "gateway_error");
  EXPECT_NE(j->error->message.find("attempt 2 of 2"), std::string::npos);
  EXPECT_EQ(outbox_size(), 2u);
}

TEST_F(ops_test, rejected_fails_at_once_with_the_gateway_answer) {
  run(make_job("j1"));
  run(start("task-j1", 1, "a"));
  auto f = finish("task-j1", 1, "a", attempt_end::rejected);
  f.response = gateway_result{400, R"({"error":"bad"})"};
  run(f);
  auto j = job("j1");
  EXPECT_EQ(j->status, job_status::failed);
  EXPECT_EQ(j->result->status_code, 400);
}

TEST_F(ops_test, released_attempt_runs_again_without_counting) {
  run(make_job("j1"));
  run(start("task-j1", 1, "a"));
  run(finish("task-j1", 1, "a", attempt_end::released));
  EXPECT_EQ(job("j1")->status, job_status::queued);
  EXPECT_EQ(job("j1")->attempts, 0);
  EXPECT_EQ(run(start("task-j1", 1, "b")).what, op_reply::kind::done);
}

TEST_F(ops_test, extend_is_fenced) {
  run(make_job("j1"));
  run(start("task-j1", 1, "a"));
  EXPECT_EQ(run(extend_lease_op{"task-j1", 1, "a", 99'000}).what, op_reply::kind::done);
  EXPECT_EQ(run(extend_lease_op{"task-j1", 1, "x", 99'000}).what, op_reply::kind::stale);
  auto txn = env_->begin_read();
  EXPECT_EQ(get_lease(txn, "task-j1")->expires_at_ms, 99'000);
}

TEST(task_message, round_trips_and_rejects_garbage) {
  auto p = parse_task_message(task_message_payload("abc", 7));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->first, "abc");
  EXPECT_EQ(p->second, 7);
  EXPECT_FALSE(parse_task_message("abc").has_value());
  EXPECT_FALSE(parse_task_message("abc:x").has_value());
  EXPECT_FALSE(parse_task_message("abc:0").has_value());
  EXPECT_NE(task_message_id("a", 1), task_message_id("a", 2));
}

}  // namespace
}  // namespace sy::storage
