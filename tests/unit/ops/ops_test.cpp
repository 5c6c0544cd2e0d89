// The job/task state machine as committed by the storage writer: creation with idempotency,
// starting under a lease, fencing, retries up to max_attempts, release at shutdown.

#include <gtest/gtest.h>

#include "tests/unit/ops/store_fixture.hpp"

namespace sy::storage {
namespace SY_UNITY_ID {

class ops_test : public store_fixture {
 protected:
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
    f.error_code = "gateway_error";
    f.error_message = "boom";
    if (end == attempt_end::succeeded) f.response = gateway_result{200, "{}"};
    return f;
  }

  /// Task messages waiting in the outbox (state-change events are counted by the lifecycle
  /// tests).
  size_t outbox_size() {
    auto txn = env_->begin_read();
    size_t n = 0;
    for (const auto& r : read_outbox(txn, 0, 1000))
      n += std::holds_alternative<task_message>(r.what);
    return n;
  }

  std::vector<event_record> events(const std::string& id) {
    auto txn = env_->begin_read();
    return read_events(txn, id, 0);
  }

  std::vector<job_event> event_messages() {
    auto txn = env_->begin_read();
    std::vector<job_event> out;
    for (auto& r : read_outbox(txn, 0, 1000))
      if (auto* e = std::get_if<job_event>(&r.what)) out.push_back(std::move(*e));
    return out;
  }

  std::vector<webhook_record> webhooks() {
    auto txn = env_->begin_read();
    return read_due_webhooks(txn, INT64_MAX, 1000);
  }

  std::string task_of(const std::string& job_id) { return "task-" + job_id; }
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
  EXPECT_EQ(run(finish("task-j1", 1, "tok", attempt_end::succeeded)).what, op_reply::kind::stale);
}

TEST_F(ops_test, a_second_start_while_leased_is_busy_and_a_wrong_token_is_stale) {
  run(make_job("j1"));
  run(start("task-j1", 1, "tok"));
  EXPECT_EQ(run(start("task-j1", 1, "other")).what, op_reply::kind::busy);
  EXPECT_EQ(run(finish("task-j1", 1, "other", attempt_end::succeeded)).what, op_reply::kind::stale);
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
  const size_t before = outbox_size();
  EXPECT_TRUE(run(finish("task-j1", 1, "a", attempt_end::released)).outbox_appended);
  EXPECT_EQ(job("j1")->status, job_status::queued);
  EXPECT_EQ(job("j1")->attempts, 0);
  // Its first message was acked when the lease was taken (DESIGN rule 3): a fresh one, with a
  // new message id (republished_at), runs it again.
  EXPECT_EQ(outbox_size(), before + 1);
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

// --- issue 3: events, cancel, deadlines, webhooks, listing index, retention

TEST_F(ops_test, every_state_change_is_an_event_and_a_nats_message) {
  run(make_job("j1"));
  run(start(task_of("j1"), 1, "tok"));
  run(finish(task_of("j1"), 1, "tok", attempt_end::retry, 2000));
  run(start(task_of("j1"), 2, "tok2", 3000));
  run(finish(task_of("j1"), 2, "tok2", attempt_end::succeeded, 4000));
  auto ev = events("j1");
  ASSERT_EQ(ev.size(), 5u);
  std::vector<job_status> states;
  for (const auto& e : ev) states.push_back(e.state);
  EXPECT_EQ(states, (std::vector<job_status>{job_status::queued, job_status::in_progress,
                                             job_status::queued, job_status::in_progress,
                                             job_status::completed}));
  EXPECT_FALSE(ev[0].previous.has_value());
  EXPECT_EQ(ev[2].previous, job_status::in_progress);
  ASSERT_TRUE(ev[2].error.has_value());  // the re-queue says why
  EXPECT_EQ(ev[2].error->code, "gateway_error");
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].seq, i + 1);
  EXPECT_EQ(job("j1")->event_seq, 5u);
  auto msgs = event_messages();
  ASSERT_EQ(msgs.size(), 5u);
  EXPECT_EQ(msgs.back().event, ev.back());
  ASSERT_TRUE(msgs.back().result.has_value());
  EXPECT_EQ(msgs.back().result->status_code, 200);
  // Reading events after a sequence number gives only the later ones.
  auto txn = env_->begin_read();
  EXPECT_EQ(read_events(txn, "j1", 3).size(), 2u);
  EXPECT_TRUE(read_events(txn, "j1", 5).empty());
}

