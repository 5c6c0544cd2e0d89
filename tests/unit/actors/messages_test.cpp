// The actors' messages are values (the storage writer's, the model dispatcher's, a job actor's, a
// batch's actor's, the budgets'):
// each round-trips through CAF's binary serializer unchanged. Every field of every value below
// differs from its default, so an `inspect` overload that forgets a field fails the comparison (the
// defaulted operator== compares all). Also: the write_tickets table, which lets a write_call carry
// a ticket instead of a callback.

#include <utility>  // before any Asio header (Boost 1.74)

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deep_to_string.hpp>

#include "actors/batch_actor.hpp"
#include "actors/detail/write_tickets.hpp"
#include "actors/dispatcher_directory.hpp"
#include "actors/global_budget.hpp"
#include "actors/job_registry.hpp"
#include "actors/model_dispatcher.hpp"
#include "actors/slots.hpp"
#include "actors/storage_writer.hpp"
#include "actors/write.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

namespace asio = boost::asio;
namespace st = storage;

st::gateway_result gateway() { return {429, R"({"error":"slow down"})"}; }

st::job_record job() {
  st::job_record j;
  j.id = "job_01";
  j.tenant = "acme";
  j.endpoint = "/v1/chat/completions";
  j.model = "m1";
  j.body = R"({"model":"m1"})";
  j.metadata = {{"k", "v"}};
  j.idempotency_key = "idem";
  j.request_hash = "abc123";
  j.task_id = "job_01-0";
  j.max_attempts = 5;
  j.attempts = 2;
  j.status = st::job_status::cancelling;
  j.created_at_ms = 11;
  j.started_at_ms = 12;
  j.finished_at_ms = 13;
  j.updated_at_ms = 14;
  j.result = gateway();
  j.error = st::job_error{"boom", "it broke"};
  j.webhook_url = "https://example.test/hook";
  j.deadline_ms = 15;
  j.event_seq = 16;
  j.input_dropped = true;
  return j;
}

st::task_record task() {
  st::task_record t;
  t.id = "job_01-0";
  t.job_id = "job_01";
  t.tenant = "acme";
  t.model = "m1";
  t.index = 3;
  t.attempt = 4;
  t.max_attempts = 6;
  t.state = st::task_state::leased;
  t.not_before_ms = 21;
  t.queued_at_ms = 22;
  t.last_error = "timeout";
  return t;
}

st::file_record file(const std::string& id) {
  return {id, "acme", "in.jsonl", "batch", 1234, 31, 32};
}

st::batch_error batch_error(const std::string& code) { return {code, "bad line", "body", 7}; }

/// A task-list job and one of its tasks, with every field of schema 4 set.
st::job_record list_job() {
  st::job_record j = job();
  j.body.clear();
  j.task_id.clear();
  j.task_list = true;
  j.counts = st::task_counts{10, 1, 2, 3, 4, 0};
  j.ingested = 10;
  j.next_publish = 7;
  j.live = 3;
  j.window = 4;
  j.ingest_path = "/data/task-lists/job_01.jsonl";
  j.ingest_offset = 4096;
  j.errors = {batch_error("invalid_json_line")};
  j.run = 3;
  return j;
}

st::task_record list_task(int index) {
  st::task_record t = task();
  t.id = st::list_task_id("job_01", index);
  t.index = index;
  t.custom_id = "row-" + std::to_string(index);
  t.body = R"({"model":"m1","n":1})";
  t.status = st::job_status::failed;
  t.result = gateway();
  t.error = st::job_error{"gateway_rejected", "no"};
  t.started_at_ms = 23;
  t.finished_at_ms = 24;
  return t;
}

st::batch_record batch() {
  st::batch_record b;
  b.id = "batch_01";
  b.tenant = "acme";
  b.endpoint = "/v1/embeddings";
  b.input_file_id = "file-in";
  b.completion_window = "24h";
  b.status = st::batch_status::finalizing;
  b.output_file_id = "file-out";
  b.error_file_id = "file-err";
  b.created_at = 41;
  b.in_progress_at = 42;
  b.expires_at = 43;
  b.finalizing_at = 44;
  b.completed_at = 45;
  b.failed_at = 46;
  b.expired_at = 47;
  b.cancelling_at = 48;
  b.cancelled_at = 49;
  b.deadline_ms = 50;
  b.total = 51;
  b.completed = 52;
  b.failed = 53;
  b.errors = {batch_error("e1"), batch_error("e2")};
  b.usage = st::token_usage{9, 8, 17, 1, 2};
  b.metadata = {{"team", "x"}};
  b.output_expires_after = 54;
  b.stop_code = "batch_failed";
  b.run = 3;
  return b;
}

