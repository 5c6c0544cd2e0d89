// The task-list state machine (storage/list_ops.cpp) as the storage writer commits it, with
// injected time: the window of published tasks, counts kept in the task transitions, the job's
// one completion, retries, release, cancel, deadlines and retention.

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/unit/ops/store_fixture.hpp"

namespace sy::storage {
namespace SY_UNITY_ID {

constexpr const char* job_id = "job_01JLIST";

class list_ops_test : public store_fixture {
 protected:
  create_list_op make_list(int n, int64_t window, int max_attempts = 3, const std::string& key = {},
                           const std::string& hash = "h1") {
    create_list_op op;
    op.job.id = job_id;
    op.job.tenant = "t1";
    op.job.endpoint = "/v1/chat/completions";
    op.job.model = "m";
    op.job.max_attempts = max_attempts;
    op.job.idempotency_key = key;
    op.job.request_hash = hash;
    op.job.created_at_ms = 1000;
    op.job.task_list = true;
    op.job.window = window;
    for (int i = 0; i < n; ++i) {
      task_record t;
      t.id = list_task_id(job_id, i);
      t.job_id = job_id;
      t.tenant = "t1";
      t.model = "m";
      t.index = i;
      t.max_attempts = max_attempts;
      t.custom_id = "c" + std::to_string(i);
      t.body = R"({"model":"m","n":)" + std::to_string(i) + "}";
      op.tasks.push_back(std::move(t));
    }
    return op;
  }

  static std::string task(int i) { return list_task_id(job_id, i); }

