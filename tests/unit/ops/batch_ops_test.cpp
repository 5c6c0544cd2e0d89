// The Files and Batch API operations as the storage writer commits them: first result per line
// wins and counts move only then, cancel transitions, stop codes and the terminal status
// finalization chooses, listing order.

#include <gtest/gtest.h>

#include "storage/batch_ops.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/ops.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::storage {
namespace SY_UNITY_ID {

class batch_ops_test : public ::testing::Test {
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

  file_record file(const std::string& id, const std::string& tenant = "t1") {
    file_record f;
    f.id = id;
    f.tenant = tenant;
    f.filename = "in.jsonl";
    f.purpose = "batch";
    f.bytes = 10;
    f.created_at = 100;
    return f;
  }

  batch_record make_batch(const std::string& id, const std::string& file_id) {
    batch_record b;
    b.id = id;
    b.tenant = "t1";
    b.endpoint = "/v1/chat/completions";
    b.input_file_id = file_id;
    b.completion_window = "24h";
    b.created_at = 100;
    return b;
  }

  batch_record stored(const std::string& id) {
    auto txn = env_->begin_read();
    return *get_batch(txn, id);
  }

  batch_line out(uint64_t offset, const std::string& text = "{}") {
    return batch_line{offset, true, text, token_usage{3, 2, 5, 0, 0}, {}};
  }
  batch_line err(uint64_t offset) { return batch_line{offset, false, "{\"e\":1}", {}, {}}; }

  test::temp_dir dir_;
  std::unique_ptr<environment> env_;
};

TEST_F(batch_ops_test, a_batch_needs_its_input_file_of_the_same_tenant) {
  EXPECT_EQ(run(create_batch_op{make_batch("batch_1", "file-x")}).what, op_reply::kind::not_found);
  run(create_file_op{file("file-x", "t2")});
  EXPECT_EQ(run(create_batch_op{make_batch("batch_1", "file-x")}).what, op_reply::kind::not_found);
  run(create_file_op{file("file-y")});
  auto r = run(create_batch_op{make_batch("batch_1", "file-y")});
  EXPECT_EQ(r.what, op_reply::kind::done);
  auto txn = env_->begin_read();
  EXPECT_EQ(active_batches(txn), std::vector<std::string>{"batch_1"});
}

TEST_F(batch_ops_test, the_first_result_of_a_line_wins_and_counts_move_once) {
  run(create_file_op{file("file-1")});
  run(create_batch_op{make_batch("batch_1", "file-1")});
  run(batch_ingested_op{"batch_1", 3, {}, 5000});
  EXPECT_EQ(stored("batch_1").status, batch_status::in_progress);
  EXPECT_EQ(stored("batch_1").in_progress_at, 5);
  auto r = run(batch_lines_op{"batch_1", {out(0, "first"), err(10)}});
  EXPECT_EQ(r.lines_added, 2u);
  // A redelivered result for line 0 and a duplicate in the same op change nothing.
  r = run(batch_lines_op{"batch_1", {err(0), out(20), out(20, "again")}});
  EXPECT_EQ(r.lines_added, 1u);
  auto b = stored("batch_1");
  EXPECT_EQ(b.completed, 2);
  EXPECT_EQ(b.failed, 1);
  EXPECT_EQ(b.usage, (token_usage{6, 4, 10, 0, 0}));
  std::vector<std::pair<uint64_t, std::string>> lines;
  auto txn = env_->begin_read();
  scan_batch_lines(txn, "batch_1", [&](uint64_t off, bool ok, std::string_view text) {
    lines.emplace_back(off, std::string(ok ? "o:" : "e:") + std::string(text));
    return true;
  });
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], (std::pair<uint64_t, std::string>{0, "o:first"}));
  EXPECT_EQ(lines[1].first, 10u);
  EXPECT_EQ(lines[2], (std::pair<uint64_t, std::string>{20, "o:{}"}));
  EXPECT_TRUE(has_batch_line(txn, "batch_1", 10));
  EXPECT_FALSE(has_batch_line(txn, "batch_1", 11));
}