TEST_F(ops_test, nats_events_terminal_publishes_only_the_last_state_and_none_nothing) {
  policy_.events = store_policy::nats_events::terminal;
  run(make_job("j1"));
  run(start(task_of("j1"), 1, "tok"));
  run(finish(task_of("j1"), 1, "tok", attempt_end::retry, 2000));
  run(start(task_of("j1"), 2, "tok2", 3000));
  run(finish(task_of("j1"), 2, "tok2", attempt_end::succeeded, 4000));
  EXPECT_EQ(events("j1").size(), 5u);  // every change is still stored (SSE, webhooks)
  auto msgs = event_messages();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].event.state, job_status::completed);
  EXPECT_EQ(msgs[0].event.seq, 5u);

  policy_.events = store_policy::nats_events::none;
  const size_t tasks_before = outbox_size();
  run(make_job("j2"));
  run(start(task_of("j2"), 1, "tok"));
  run(finish(task_of("j2"), 1, "tok", attempt_end::succeeded, 2000));
  EXPECT_EQ(events("j2").size(), 3u);
  EXPECT_EQ(event_messages().size(), 1u);      // still only j1's
  EXPECT_EQ(outbox_size(), tasks_before + 1);  // the task is published whatever the setting
}

TEST_F(ops_test, webhooks_are_queued_for_transitions_only_when_the_job_has_one) {
  auto op = make_job("j1");
  op.job.webhook_url = "http://hooks.example/x";
  run(op);
  EXPECT_TRUE(webhooks().empty());  // creation is the client's own 202
  auto started = run(start(task_of("j1"), 1, "tok"));
  EXPECT_TRUE(started.webhooks_appended);
  run(finish(task_of("j1"), 1, "tok", attempt_end::succeeded));
  auto hooks = webhooks();
  ASSERT_EQ(hooks.size(), 2u);
  EXPECT_EQ(hooks[1].url, "http://hooks.example/x");
  EXPECT_TRUE(hooks[1].body.empty());  // rendered by the deliverer
  EXPECT_EQ(hooks[1].event.event.job_id, "j1");
  EXPECT_EQ(hooks[1].event.event.state, job_status::completed);
  EXPECT_EQ(hooks[1].event.event.seq, 3u);
  run(make_job("j2"));
  run(start(task_of("j2"), 1, "tok"));
  EXPECT_EQ(webhooks().size(), 2u);  // j2 has no webhook
}

TEST_F(ops_test, large_results_are_linked_not_inlined) {
  policy_.inline_result_bytes = 10;
  auto op = make_job("j1");
  op.job.webhook_url = "http://hooks.example/x";
  run(op);
  run(start(task_of("j1"), 1, "tok"));
  auto f = finish(task_of("j1"), 1, "tok", attempt_end::succeeded);
  f.response = gateway_result{200, R"({"text":"much longer than ten bytes"})"};
  run(f);
  const auto e = webhooks().back().event;
  EXPECT_FALSE(e.result.has_value());
  EXPECT_TRUE(e.result_elsewhere);
}

TEST_F(ops_test, webhook_results_retry_deliver_and_drop) {
  auto op = make_job("j1");
  op.job.webhook_url = "http://hooks.example/x";
  run(op);
  run(start(task_of("j1"), 1, "tok"));
  run(finish(task_of("j1"), 1, "tok", attempt_end::succeeded));
  auto hooks = webhooks();
  ASSERT_EQ(hooks.size(), 2u);
  webhook_result_op retry{hooks[0].seq, webhook_result_op::outcome::retry, 1, 9000, "503"};
  run(retry);
  {
    auto txn = env_->begin_read();
    EXPECT_EQ(read_due_webhooks(txn, 8999, 10).size(), 1u);  // only the other one is due
    EXPECT_EQ(get_webhook(txn, hooks[0].seq)->attempts, 1);
    EXPECT_EQ(get_webhook(txn, hooks[0].seq)->last_error, "503");
  }
  run(webhook_result_op{hooks[0].seq, webhook_result_op::outcome::dropped, 5, 0, "503"});
  run(webhook_result_op{hooks[1].seq, webhook_result_op::outcome::delivered, 1, 0, ""});
  EXPECT_TRUE(webhooks().empty());
  auto txn = env_->begin_read();
  EXPECT_EQ(get_counter(txn, "webhooks_dropped"), 1u);
  EXPECT_EQ(get_counter(txn, "webhooks_delivered"), 1u);
}