st::create_job_op create_job() { return {job(), task()}; }

st::finish_attempt_op finish_attempt() {
  st::finish_attempt_op op;
  op.task_id = "job_01-0";
  op.attempt = 2;
  op.token = "tok";
  op.end = st::attempt_end::retry;
  op.response = gateway();
  op.error_code = "rate_limited";
  op.error_message = "429";
  op.backoff_ms = 71;
  op.now_ms = 72;
  return op;
}

st::batch_lines_op batch_lines() {
  st::batch_lines_op op;
  op.id = "batch_01";
  op.lines = {{5, true, R"({"id":"r1"})", st::token_usage{1, 2, 3, 4, 5}, std::nullopt},
              {6, false, R"({"id":"r2"})", std::nullopt,
               st::dead_letter{"batch_01", 1, "batch_req_2", "c6", "m", 3,
                               st::job_error{"gateway_unreachable", "refused"}, 9}}};
  return op;
}

/// One of each alternative, in the variant's order (checked below).
std::vector<st::write_op> every_op() {
  return {
      create_job(),
      st::create_list_op{list_job(), {list_task(0), list_task(1)}, false},
      st::ingest_chunk_op{"job_01", 7, {list_task(7)}, 4096, 77},
      st::latch_list_op{"job_01", 8, 78},
      st::ingest_failed_op{"job_01",
                           st::job_error{"invalid_task_file", "bad"},
                           {batch_error("invalid_json_line")},
                           79},
      st::append_tasks_op{"acme", "job_01", "key", "hash", {list_task(8)}, true, 100, 80},
      st::start_attempt_op{"job_01-0", 2, "tok", "node-a", 81, 82},
      st::extend_lease_op{"job_01-0", 2, "tok", 83},
      finish_attempt(),
      st::republish_op{"job_01-0", 2, 84},
      st::outbox_ack_op{{1, 2, 3}},
      st::cancel_job_op{"acme", "job_01", 85},
      st::expire_job_op{"job_01", 86, 87},
      st::purge_jobs_op{{{88, "job_01"}, {89, "job_02"}}},
      st::delete_job_op{"acme", "job_01", 98},
      st::rerun_list_op{"acme", "job_01", 99},
      st::webhook_result_op{90, st::webhook_result_op::outcome::retry, 3, 91, "refused"},
      st::create_file_op{file("file-1")},
      st::delete_file_op{"acme", "file-1"},
      st::create_batch_op{batch()},
      st::batch_ingested_op{"batch_01", 92, {batch_error("e3")}, 93},
      batch_lines(),
      st::cancel_batch_op{"acme", "batch_01", 94},
      st::stop_batch_op{"batch_01", "batch_expired", "window passed", 95},
      st::batch_finalizing_op{"batch_01", 96},
      st::batch_finish_op{"batch_01", file("file-out"), file("file-err"), 97,
                          batch_error("finalize"), 7, 2},
      st::rerun_batch_op{"acme", "batch_01", 103, 104},
      st::delete_batch_op{"acme", "batch_01"},
  };
}

st::op_reply reply() {
  st::op_reply r;
  r.what = st::op_reply::kind::not_yet;
  r.job = job();
  r.task = task();
  r.delay_ms = 101;
  r.outbox_appended = true;
  r.webhooks_appended = true;
  r.abort_inflight = true;
  r.changed_jobs = {"job_01", "job_02"};
  r.purged = 102;
  r.file = file("file-1");
  r.batch = batch();
  r.lines_added = 103;
  r.abort_tasks = {"01-00000001", "01-00000002"};
  r.refusal = make_error(errc::job_not_open, "closed", "id");
  return r;
}

class messages : public ::testing::Test {
 protected:
  template <class T>
  std::vector<char> save(T x) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto err = sink(x);
    EXPECT_FALSE(err) << sys.render(err);
    return buf;
  }

  template <class T>
  T round_trip(const T& in) {
    auto buf = save(in);
    caf::binary_deserializer source{sys, buf};
    T out;
    auto err = source(out);
    EXPECT_FALSE(err) << sys.render(err);
    EXPECT_EQ(source.remaining(), 0u);
    return out;
  }

  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
};