TEST_F(batch_ops_test, a_dead_line_appends_its_dead_letter_only_when_the_line_is_recorded) {
  run(create_file_op{file("file-1")});
  run(create_batch_op{make_batch("batch_1", "file-1")});
  run(batch_ingested_op{"batch_1", 3, {}, 5000});
  auto dead = err(7);
  dead.dead =
      dead_letter{"batch_1", 1, "batch_req_7", "c7", "m1", 2, {"gateway_error", "500"}, 6000};
  auto r = run(batch_lines_op{"batch_1", {out(0), dead}});
  EXPECT_EQ(r.lines_added, 2u);
  EXPECT_TRUE(r.outbox_appended);
  // The line again (a window run twice across a restart): the first result won, no second letter.
  r = run(batch_lines_op{"batch_1", {dead, err(9)}});
  EXPECT_EQ(r.lines_added, 1u);
  EXPECT_FALSE(r.outbox_appended);
  auto txn = env_->begin_read();
  std::vector<dead_letter> letters;  // beside the batch's job events
  for (auto& o : read_outbox(txn, 0, 10))
    if (auto* d = std::get_if<dead_letter>(&o.what)) letters.push_back(*d);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0], *dead.dead);
  EXPECT_EQ(stored("batch_1").failed, 2);
}

TEST_F(batch_ops_test, validation_errors_fail_the_batch) {
  run(create_file_op{file("file-1")});
  run(create_batch_op{make_batch("batch_1", "file-1")});
  run(batch_ingested_op{"batch_1", 2, {batch_error{"invalid_url", "bad", "url", 2}}, 7000});
  auto b = stored("batch_1");
  EXPECT_EQ(b.status, batch_status::failed);
  EXPECT_EQ(b.failed_at, 7);
  // No request was accepted: request_counts are all 0, as OpenAI shows them.
  EXPECT_EQ(b.total, 0);
  EXPECT_EQ(b.completed, 0);
  EXPECT_EQ(b.failed, 0);
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_EQ(b.errors[0].line, 2);
  auto txn = env_->begin_read();
  EXPECT_TRUE(active_batches(txn).empty());
}

TEST_F(batch_ops_test, cancel_moves_to_cancelling_and_finish_makes_it_cancelled) {
  run(create_file_op{file("file-1")});
  run(create_batch_op{make_batch("batch_1", "file-1")});
  run(batch_ingested_op{"batch_1", 2, {}, 1000});
  auto c = run(cancel_batch_op{"t1", "batch_1", 2000});
  EXPECT_EQ(c.batch->status, batch_status::cancelling);
  EXPECT_EQ(c.batch->stop_code, "batch_cancelled");
  EXPECT_EQ(run(cancel_batch_op{"t2", "batch_1", 2000}).what, op_reply::kind::not_found);
  // An expiry after the cancel does not change why it stopped.
  EXPECT_EQ(run(stop_batch_op{"batch_1", "batch_expired", "", 2500}).what, op_reply::kind::stale);
  auto out_file = file("file-out");
  out_file.purpose = "batch_output";
  run(batch_lines_op{"batch_1", {out(0), err(5)}});
  auto f = run(batch_finish_op{"batch_1", out_file, std::nullopt, 3000, std::nullopt});
  EXPECT_EQ(f.batch->status, batch_status::cancelled);
  EXPECT_EQ(f.batch->cancelled_at, 3);
  EXPECT_EQ(f.batch->output_file_id, "file-out");
  EXPECT_TRUE(f.batch->error_file_id.empty());
  // Terminal: results are dropped from the store, later ones are stale, cancel is idempotent.
  auto txn = env_->begin_read();
  EXPECT_FALSE(has_batch_line(txn, "batch_1", 0));
  EXPECT_TRUE(get_file(txn, "file-out").has_value());
  EXPECT_EQ(run(batch_lines_op{"batch_1", {out(9)}}).what, op_reply::kind::stale);
  EXPECT_EQ(run(cancel_batch_op{"t1", "batch_1", 4000}).what, op_reply::kind::done);
  EXPECT_EQ(run(batch_finish_op{"batch_1", std::nullopt, std::nullopt, 5000, std::nullopt}).what,
            op_reply::kind::stale);
}