  op_reply start(int i, int attempt = 1, int64_t now = 2000) {
    return run(
        start_attempt_op{task(i), attempt, "tok" + std::to_string(i), "local/a", now, 30'000});
  }

  op_reply finish(int i, attempt_end end, int attempt = 1, int64_t now = 3000) {
    finish_attempt_op f;
    f.task_id = task(i);
    f.attempt = attempt;
    f.token = "tok" + std::to_string(i);
    f.end = end;
    f.now_ms = now;
    f.backoff_ms = 100;
    f.error_code = end == attempt_end::rejected ? "gateway_rejected" : "gateway_error";
    f.error_message = "boom";
    f.response = gateway_result{end == attempt_end::succeeded ? 200 : 503, "{}"};
    return run(f);
  }

  task_record get(int i) {
    auto txn = env_->begin_read();
    return *get_task(txn, task(i));
  }

  /// Task messages in the outbox, as task ids in order (the relay has not run).
  std::vector<std::string> published() {
    auto txn = env_->begin_read();
    std::vector<std::string> out;
    for (const auto& r : read_outbox(txn, 0, 100'000))
      if (auto* m = std::get_if<task_message>(&r.what); m && m->queue == "m")
        out.push_back(m->task_id + ":" + std::to_string(m->attempt));
    return out;
  }

  std::vector<event_record> events() {
    auto txn = env_->begin_read();
    return read_events(txn, job_id, 0);
  }
};

TEST_F(list_ops_test, task_ids_sort_by_index_and_parse_back) {
  EXPECT_EQ(list_task_id("job_01ABC", 7), "01ABC-00000007");
  EXPECT_LT(list_task_id("job_01ABC", 9), list_task_id("job_01ABC", 10));
  EXPECT_EQ(list_task_index("job_01ABC", "01ABC-00000010"), 10);
  EXPECT_EQ(list_task_index("job_01ABC", "01ABC-10"), std::nullopt);  // not 8 digits
  EXPECT_EQ(list_task_index("job_01ABC", "01ABD-00000010"), std::nullopt);
  EXPECT_EQ(list_task_index("job_01ABC", "01ABC-0000001x"), std::nullopt);
}

TEST_F(list_ops_test, create_writes_every_task_and_publishes_only_the_window) {
  auto r = run(make_list(10, 3));
  ASSERT_EQ(r.what, op_reply::kind::done);
  auto j = *r.job;
  EXPECT_TRUE(j.task_list);
  EXPECT_EQ(j.counts.total, 10);
  EXPECT_EQ(j.counts.queued, 10);
  EXPECT_EQ(j.next_publish, 3);
  EXPECT_EQ(j.live, 3);
  EXPECT_EQ(count(db::tasks), 10u);
  EXPECT_EQ(count(db::task_custom), 10u);
  EXPECT_EQ(count(db::queued), 3u);
  EXPECT_EQ(count(db::list_live), 3u);
  EXPECT_EQ(published(),
            (std::vector<std::string>{task(0) + ":1", task(1) + ":1", task(2) + ":1"}));
  ASSERT_EQ(events().size(), 1u);  // created
  auto decoded = job(job_id);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->counts, j.counts);
  EXPECT_EQ(decoded->window, 3);
  EXPECT_EQ(get(4).body, R"({"model":"m","n":4})");
  EXPECT_EQ(get(4).custom_id, "c4");
}

TEST_F(list_ops_test, a_finished_task_publishes_the_next_and_the_counts_follow_each_transition) {
  run(make_list(4, 2));
  auto s = start(0);
  ASSERT_EQ(s.what, op_reply::kind::done);
  ASSERT_TRUE(s.task);
  EXPECT_EQ(s.task->body, R"({"model":"m","n":0})");  // the job actor sends this
  EXPECT_EQ(s.job->status, job_status::in_progress);
  EXPECT_EQ(s.job->counts.in_progress, 1);
  EXPECT_EQ(s.job->counts.queued, 3);
  start(1);
  EXPECT_EQ(events().size(), 2u);  // created, in_progress: not one per task
  auto f = finish(0, attempt_end::succeeded);
  EXPECT_EQ(f.job->counts.completed, 1);
  EXPECT_EQ(f.job->counts.in_progress, 1);
  EXPECT_EQ(f.job->next_publish, 3);
  EXPECT_EQ(published().back(), task(2) + ":1");
  EXPECT_EQ(get(0).status, job_status::completed);
  ASSERT_TRUE(get(0).result);
  EXPECT_EQ(get(0).result->status_code, 200);
  EXPECT_EQ(count(db::list_live), 2u);
}

TEST_F(list_ops_test, a_finish_with_a_chain_leases_the_next_task_instead_of_publishing_it) {
  run(make_list(4, 2));
  start(0);
  start(1);
  const auto before = published();
  finish_attempt_op f;
  f.task_id = task(0);
  f.attempt = 1;
  f.token = "tok0";
  f.end = attempt_end::succeeded;
  f.now_ms = 3000;
  f.response = gateway_result{200, "{}"};
  f.chain_token = "chain0";
  f.chain_holder = "local/a";
  f.chain_lease_ttl_ms = 30'000;
  auto r = run(f);
  ASSERT_EQ(r.what, op_reply::kind::done);
  ASSERT_TRUE(r.chained) << "the window moved: its next task is leased for the chain";
  EXPECT_EQ(r.chained->id, task(2));
  EXPECT_EQ(r.chained->body, R"({"model":"m","n":2})");  // what the attempt sends next
  EXPECT_EQ(r.chained->state, task_state::leased);
  EXPECT_EQ(published(), before) << "a chained task has no message";
  EXPECT_EQ(get(2).status, job_status::in_progress);
  EXPECT_EQ(r.job->counts.in_progress, 2);  // task 1, and task 2 in the chain
  EXPECT_EQ(r.job->counts.completed, 1);
  EXPECT_EQ(r.job->live, 2);
  {
    auto txn = env_->begin_read();
    auto lease = get_lease(txn, task(2));
    ASSERT_TRUE(lease) << "the chain's lease is committed with the outcome";
    EXPECT_EQ(lease->token, "chain0");
    EXPECT_EQ(lease->holder, "local/a");
    EXPECT_EQ(lease->expires_at_ms, 33'000);
  }
  EXPECT_EQ(count(db::queued), 0u) << "never queued: a crash leaves a lease the reaper expires";
  // The chained attempt finishes under the chain's token like any attempt; the last task is
  // published when no chain is asked for.
  finish_attempt_op g = f;
  g.task_id = task(2);
  g.token = "chain0";
  g.chain_token.clear();
  auto r2 = run(g);
  ASSERT_EQ(r2.what, op_reply::kind::done);
  EXPECT_FALSE(r2.chained);
  EXPECT_EQ(published().back(), task(3) + ":1");
  // A retry moves no window: nothing is chained.
  f.task_id = task(1);
  f.token = "tok1";
  f.end = attempt_end::retry;
  f.backoff_ms = 100;
  f.chain_token = "chain1";
  EXPECT_FALSE(run(f).chained);
}

TEST_F(list_ops_test, the_job_completes_once_when_every_task_has_finished) {
  run(make_list(3, 10));
  for (int i = 0; i < 3; ++i) start(i);
  finish(0, attempt_end::succeeded);
  finish(1, attempt_end::rejected);
  EXPECT_EQ(job(job_id)->status, job_status::in_progress);
  auto last = finish(2, attempt_end::succeeded);
  EXPECT_EQ(last.job->status, job_status::completed);
  EXPECT_EQ(last.job->counts, (task_counts{3, 0, 0, 2, 1, 0}));
  EXPECT_EQ(events().back().state, job_status::completed);
  EXPECT_EQ(events().size(), 3u);
  // A duplicate outcome is fenced out and changes nothing.
  EXPECT_EQ(finish(2, attempt_end::succeeded).what, op_reply::kind::stale);
  EXPECT_EQ(events().size(), 3u);
  EXPECT_EQ(get(1).error->code, "gateway_rejected");
  EXPECT_EQ(count(db::list_live), 0u);
  EXPECT_EQ(count(db::queued), 0u);
}

TEST_F(list_ops_test, a_retry_requeues_the_task_with_its_next_attempt_until_max_attempts) {
  run(make_list(1, 10, 2));
  start(0);
  auto r = finish(0, attempt_end::retry);
  EXPECT_EQ(r.job->counts.queued, 1);
  EXPECT_EQ(r.job->counts.in_progress, 0);
  EXPECT_EQ(get(0).attempt, 2);
  EXPECT_EQ(get(0).status, job_status::queued);
  EXPECT_EQ(get(0).not_before_ms, 3100);
  EXPECT_EQ(published().back(), task(0) + ":2");
  EXPECT_EQ(start(0, 2, 3050).what, op_reply::kind::not_yet);
  ASSERT_EQ(start(0, 2, 3100).what, op_reply::kind::done);
  auto last = finish(0, attempt_end::retry, 2, 4000);
  EXPECT_EQ(last.job->status, job_status::completed);  // the list ran; its task failed
  EXPECT_EQ(last.job->counts.failed, 1);
  EXPECT_EQ(get(0).error->message, "boom (attempt 2 of 2)");
}

TEST_F(list_ops_test, a_released_attempt_goes_back_uncounted_with_a_fresh_message) {
  run(make_list(2, 10));
  start(0);
  const auto before = published().size();
  auto r = finish(0, attempt_end::released);
  EXPECT_EQ(r.job->counts.queued, 2);
  EXPECT_EQ(get(0).attempt, 1);
  EXPECT_EQ(get(0).state, task_state::queued);
  // Its first message was acked when the lease was taken (DESIGN rule 3): a new one runs it.
  ASSERT_EQ(published().size(), before + 1);
  EXPECT_EQ(published().back(), task(0) + ":1");
  EXPECT_TRUE(r.outbox_appended);
  EXPECT_EQ(start(0).what, op_reply::kind::done);
}

TEST_F(list_ops_test, cancel_ends_every_task_at_once_and_fences_the_running_ones) {
  run(make_list(10, 3));
  start(0);
  start(1);
  auto r = run(cancel_job_op{"t1", job_id, 2500});
  ASSERT_EQ(r.what, op_reply::kind::done);
  EXPECT_EQ(r.job->status, job_status::cancelled);
  EXPECT_EQ(r.job->counts, (task_counts{10, 0, 0, 0, 0, 10}));
  EXPECT_EQ(r.abort_tasks, (std::vector<std::string>{task(0), task(1)}));
  EXPECT_EQ(r.job->error->code, "cancelled");
  // The running attempts' outcomes are fenced out; the queued message finds its task done.
  EXPECT_EQ(finish(0, attempt_end::succeeded).what, op_reply::kind::stale);
  EXPECT_EQ(start(2).what, op_reply::kind::stale);
  EXPECT_EQ(count(db::queued), 0u);
  EXPECT_EQ(count(db::list_live), 0u);
  EXPECT_EQ(count(db::leases), 0u);
  auto j = *job(job_id);
  EXPECT_EQ(get(1).status, job_status::cancelled);
  // A task never published reads cancelled with the list.
  EXPECT_EQ(get(7).status, job_status::queued);
  EXPECT_EQ(shown_status(j, get(7)), job_status::cancelled);
  EXPECT_EQ(run(cancel_job_op{"t1", job_id, 2600}).what, op_reply::kind::existing);
}

TEST_F(list_ops_test, the_deadline_fails_every_unfinished_task_and_expires_the_job) {
  auto op = make_list(5, 2);
  op.job.deadline_ms = 10'000;
  run(op);
  start(0);
  finish(0, attempt_end::succeeded);
  start(1);
  EXPECT_EQ(run(expire_job_op{job_id, 10'000, 9'999}).what, op_reply::kind::not_yet);
  auto r = run(expire_job_op{job_id, 10'000, 10'000});
  ASSERT_EQ(r.what, op_reply::kind::done);
  EXPECT_EQ(r.job->status, job_status::expired);
  EXPECT_EQ(r.job->counts, (task_counts{5, 0, 0, 1, 4, 0}));
  EXPECT_EQ(r.abort_tasks, (std::vector<std::string>{task(1)}));
  EXPECT_EQ(get(1).error->code, "deadline_exceeded");
  EXPECT_EQ(shown_status(*r.job, get(4)), job_status::failed);
  EXPECT_EQ(shown_status(*r.job, get(0)), job_status::completed);
}

TEST_F(list_ops_test, a_start_past_the_deadline_expires_the_list) {
  auto op = make_list(3, 3);
  op.job.deadline_ms = 5'000;
  run(op);
  auto r = start(0, 1, 5'000);
  EXPECT_EQ(r.what, op_reply::kind::stale);
  EXPECT_EQ(job(job_id)->status, job_status::expired);
  EXPECT_EQ(job(job_id)->counts.failed, 3);
  EXPECT_EQ(count(db::deadlines), 0u);
}

TEST_F(list_ops_test, the_idempotency_key_finds_the_list_or_conflicts) {
  run(make_list(3, 3, 3, "k", "h1"));
  auto again = make_list(3, 3, 3, "k", "h1");
  again.job.id = "job_01OTHER";
  auto r = run(again);
  EXPECT_EQ(r.what, op_reply::kind::existing);
  EXPECT_EQ(r.job->id, job_id);
  again.job.request_hash = "h2";
  EXPECT_EQ(run(again).what, op_reply::kind::conflict);
  EXPECT_EQ(count(db::tasks), 3u);
}

TEST_F(list_ops_test, retention_deletes_the_list_with_everything_of_it) {
  run(make_list(6, 2));
  run(cancel_job_op{"t1", job_id, 2000});
  std::vector<std::pair<int64_t, std::string>> due;
  {
    auto txn = env_->begin_read();
    due = read_due(txn, db::retention, INT64_MAX, 10);
  }
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(run(purge_jobs_op{due}).purged, 1u);
  EXPECT_EQ(count(db::tasks), 0u);
  EXPECT_EQ(count(db::task_custom), 0u);
  EXPECT_EQ(count(db::list_live), 0u);
  EXPECT_EQ(count(db::jobs), 0u);
  EXPECT_EQ(count(db::events), 0u);
}

TEST_F(list_ops_test, an_unlatched_list_never_completes_before_its_latch) {
  auto op = make_list(2, 10);
  op.latch = false;
  auto r = run(op);
  EXPECT_EQ(r.job->status, job_status::ingesting);
  EXPECT_EQ(r.job->counts.total, -1);
  for (int i = 0; i < 2; ++i) {
    start(i);
    finish(i, attempt_end::succeeded);
  }
  EXPECT_EQ(job(job_id)->status, job_status::ingesting);  // every task done, not latched
  auto latched = run(latch_list_op{job_id, 2, 4000});
  EXPECT_EQ(latched.job->status, job_status::completed);
  EXPECT_EQ(latched.job->counts.total, 2);
  EXPECT_EQ(run(latch_list_op{job_id, 2, 4100}).what, op_reply::kind::existing);
}

TEST_F(list_ops_test, a_chunk_applies_once_and_a_replayed_one_is_stale) {
  auto op = make_list(0, 2);
  op.latch = false;
  op.job.ingest_path = "/data/task-lists/x.jsonl";
  run(op);
  EXPECT_EQ(count(db::list_ingest), 1u);
  auto chunk = make_list(3, 2).tasks;
  auto r = run(ingest_chunk_op{job_id, 0, chunk, 300, 1500});
  ASSERT_EQ(r.what, op_reply::kind::done);
  EXPECT_EQ(r.job->ingested, 3);
  EXPECT_EQ(r.job->ingest_offset, 300);
  EXPECT_EQ(r.job->counts.queued, 3);
  EXPECT_EQ(r.job->live, 2);
  // After a crash the same chunk is read again: it finds its tasks written.
  auto again = run(ingest_chunk_op{job_id, 0, chunk, 300, 1600});
  EXPECT_EQ(again.what, op_reply::kind::stale);
  EXPECT_EQ(again.job->ingested, 3);
  EXPECT_EQ(job(job_id)->counts.queued, 3);
  EXPECT_EQ(count(db::tasks), 3u);
  EXPECT_EQ(run(latch_list_op{job_id, 3, 1700}).job->counts.total, 3);
  EXPECT_EQ(count(db::list_ingest), 0u);
  EXPECT_TRUE(job(job_id)->ingest_path.empty());
}

TEST_F(list_ops_test, appends_take_the_next_indexes_once_per_key) {
  auto op = make_list(1, 10);
  op.latch = false;
  run(op);
  append_tasks_op a;
  a.tenant = "t1";
  a.job_id = job_id;
  a.idempotency_key = "k";
  a.request_hash = "h";
  a.tasks = make_list(2, 10).tasks;
  for (auto& t : a.tasks) t.custom_id = "more-" + t.custom_id;
  a.max_tasks = 100;
  a.now_ms = 1500;
  auto r = run(a);
  ASSERT_EQ(r.what, op_reply::kind::done);
  EXPECT_EQ(r.job->ingested, 3);
  EXPECT_EQ(get(2).index, 2);
  EXPECT_EQ(get(2).custom_id, "more-c1");
  EXPECT_EQ(run(a).what, op_reply::kind::existing);
  EXPECT_EQ(job(job_id)->ingested, 3);
  a.request_hash = "other";
  EXPECT_EQ(run(a).refusal->code, "idempotency_conflict");
  a.idempotency_key.clear();
  a.tasks = {make_list(1, 1).tasks[0]};  // custom_id c0, taken by task 0
  auto dup = run(a);
  ASSERT_EQ(dup.what, op_reply::kind::refused);
  EXPECT_EQ(dup.refusal->code, "duplicate_custom_id");
  EXPECT_EQ(dup.refusal->param, "tasks[0].custom_id");
  a.tasks.clear();
  a.last_batch = true;
  auto closed = run(a);
  EXPECT_EQ(closed.job->counts.total, 3);
  EXPECT_EQ(closed.job->status, job_status::queued);
  EXPECT_EQ(run(a).refusal->code, "job_not_open");
  a.tenant = "t2";
  EXPECT_EQ(run(a).what, op_reply::kind::not_found);
}

TEST_F(list_ops_test, a_large_list_is_removed_in_steps_that_keep_each_transaction_small) {
  const int n = static_cast<int>(purge_tasks_per_txn) * 2 + 500;
  run(make_list(n, 4));
  run(cancel_job_op{"t1", job_id, 2000});
  auto due = [&] {
    auto txn = env_->begin_read();
    return read_due(txn, db::retention, INT64_MAX, 10);
  };
  ASSERT_EQ(due().size(), 1u);
  EXPECT_EQ(run(purge_jobs_op{due()}).purged, 0u);
  EXPECT_EQ(count(db::tasks), static_cast<size_t>(n) - purge_tasks_per_txn);
  ASSERT_TRUE(job(job_id));
  EXPECT_TRUE(job(job_id)->deleted);  // gone for clients from the first step
  EXPECT_FALSE(job(job_id)->owned_by("t1"));
  EXPECT_EQ(count(db::job_index), 0u);
  ASSERT_EQ(due().size(), 1u);  // the rest is due again
  EXPECT_EQ(run(purge_jobs_op{due()}).purged, 0u);
  EXPECT_EQ(run(purge_jobs_op{due()}).purged, 1u);
  EXPECT_EQ(count(db::tasks), 0u);
  EXPECT_EQ(count(db::task_custom), 0u);
  EXPECT_EQ(count(db::jobs), 0u);
  EXPECT_EQ(count(db::retention), 0u);
}

TEST_F(list_ops_test, delete_of_a_large_list_leaves_the_rest_to_the_reaper) {
  const int n = static_cast<int>(purge_tasks_per_txn) + 10;
  run(make_list(n, 4));
  start(0);
  auto r = run(delete_job_op{"t1", job_id, 5000});
  ASSERT_EQ(r.what, op_reply::kind::done);
  EXPECT_EQ(r.abort_tasks, (std::vector<std::string>{task(0)}));
  EXPECT_EQ(count(db::tasks), 10u);
  EXPECT_EQ(run(delete_job_op{"t1", job_id, 5001}).what, op_reply::kind::not_found);
  EXPECT_EQ(run(cancel_job_op{"t1", job_id, 5002}).what, op_reply::kind::not_found);
  auto due = [&] {
    auto txn = env_->begin_read();
    return read_due(txn, db::retention, 5000, 10);
  };
  ASSERT_EQ(due().size(), 1u);
  EXPECT_EQ(run(purge_jobs_op{due()}).purged, 1u);
  EXPECT_EQ(count(db::tasks), 0u);
  EXPECT_EQ(count(db::jobs), 0u);
}

TEST_F(list_ops_test, results_over_the_inline_size_go_to_the_jobs_segment_and_leave_with_the_job) {
  const auto dir = std::filesystem::path(dir_.path()) / "task-results";
  policy_.results = std::make_shared<result_segments>(dir, 8);
  run(make_list(3, 10));
  const std::string large = R"({"answer":"a body over eight bytes"})";
  auto finish_with = [&](int i, std::string body) {
    start(i);
    finish_attempt_op f;
    f.task_id = task(i);
    f.attempt = 1;
    f.token = "tok" + std::to_string(i);
    f.end = attempt_end::succeeded;
    f.now_ms = 3000;
    f.response = gateway_result{200, std::move(body)};
    return run(f);
  };
  finish_with(0, large);
  finish_with(1, "{}");  // small: stays in the record
  finish_with(2, large + " ");
  const auto first = get(0);
  ASSERT_TRUE(first.result);
  EXPECT_EQ(first.result->status_code, 200);
  EXPECT_EQ(first.result->body, "");
  EXPECT_EQ(first.result_offset, 0);
  EXPECT_EQ(first.result_length, static_cast<int64_t>(large.size()));
  EXPECT_EQ(get(1).result->body, "{}");
  EXPECT_EQ(get(1).result_offset, -1);
  EXPECT_EQ(get(2).result_offset, static_cast<int64_t>(large.size()));
  ASSERT_TRUE(policy_.results->sync());
  EXPECT_EQ(*policy_.results->read(job_id, 0, first.result_length), large);
  EXPECT_EQ(*policy_.results->read(job_id, get(2).result_offset, get(2).result_length),
            large + " ");
  EXPECT_FALSE(policy_.results->read(job_id, 1000, 10));  // past the end: an error, not garbage
  // The segment goes with the job's last purge step.
  std::vector<std::pair<int64_t, std::string>> due;
  {
    auto txn = env_->begin_read();
    due = read_due(txn, db::retention, INT64_MAX, 10);
  }
  ASSERT_EQ(due.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(dir / (std::string(job_id) + ".seg")));
  EXPECT_EQ(run(purge_jobs_op{due}).purged, 1u);
  EXPECT_FALSE(std::filesystem::exists(dir / (std::string(job_id) + ".seg")));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