TEST_F(messages, the_test_has_one_op_of_each_alternative) {
  auto ops = every_op();
  ASSERT_EQ(ops.size(), std::variant_size_v<st::write_op>);
  for (size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(ops[i].index(), i);
}

TEST_F(messages, every_write_request_round_trips) {
  for (auto& op : every_op()) {
    write_request in{op};
    auto out = round_trip(in);
    EXPECT_TRUE(out == in) << "alternative " << op.index() << ": " << caf::deep_to_string(in)
                           << "\nbecame " << caf::deep_to_string(out);
  }
}

TEST_F(messages, every_write_call_round_trips_with_its_ticket) {
  for (auto& op : every_op()) {
    write_call in{op, 0x0123456789abcdefu};
    auto out = round_trip(in);
    EXPECT_TRUE(out == in) << "alternative " << op.index();
  }
}

TEST_F(messages, a_write_reply_round_trips_with_a_reply_and_with_an_error) {
  write_reply with_reply{reply(), make_error(errc::invalid_value, "message", "param")};
  EXPECT_TRUE(round_trip(with_reply) == with_reply) << caf::deep_to_string(with_reply);
  write_reply with_error{std::nullopt, make_error(errc::storage_unavailable, "gone", "op")};
  EXPECT_TRUE(round_trip(with_error) == with_error);
  st::op_reply empty;  // the optionals of a reply that has none stay empty
  write_reply bare{empty, {}};
  EXPECT_TRUE(round_trip(bare) == bare);
}

TEST_F(messages, the_dispatchers_fetched_tasks_round_trip_with_their_deliveries) {
  runtime::delivery d;
  d.subject = "sy.tasks.m1";
  d.data = "task:job_01-0:2";
  d.reply = "$JS.ACK.SY_TASKS.tasks_m1.2.7.9.1764000000000000000.3";
  d.delivered = 2;
  d.stream_seq = 7;
  fetched_tasks in{3, {d, d}, "fetch failed"};
  in.got[1].stream_seq = 8;
  auto out = round_trip(in);
  EXPECT_EQ(out.asked, in.asked);
  EXPECT_EQ(out.error, in.error);
  ASSERT_EQ(out.got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out.got[i].subject, in.got[i].subject);
    EXPECT_EQ(out.got[i].data, in.got[i].data);
    EXPECT_EQ(out.got[i].reply, in.got[i].reply);
    EXPECT_EQ(out.got[i].delivered, in.got[i].delivered);
    EXPECT_EQ(out.got[i].stream_seq, in.got[i].stream_seq);
  }
}

TEST_F(messages, the_dispatcher_directorys_ask_and_answer_round_trip) {
  dispatchers_wanted want{{"m1", "m2"}, {"tasks[0].model", "tasks[1].model"}, true, true};
  EXPECT_TRUE(round_trip(want) == want) << caf::deep_to_string(want);
  // Handles of local actors travel by id and come back as the same actor.
  auto a = spawn_global_budget(sys, 1);
  auto b = spawn_global_budget(sys, 2);
  dispatchers_found found{{a, b}, 7, make_error(errc::too_many_models, "full", "body.model")};
  auto out = round_trip(found);
  EXPECT_TRUE(out == found) << caf::deep_to_string(out);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
}

TEST_F(messages, a_job_actors_gateway_outcome_round_trips) {
  runtime::gateway_outcome in;
  in.got_response = true;
  in.status_code = 503;
  in.body = R"({"error":"busy"})";
  in.request_id = "req-1";
  in.retryable = true;
  in.error = "the gateway answered 503";
  in.tries = 3;
  auto out = round_trip(in);
  EXPECT_TRUE(out == in) << caf::deep_to_string(out);
}

