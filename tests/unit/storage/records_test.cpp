#include "storage/records.hpp"

#include <gtest/gtest.h>

namespace sy::storage {
namespace {

using json = nlohmann::json;

job_record full_job() {
  job_record r;
  r.id = "job_01HZX";
  r.tenant = "acme";
  r.endpoint = "/v1/chat/completions";
  r.model = "gpt-x";
  r.body = R"({"model":"gpt-x","messages":[]})";
  r.metadata = json{{"k", "v"}, {"n", 2}};
  r.idempotency_key = "idem-1";
  r.request_hash = "abc123";
  r.task_id = "t0";
  r.max_attempts = 5;
  r.attempts = 2;
  r.status = job_status::failed;
  r.created_at_ms = 1000;
  r.started_at_ms = 2000;
  r.finished_at_ms = 3000;
  r.updated_at_ms = 3001;
  r.result = gateway_result{429, "slow down"};
  r.error = job_error{"gateway_error", "too many requests"};
  return r;
}

TEST(Records, JobRoundTripKeepsEveryField) {
  const job_record in = full_job();
  // Through text, as the store does.
  const job_record out = job_from_json(json::parse(to_json(in).dump()));
  EXPECT_EQ(out.id, in.id);
  EXPECT_EQ(out.tenant, in.tenant);
  EXPECT_EQ(out.endpoint, in.endpoint);
  EXPECT_EQ(out.model, in.model);
  EXPECT_EQ(out.body, in.body);
  EXPECT_EQ(out.metadata, in.metadata);
  EXPECT_EQ(out.idempotency_key, in.idempotency_key);
  EXPECT_EQ(out.request_hash, in.request_hash);
  EXPECT_EQ(out.task_id, in.task_id);
  EXPECT_EQ(out.max_attempts, 5);
  EXPECT_EQ(out.attempts, 2);
  EXPECT_EQ(out.status, job_status::failed);
  EXPECT_EQ(out.created_at_ms, 1000);
  EXPECT_EQ(out.started_at_ms, 2000);
  EXPECT_EQ(out.finished_at_ms, 3000);
  EXPECT_EQ(out.updated_at_ms, 3001);
  ASSERT_TRUE(out.result.has_value());
  EXPECT_EQ(out.result->status_code, 429);
  EXPECT_EQ(out.result->body, "slow down");
  ASSERT_TRUE(out.error.has_value());
  EXPECT_EQ(out.error->code, "gateway_error");
  EXPECT_EQ(out.error->message, "too many requests");
}

TEST(Records, JobOmitsEmptyOptionalFields) {
  job_record r;
  r.id = "job_1";
  const json j = to_json(r);
  EXPECT_EQ(j.size(), 3u) << j.dump();  // id, max attempts, status
  const job_record back = job_from_json(j);
  EXPECT_FALSE(back.result.has_value());
  EXPECT_FALSE(back.error.has_value());
  EXPECT_TRUE(back.metadata.is_object());
  EXPECT_TRUE(back.metadata.empty());
  EXPECT_EQ(back.status, job_status::queued);
}

TEST(Records, DecodingToleratesMissingAndMistypedFields) {
  const job_record a = job_from_json(json{{"id", "job_2"}, {"ma", "three"}, {"st", "bogus"}});
  EXPECT_EQ(a.id, "job_2");
  EXPECT_EQ(a.max_attempts, 3);
  EXPECT_EQ(a.status, job_status::queued);
  const job_record b = job_from_json(json::array({1, 2}));
  EXPECT_TRUE(b.id.empty());
  const task_record t = task_from_json(json::object());
  EXPECT_EQ(t.attempt, 1);
  EXPECT_EQ(t.max_attempts, 3);
  EXPECT_EQ(t.state, task_state::queued);
}

TEST(Records, TaskRoundTrip) {
  task_record in{"t1", "job_1", "acme", "m", 4, 2, 7, task_state::leased, 99, 55, "boom"};
  const task_record out = task_from_json(json::parse(to_json(in).dump()));
  EXPECT_EQ(out.id, "t1");
  EXPECT_EQ(out.job_id, "job_1");
  EXPECT_EQ(out.tenant, "acme");
  EXPECT_EQ(out.model, "m");
  EXPECT_EQ(out.index, 4);
  EXPECT_EQ(out.attempt, 2);
  EXPECT_EQ(out.max_attempts, 7);
  EXPECT_EQ(out.state, task_state::leased);
  EXPECT_EQ(out.not_before_ms, 99);
  EXPECT_EQ(out.queued_at_ms, 55);
  EXPECT_EQ(out.last_error, "boom");
}

TEST(Records, LeaseIdempotencyOutboxRoundTrip) {
  const lease_record l = lease_from_json(to_json(lease_record{"t1", 3, "tok", 1234, "node-a"}));
  EXPECT_EQ(l.task_id, "t1");
  EXPECT_EQ(l.attempt, 3);
  EXPECT_EQ(l.token, "tok");
  EXPECT_EQ(l.expires_at_ms, 1234);
  EXPECT_EQ(l.holder, "node-a");
  const idempotency_record i = idempotency_from_json(to_json(idempotency_record{"job_9", "h", 5}));
  EXPECT_EQ(i.job_id, "job_9");
  EXPECT_EQ(i.request_hash, "h");
  EXPECT_EQ(i.created_at_ms, 5);
  // The outbox's sequence lives in the key only (read_outbox sets it from there).
  const auto o = decode_outbox(encode_outbox(outbox_record{7, "t1:1", "sy.tasks.m", "{\"a\":1}"}));
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->seq, 0u);
  EXPECT_EQ(o->msg_id, "t1:1");
  EXPECT_EQ(o->subject, "sy.tasks.m");
  EXPECT_EQ(o->payload, "{\"a\":1}");
  EXPECT_FALSE(decode_outbox("").has_value());
  static constexpr char one_separator[] = "\x01only-one\0separator";
  EXPECT_FALSE(decode_outbox(std::string_view(one_separator, sizeof one_separator - 1)).has_value());
}

TEST(Records, StatusNamesRoundTrip) {
  for (auto s : {job_status::queued, job_status::in_progress, job_status::completed,
                 job_status::failed, job_status::cancelled, job_status::expired}) {
    EXPECT_EQ(job_status_from(to_string(s)), s);
  }
  for (auto s : {task_state::queued, task_state::leased, task_state::done}) {
    EXPECT_EQ(task_state_from(to_string(s)), s);
  }
  EXPECT_EQ(to_string(job_status::in_progress), "in_progress");
  EXPECT_FALSE(job_status_from("running").has_value());
  EXPECT_FALSE(task_state_from("").has_value());
  EXPECT_FALSE(is_terminal(job_status::queued));
  EXPECT_FALSE(is_terminal(job_status::in_progress));
  EXPECT_TRUE(is_terminal(job_status::completed));
  EXPECT_TRUE(is_terminal(job_status::failed));
  EXPECT_TRUE(is_terminal(job_status::cancelled));
  EXPECT_TRUE(is_terminal(job_status::expired));
}

}  // namespace
}  // namespace sy::storage