TEST_F(ops_test, cancel_a_queued_job_is_immediate_and_fences_its_message) {
  run(make_job("j1"));
  auto r = run(cancel_job_op{"t1", "j1", 1500});
  EXPECT_EQ(r.what, op_reply::kind::done);
  EXPECT_FALSE(r.abort_inflight);
  EXPECT_EQ(job("j1")->status, job_status::cancelled);
  EXPECT_EQ(job("j1")->error->code, "cancelled");
  EXPECT_EQ(run(start(task_of("j1"), 1, "tok")).what, op_reply::kind::stale);
  EXPECT_EQ(run(cancel_job_op{"t1", "j1", 1600}).what, op_reply::kind::existing);  // harmless
  EXPECT_EQ(run(cancel_job_op{"t2", "j1", 1600}).what, op_reply::kind::not_found);
  EXPECT_EQ(events("j1").back().state, job_status::cancelled);
}

TEST_F(ops_test, cancel_a_running_job_goes_through_cancelling) {
  run(make_job("j1"));
  run(start(task_of("j1"), 1, "tok"));
  auto r = run(cancel_job_op{"t1", "j1", 1500});
  EXPECT_TRUE(r.abort_inflight);
  EXPECT_EQ(r.task->id, task_of("j1"));
  EXPECT_EQ(job("j1")->status, job_status::cancelling);
  EXPECT_EQ(run(cancel_job_op{"t1", "j1", 1600}).what, op_reply::kind::existing);
  // The aborted attempt ends as a retryable failure; the job becomes cancelled, not re-queued.
  run(finish(task_of("j1"), 1, "tok", attempt_end::retry));
  EXPECT_EQ(job("j1")->status, job_status::cancelled);
  EXPECT_EQ(outbox_size(), 1u);  // no second task message
}

TEST_F(ops_test, an_answer_that_beats_the_cancel_is_kept) {
  run(make_job("j1"));
  run(start(task_of("j1"), 1, "tok"));
  run(cancel_job_op{"t1", "j1", 1500});
  run(finish(task_of("j1"), 1, "tok", attempt_end::succeeded));
  EXPECT_EQ(job("j1")->status, job_status::completed);
}

TEST_F(ops_test, cancel_a_finished_job_conflicts) {
  run(make_job("j1"));
  run(start(task_of("j1"), 1, "tok"));
  run(finish(task_of("j1"), 1, "tok", attempt_end::succeeded));
  auto r = run(cancel_job_op{"t1", "j1", 3000});
  EXPECT_EQ(r.what, op_reply::kind::conflict);
  EXPECT_EQ(job("j1")->status, job_status::completed);
}

TEST_F(ops_test, deadline_expires_a_queued_job_and_removes_its_index_entry) {
  auto op = make_job("j1");
  op.job.created_at_ms = 1000;
  op.job.deadline_ms = 6000;
  run(op);
  EXPECT_EQ(count(db::deadlines), 1u);
  {
    auto txn = env_->begin_read();
    EXPECT_TRUE(read_due(txn, db::deadlines, 5999, 10).empty());
    ASSERT_EQ(read_due(txn, db::deadlines, 6000, 10).size(), 1u);
  }
  EXPECT_EQ(run(expire_job_op{"j1", 6000, 5000}).what, op_reply::kind::not_yet);
  auto r = run(expire_job_op{"j1", 6000, 6000});
  EXPECT_EQ(r.what, op_reply::kind::done);
  EXPECT_EQ(job("j1")->status, job_status::expired);
  EXPECT_EQ(job("j1")->error->code, "deadline_exceeded");
  EXPECT_NE(job("j1")->error->message.find("timeout of 5 s"), std::string::npos);
  EXPECT_EQ(count(db::deadlines), 0u);
  EXPECT_EQ(run(expire_job_op{"j1", 6000, 7000}).what, op_reply::kind::stale);
}

TEST_F(ops_test, deadline_expires_a_running_job_and_fences_the_attempt) {
  auto op = make_job("j1");
  op.job.deadline_ms = 5000;
  run(op);
  run(start(task_of("j1"), 1, "tok", 1000));
  auto r = run(expire_job_op{"j1", 5000, 5000});
  EXPECT_TRUE(r.abort_inflight);
  EXPECT_EQ(job("j1")->status, job_status::expired);
  EXPECT_EQ(run(finish(task_of("j1"), 1, "tok", attempt_end::succeeded, 5100)).what,
            op_reply::kind::stale);
  EXPECT_EQ(job("j1")->status, job_status::expired);
}

TEST_F(ops_test, an_attempt_failing_after_the_deadline_expires_the_job) {
  auto op = make_job("j1");
  op.job.deadline_ms = 5000;
  run(op);
  run(start(task_of("j1"), 1, "tok", 1000));
  run(finish(task_of("j1"), 1, "tok", attempt_end::retry, 5000));
  EXPECT_EQ(job("j1")->status, job_status::expired);
  EXPECT_NE(job("j1")->error->message.find("boom"), std::string::npos);  // the last error
  EXPECT_EQ(count(db::deadlines), 0u);
}