// Finalization that gave up (a result file could not be written) fails the batch whatever its
// stop code, says why in errors.data and keeps the files it could write.
TEST_F(batch_ops_test, a_finish_with_a_failure_fails_the_batch_keeping_the_files_given) {
  run(create_file_op{file("file-1")});
  run(create_batch_op{make_batch("batch_1", "file-1")});
  run(batch_ingested_op{"batch_1", 2, {}, 1000});
  run(batch_lines_op{"batch_1", {out(0), err(5)}});
  run(cancel_batch_op{"t1", "batch_1", 2000});
  auto out_file = file("file-out");
  out_file.purpose = "batch_output";
  batch_error why{"batch_failed", "cannot write the error file", "", 0};
  auto f = run(batch_finish_op{"batch_1", out_file, std::nullopt, 3000, why});
  EXPECT_EQ(f.batch->status, batch_status::failed);
  EXPECT_EQ(f.batch->failed_at, 3);
  EXPECT_EQ(f.batch->stop_code, "batch_failed");
  ASSERT_EQ(f.batch->errors.size(), 1u);
  EXPECT_EQ(f.batch->errors[0].code, "batch_failed");
  EXPECT_EQ(f.batch->errors[0].message, "cannot write the error file");
  EXPECT_EQ(f.batch->output_file_id, "file-out");
  EXPECT_TRUE(f.batch->error_file_id.empty());
  EXPECT_EQ(f.batch->completed, 1);
  EXPECT_EQ(f.batch->failed, 1);
  auto txn = env_->begin_read();
  EXPECT_TRUE(get_file(txn, "file-out").has_value());
  EXPECT_FALSE(has_batch_line(txn, "batch_1", 0));
  EXPECT_TRUE(active_batches(txn).empty());
}

TEST_F(batch_ops_test, finished_batches_are_not_cancellable) {
  run(create_file_op{file("file-1")});
  for (const auto& [id, code] : std::vector<std::pair<std::string, std::string>>{
           {"batch_c", ""}, {"batch_e", "batch_expired"}, {"batch_f", "batch_failed"}}) {
    run(create_batch_op{make_batch(id, "file-1")});
    run(batch_ingested_op{id, 1, {}, 1000});
    if (!code.empty())
      run(stop_batch_op{id, code, code == "batch_failed" ? "disk gone" : "", 1500});
    if (code.empty()) run(batch_finalizing_op{id, 1800});
    auto f = run(batch_finish_op{id, std::nullopt, std::nullopt, 2000, std::nullopt});
    auto want = code.empty()              ? batch_status::completed
                : code == "batch_expired" ? batch_status::expired
                                          : batch_status::failed;
    EXPECT_EQ(f.batch->status, want) << id;
    EXPECT_EQ(run(cancel_batch_op{"t1", id, 3000}).what, op_reply::kind::conflict) << id;
  }
  EXPECT_EQ(stored("batch_c").finalizing_at, 1);
  EXPECT_EQ(stored("batch_f").errors.at(0).message, "disk gone");
}