TEST_F(messages, a_batch_actors_messages_round_trip) {
  batch_plans plans;
  plans.ingested = true;
  plans.plans.errors = {{"invalid_request", 3, "body.model", "Line 3: no model."}};
  plans.plans.error_count = 4;
  plans.plans.line_count = 5;
  plans.plans.bytes = 6;
  plans.plans.models = {{"m1", "m1_safe", 7}};
  plans.failure = "cannot read";
  EXPECT_TRUE(round_trip(plans) == plans) << caf::deep_to_string(plans);

  st::batch_line dead{5, false, R"({"id":"z"})", std::nullopt,
                      st::dead_letter{"batch_1", 1, "batch_req_z", "c5", "m1", 2,
                                      st::job_error{"gateway_error", "answered 500"}, 77}};
  window_done window{
      9,    {st::batch_line{4, true, R"({"id":"y"})", st::token_usage{5, 6, 7, 8, 9}, {}}, dead},
      true, 2,
      1500, "input line at byte 7 no longer parses"};
  EXPECT_TRUE(round_trip(window) == window) << caf::deep_to_string(window);

  drained_lines drained{
      {st::batch_line{10, true, R"({"id":"x"})", st::token_usage{1, 2, 3, 4, 5}, {}},
       st::batch_line{11, false, "{}", std::nullopt, {}}},
      "plan unreadable"};
  EXPECT_TRUE(round_trip(drained) == drained) << caf::deep_to_string(drained);

  st::file_record f{"file-1", "acme", "b_output.jsonl", "batch_output", 12, 13, 14};
  written_files written{f, std::nullopt, "", "disk full"};
  EXPECT_TRUE(round_trip(written) == written) << caf::deep_to_string(written);
  written_files both{f, f, "a", "b"};
  EXPECT_TRUE(round_trip(both) == both);
}

TEST_F(messages, a_budgets_slot_update_round_trips) {
  slot_update in{0xfedcba9876543210u, 3, 4, false};
  EXPECT_TRUE(round_trip(in) == in) << caf::deep_to_string(in);
}

TEST_F(messages, loading_refuses_an_index_past_the_alternatives) {
  auto buf = save(write_request{st::cancel_job_op{"t", "j", 1}});
  ASSERT_FALSE(buf.empty());
  buf[0] = static_cast<char>(std::variant_size_v<st::write_op>);  // the index comes first
  caf::binary_deserializer source{sys, buf};
  write_request out;
  EXPECT_TRUE(source(out));
}

// --- write_tickets

struct answers {
  std::vector<std::string> codes;  ///< "" for a reply
};

auto waiter(asio::io_context& ctx, answers& a) {
  auto handler = [&a](result<write_reply> r) { a.codes.push_back(r ? "" : r.error().code); };
  auto bound = asio::bind_executor(ctx.get_executor(), handler);
  return std::make_unique<detail::reply_once<decltype(bound)>>(bound);
}

TEST(write_tickets, a_taken_waiter_is_completed_once_and_a_closed_slot_fails_the_rest) {
  asio::io_context ctx;
  auto keep = asio::make_work_guard(ctx);
  answers a;
  detail::write_tickets table;
  int writer = 0;
  auto key = reinterpret_cast<detail::writer_key>(&writer);
  table.open(key);
  auto t1 = table.add(key, waiter(ctx, a));
  auto t2 = table.add(key, waiter(ctx, a));
  ASSERT_TRUE(t1 && t2);
  EXPECT_NE(*t1, *t2);
  std::vector<detail::write_waiter_ptr> taken;
  table.take(key, {*t1, 999}, taken);  // 999: no such ticket
  ASSERT_EQ(taken.size(), 2u);
  ASSERT_TRUE(taken[0]);
  EXPECT_FALSE(taken[1]);
  taken[0]->complete(write_reply{st::op_reply{}, {}});
  taken.clear();
  EXPECT_EQ(table.waiting(key), 1u);
  table.close(key);  // the writer ended with t2 unanswered
  ctx.poll();
  EXPECT_EQ(a.codes, (std::vector<std::string>{"", "storage_unavailable"}));
}

TEST(write_tickets, a_writer_without_a_slot_fails_the_waiter_at_once) {
  asio::io_context ctx;
  auto keep = asio::make_work_guard(ctx);
  answers a;
  detail::write_tickets table;
  int writer = 0;
  auto key = reinterpret_cast<detail::writer_key>(&writer);
  EXPECT_FALSE(table.add(key, waiter(ctx, a)));  // never opened
  table.open(key);
  table.close(key);
  EXPECT_FALSE(table.add(key, waiter(ctx, a)));  // gone
  ctx.poll();
  EXPECT_EQ(a.codes, (std::vector<std::string>{"storage_unavailable", "storage_unavailable"}));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