TEST_F(ops_test, a_start_after_the_deadline_expires_instead) {
  auto op = make_job("j1");
  op.job.deadline_ms = 5000;
  run(op);
  auto r = run(start(task_of("j1"), 1, "tok", 5000));
  EXPECT_EQ(r.what, op_reply::kind::stale);
  EXPECT_EQ(job("j1")->status, job_status::expired);
}

TEST_F(ops_test, retention_deletes_everything_of_a_due_job_and_nothing_else) {
  policy_.retention_completed_ms = 10'000;
  policy_.retention_failed_ms = 50'000;
  run(make_job("j1", "key-1"));
  run(start(task_of("j1"), 1, "tok"));
  run(finish(task_of("j1"), 1, "tok", attempt_end::succeeded, 2000));
  run(make_job("j2"));
  run(start(task_of("j2"), 1, "tok"));
  run(finish(task_of("j2"), 1, "tok", attempt_end::rejected, 2000));
  run(make_job("j3"));  // still queued: never due
  std::vector<std::pair<int64_t, std::string>> due;
  {
    auto txn = env_->begin_read();
    EXPECT_TRUE(read_due(txn, db::retention, 11'999, 10).empty());
    due = read_due(txn, db::retention, 12'000, 10);
  }
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].second, "j1");
  auto r = run(purge_jobs_op{due});
  EXPECT_EQ(r.purged, 1u);
  EXPECT_FALSE(job("j1").has_value());
  EXPECT_TRUE(events("j1").empty());
  {
    auto txn = env_->begin_read();
    EXPECT_FALSE(get_task(txn, task_of("j1")).has_value());
    EXPECT_FALSE(get_idempotency(txn, "t1", "key-1").has_value());
    EXPECT_FALSE(txn.get(db::job_index, job_index_key("t1", "j1")).has_value());
    EXPECT_TRUE(read_due(txn, db::retention, 12'000, 10).empty());
    ASSERT_EQ(read_due(txn, db::retention, 52'000, 10).size(), 1u);  // j2 after 50 s
  }
  EXPECT_TRUE(job("j2").has_value());
  EXPECT_TRUE(job("j3").has_value());
  // The idempotency key is free again: a new submission makes a new job.
  EXPECT_EQ(run(make_job("j4", "key-1")).what, op_reply::kind::done);
}

TEST_F(ops_test, retain_inputs_false_drops_the_body_when_the_job_ends) {
  policy_.retain_inputs = false;
  auto op = make_job("j1");
  op.job.body = R"({"model":"m","messages":[]})";
  run(op);
  run(start(task_of("j1"), 1, "tok"));
  EXPECT_FALSE(job("j1")->body.empty());  // still needed while it may run again
  run(finish(task_of("j1"), 1, "tok", attempt_end::succeeded));
  EXPECT_TRUE(job("j1")->body.empty());
  EXPECT_TRUE(job("j1")->input_dropped);
  EXPECT_TRUE(job("j1")->result.has_value());
}

TEST_F(ops_test, the_queued_index_holds_exactly_the_queued_tasks) {
  auto queued = [&](const std::string& job_id) {
    auto txn = env_->begin_read();
    return txn.get(db::queued, task_of(job_id)).has_value();
  };
  run(make_job("j1"));
  EXPECT_TRUE(queued("j1"));
  run(start(task_of("j1"), 1, "tok"));
  EXPECT_FALSE(queued("j1"));
  run(finish(task_of("j1"), 1, "tok", attempt_end::retry));
  EXPECT_TRUE(queued("j1"));
  run(start(task_of("j1"), 2, "tok2", 3000));
  run(finish(task_of("j1"), 2, "tok2", attempt_end::released, 3500));
  EXPECT_TRUE(queued("j1"));
  run(start(task_of("j1"), 2, "tok3", 4000));
  run(finish(task_of("j1"), 2, "tok3", attempt_end::succeeded, 4500));
  EXPECT_FALSE(queued("j1"));
  run(make_job("j2"));
  run(cancel_job_op{"t1", "j2", 100});
  EXPECT_FALSE(queued("j2"));
  EXPECT_EQ(count(db::queued), 0u);
}

TEST_F(ops_test, the_listing_index_follows_the_status) {
  run(make_job("j1"));
  run(start(task_of("j1"), 1, "tok"));
  auto txn = env_->begin_read();
  EXPECT_EQ(txn.get(db::job_index, job_index_key("t1", "j1")), "in_progress");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