// A rerun (docs/batches.md, "Rerun"): refused unless the batch finished with an error file and
// its files are still there; then in_progress again with its window restarted, the previous files
// kept until the new end replaces them and rebuilds the counts from the new files.
TEST_F(batch_ops_test, a_rerun_runs_a_finished_batch_again_and_its_end_replaces_the_files) {
  run(create_file_op{file("file-1")});
  auto b = make_batch("batch_1", "file-1");
  b.webhook_url = "https://example.com/hook";
  b.deadline_ms = 86'500'000;
  run(create_batch_op{b});
  auto refused = [&](const rerun_batch_op& op) {
    auto r = run(op);
    EXPECT_EQ(r.what, op_reply::kind::refused);
    return r.refusal && r.refusal->code == errc::job_not_rerunnable;
  };
  const rerun_batch_op rerun{"t1", "batch_1", 10'000, 3'600'000};
  EXPECT_TRUE(refused(rerun)) << "validating";
  EXPECT_EQ(run(rerun_batch_op{"t2", "batch_1", 10'000, 1}).what, op_reply::kind::not_found);
  run(batch_ingested_op{"batch_1", 3, {}, 1000});
  run(batch_lines_op{"batch_1", {out(0), err(1), err(2)}});
  EXPECT_TRUE(refused(rerun)) << "in progress";
  run(batch_finalizing_op{"batch_1", 1800});
  auto out_file = file("file-out"), err_file = file("file-err");
  out_file.purpose = err_file.purpose = "batch_output";
  auto f = run(batch_finish_op{"batch_1", out_file, err_file, 2000, std::nullopt});
  EXPECT_TRUE(f.webhooks_appended);
  run(create_file_op{file("file-gone")});
  auto r = run(rerun);
  ASSERT_EQ(r.what, op_reply::kind::done);
  EXPECT_EQ(r.batch->status, batch_status::in_progress);
  EXPECT_EQ(r.batch->run, 2);
  EXPECT_EQ(r.batch->in_progress_at, 10);
  EXPECT_EQ(r.batch->completed_at, 0);
  EXPECT_EQ(r.batch->finalizing_at, 0);
  EXPECT_EQ(r.batch->deadline_ms, 3'610'000);
  EXPECT_EQ(r.batch->expires_at, 3'610);
  EXPECT_EQ(r.batch->completed, 1);
  EXPECT_EQ(r.batch->failed, 0);
  EXPECT_EQ(r.batch->output_file_id, "file-out");
  EXPECT_EQ(r.batch->error_file_id, "file-err");
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(r.changes[0].to, "in_progress");
  EXPECT_EQ(job_of(*r.batch).run, 2);
  EXPECT_EQ(job_of(*r.batch).status, job_status::in_progress);
  EXPECT_EQ(batch_from_json(to_json(*r.batch)).run, 2);
  {
    auto txn = env_->begin_read();
    EXPECT_EQ(active_batches(txn), std::vector<std::string>{"batch_1"});
  }
  // This run's end: new files replace the old, the counts are their lines.
  run(batch_lines_op{"batch_1", {out(0), out(1)}});
  run(batch_finalizing_op{"batch_1", 11'000});
  auto new_out = file("file-out2");
  new_out.purpose = "batch_output";
  auto op = batch_finish_op{"batch_1", new_out, std::nullopt, 12'000, std::nullopt};
  op.completed = 3;
  op.failed = 0;
  auto end = run(op);
  EXPECT_EQ(end.batch->status, batch_status::completed);
  EXPECT_EQ(end.batch->finalizing_at, 11);
  EXPECT_EQ(end.batch->output_file_id, "file-out2");
  EXPECT_TRUE(end.batch->error_file_id.empty());
  EXPECT_EQ(end.batch->completed, 3);
  EXPECT_EQ(end.batch->failed, 0);
  EXPECT_TRUE(end.webhooks_appended) << "a rerun's end is a new event";
  {
    auto txn = env_->begin_read();
    EXPECT_TRUE(get_file(txn, "file-out").has_value());
    EXPECT_TRUE(get_file(txn, "file-err").has_value());
    EXPECT_TRUE(active_batches(txn).empty());
  }
  // Nothing failed: nothing to rerun.
  EXPECT_TRUE(refused(rerun));
}

TEST_F(batch_ops_test, a_rerun_needs_its_input_and_result_files_and_accepted_lines) {
  run(create_file_op{file("file-1")});
  run(create_batch_op{make_batch("batch_v", "file-1")});
  run(batch_ingested_op{"batch_v", 0, {batch_error{"empty_file", "no requests", "", 0}}, 1000});
  EXPECT_EQ(run(rerun_batch_op{"t1", "batch_v", 2000, 1}).what, op_reply::kind::refused)
      << "failed validation";
  run(create_batch_op{make_batch("batch_1", "file-1")});
  run(batch_ingested_op{"batch_1", 1, {}, 1000});
  run(batch_lines_op{"batch_1", {err(0)}});
  auto err_file = file("file-err");
  run(batch_finish_op{"batch_1", std::nullopt, err_file, 2000, std::nullopt});
  run(delete_file_op{"t1", "file-1"});
  auto r = run(rerun_batch_op{"t1", "batch_1", 3000, 1});
  EXPECT_EQ(r.what, op_reply::kind::refused);
  ASSERT_TRUE(r.refusal);
  EXPECT_NE(r.refusal->message.find("input file file-1 was deleted"), std::string::npos)
      << r.refusal->message;
  EXPECT_EQ(stored("batch_1").status, batch_status::completed);
}

TEST_F(batch_ops_test, listing_is_per_tenant_newest_first_with_a_cursor) {
  run(create_file_op{file("file-1")});
  run(create_file_op{file("file-2")});
  run(create_file_op{file("file-3", "t2")});
  for (auto id : {"batch_1", "batch_2", "batch_3"}) run(create_batch_op{make_batch(id, "file-1")});
  auto txn = env_->begin_read();
  bool more = false;
  auto page = list_batches(txn, "t1", "", 2, more);
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].id, "batch_3");
  EXPECT_TRUE(more);
  page = list_batches(txn, "t1", "batch_2", 10, more);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].id, "batch_1");
  EXPECT_FALSE(more);
  auto files = list_files(txn, "t1", "", false, "", 10, more);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].id, "file-2");
  files = list_files(txn, "t1", "", true, "", 10, more);
  EXPECT_EQ(files[0].id, "file-1");
  files = list_files(txn, "t1", "", true, "file-1", 10, more);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].id, "file-2");
  EXPECT_TRUE(list_files(txn, "t1", "fine-tune", false, "", 10, more).empty());
  EXPECT_TRUE(list_batches(txn, "t3", "", 10, more).empty());
}

TEST_F(batch_ops_test, deleting_a_file_checks_the_tenant_and_expiry_lists_due_files) {
  auto f = file("file-1");
  f.expires_at = 500;
  run(create_file_op{f});
  EXPECT_EQ(run(delete_file_op{"t2", "file-1"}).what, op_reply::kind::not_found);
  {
    auto txn = env_->begin_read();
    EXPECT_TRUE(expired_files(txn, 499, 10).empty());
    EXPECT_EQ(expired_files(txn, 500, 10), std::vector<std::string>{"file-1"});
  }
  auto d = run(delete_file_op{"", "file-1"});
  ASSERT_TRUE(d.file.has_value());
  auto txn = env_->begin_read();
  EXPECT_FALSE(get_file(txn, "file-1").has_value());
  EXPECT_TRUE(expired_files(txn, 1000, 10).empty());
}

// A batch's usage is stored as five numbers; a store before kept OpenAI's usage object.
TEST(token_usage, a_batch_keeps_its_usage_and_reads_the_object_older_stores_wrote) {
  batch_record b;
  b.usage = token_usage{12, 5, 18, 1, 4};
  EXPECT_EQ(batch_from_json(to_json(b)).usage, b.usage);
  const auto old = batch_from_json({{"us",
                                     {{"input_tokens", 12},
                                      {"output_tokens", 5},
                                      {"total_tokens", 18},
                                      {"input_tokens_details", {{"cached_tokens", 1}}},
                                      {"output_tokens_details", {{"reasoning_tokens", 4}}}}}});
  EXPECT_EQ(old.usage, b.usage);
}

// A batch's max_attempts is stored under "ma"; a record from before it reads as the default.
TEST(batch_record, max_attempts_round_trips_and_an_older_record_reads_the_default) {
  batch_record b;
  b.max_attempts = 7;
  EXPECT_EQ(batch_from_json(to_json(b)).max_attempts, 7);
  EXPECT_EQ(batch_from_json({{"id", "batch_old"}}).max_attempts, 3);
}

// DELETE of a batch: refused until it has finished; then its record, listing entry, events
// and any result line go in one transaction, its files stay, and a second delete finds nothing.
TEST_F(batch_ops_test, a_finished_batch_is_deleted_with_its_events_but_not_its_files) {
  run(create_file_op{file("file-1")});
  run(create_batch_op{make_batch("batch_1", "file-1")});
  run(batch_ingested_op{"batch_1", 2, {}, 1000});
  run(batch_lines_op{"batch_1", {out(0), err(1)}});
  auto refused = run(delete_batch_op{"t1", "batch_1"});
  EXPECT_EQ(refused.what, op_reply::kind::refused);
  ASSERT_TRUE(refused.refusal);
  EXPECT_EQ(refused.refusal->code, errc::job_not_deletable);
  EXPECT_EQ(stored("batch_1").status, batch_status::in_progress) << "nothing changed";
  EXPECT_EQ(run(delete_batch_op{"t2", "batch_1"}).what, op_reply::kind::not_found);
  auto out_file = file("file-out");
  out_file.purpose = "batch_output";
  run(batch_finish_op{"batch_1", out_file, std::nullopt, 2000, std::nullopt});
  {
    auto txn = env_->begin_read();
    EXPECT_FALSE(read_events(txn, "batch_1", 0, 100).empty());
  }
  auto r = run(delete_batch_op{"t1", "batch_1"});
  ASSERT_EQ(r.what, op_reply::kind::done);
  EXPECT_EQ(r.batch->id, "batch_1");
  EXPECT_EQ(r.batch->status, batch_status::completed);
  {
    auto txn = env_->begin_read();
    EXPECT_FALSE(get_batch(txn, "batch_1"));
    EXPECT_TRUE(read_events(txn, "batch_1", 0, 100).empty());
    EXPECT_FALSE(has_batch_line(txn, "batch_1", 0));
    bool more = true;
    EXPECT_TRUE(list_batches(txn, "t1", "", 10, more).empty());
    EXPECT_TRUE(get_file(txn, "file-1")) << "its input stays";
    EXPECT_TRUE(get_file(txn, "file-out")) << "its output stays";
  }
  EXPECT_EQ(run(delete_batch_op{"t1", "batch_1"}).what, op_reply::kind::not_found);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
