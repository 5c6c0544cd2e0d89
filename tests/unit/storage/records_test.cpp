#include "storage/records.hpp"

#include <gtest/gtest.h>

namespace sy::storage {
namespace SY_UNITY_ID {

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
  r.webhook_url = "https://example.com/hook";
  r.deadline_ms = 1'700'000'000'000;
  r.event_seq = 300;
  r.input_dropped = true;
  return r;
}

void expect_same_job(const job_record& out, const job_record& in) {
  EXPECT_EQ(out.id, in.id);
  EXPECT_EQ(out.tenant, in.tenant);
  EXPECT_EQ(out.endpoint, in.endpoint);
  EXPECT_EQ(out.model, in.model);
  EXPECT_EQ(out.body, in.body);
  EXPECT_EQ(out.metadata, in.metadata);
  EXPECT_EQ(out.idempotency_key, in.idempotency_key);
  EXPECT_EQ(out.request_hash, in.request_hash);
  EXPECT_EQ(out.task_id, in.task_id);
  EXPECT_EQ(out.max_attempts, in.max_attempts);
  EXPECT_EQ(out.attempts, in.attempts);
  EXPECT_EQ(out.status, in.status);
  EXPECT_EQ(out.created_at_ms, in.created_at_ms);
  EXPECT_EQ(out.started_at_ms, in.started_at_ms);
  EXPECT_EQ(out.finished_at_ms, in.finished_at_ms);
  EXPECT_EQ(out.updated_at_ms, in.updated_at_ms);
  ASSERT_EQ(out.result.has_value(), in.result.has_value());
  if (in.result) {
    EXPECT_EQ(out.result->status_code, in.result->status_code);
    EXPECT_EQ(out.result->body, in.result->body);
  }
  ASSERT_EQ(out.error.has_value(), in.error.has_value());
  if (in.error) {
    EXPECT_EQ(out.error->code, in.error->code);
    EXPECT_EQ(out.error->message, in.error->message);
  }
  EXPECT_EQ(out.webhook_url, in.webhook_url);
  EXPECT_EQ(out.deadline_ms, in.deadline_ms);
  EXPECT_EQ(out.event_seq, in.event_seq);
  EXPECT_EQ(out.input_dropped, in.input_dropped);
}

TEST(Records, JobRoundTripKeepsEveryField) {
  const job_record in = full_job();
  // Through text, as stores before schema 3 hold it.
  expect_same_job(job_from_json(json::parse(to_json(in).dump())), in);
}

TEST(Records, BinaryJobRoundTripKeepsEveryByte) {
  job_record in = full_job();
  static constexpr char raw_body[] = "{\"a\":\"nul \0 and \xff\"}";  // kept verbatim, not escaped
  in.body = std::string(raw_body, sizeof raw_body - 1);
  ASSERT_EQ(in.body.size(), 19u);
  in.result->status_code = -1;
  in.started_at_ms = -5;
  const std::string value = encode_job(in);
  EXPECT_EQ(value.front(), '\x01');
  const auto out = decode_job(value);
  ASSERT_TRUE(out.has_value());
  expect_same_job(*out, in);
  // A record without metadata, result or error reads back without them.
  job_record bare;
  bare.id = "job_2";
  const auto back = decode_job(encode_job(bare));
  ASSERT_TRUE(back.has_value());
  expect_same_job(*back, bare);
  EXPECT_TRUE(back->metadata.is_object() && back->metadata.empty());
}

TEST(Records, BinaryDecodersReadTheJsonOfOlderStores) {
  const job_record in = full_job();
  const auto job = decode_job(to_json(in).dump());
  ASSERT_TRUE(job.has_value());
  expect_same_job(*job, in);
  const auto task = decode_task(to_json(task_record{"t1",
                                                    "job_1",
                                                    "acme",
                                                    "m",
                                                    0,
                                                    2,
                                                    3,
                                                    task_state::leased,
                                                    9,
                                                    8,
                                                    "x",
                                                    {},
                                                    {},
                                                    job_status::queued,
                                                    {},
                                                    {}})
                                    .dump());
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->attempt, 2);
  EXPECT_EQ(task->state, task_state::leased);
  const auto lease = decode_lease(to_json(lease_record{"t1", 3, "tok", 1234, "node-a"}).dump());
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->token, "tok");
  event_record ev{"job_1", 2, job_status::in_progress, job_status::queued, 77, 1, std::nullopt};
  const auto event = decode_event(to_json(ev).dump());
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->previous, job_status::queued);
  EXPECT_FALSE(decode_job("not json").has_value());
  EXPECT_FALSE(decode_job("[1,2]").has_value());
}

TEST(Records, ABinaryValueCutShortIsCorruptUnlessItEndsBetweenFields) {
  const std::string value = encode_job(full_job());
  // Every prefix either decodes (it ends between two fields: the rest read as defaults) or is
  // refused; none is misread. The id field alone is such a prefix.
  int decoded = 0;
  for (size_t n = 1; n < value.size(); ++n) {
    if (auto j = decode_job(value.substr(0, n))) {
      ++decoded;
      // Only the format byte alone reads without the id (every field a default).
      if (j->id != "job_01HZX") {
        EXPECT_EQ(n, 1u);
      }
    }
  }
  EXPECT_GT(decoded, 0);
  EXPECT_LT(decoded, static_cast<int>(value.size()) / 2);
  const auto id_only = decode_job(value.substr(0, 2 + std::string("job_01HZX").size()));
  ASSERT_TRUE(id_only.has_value());
  EXPECT_EQ(id_only->id, "job_01HZX");
  EXPECT_EQ(id_only->max_attempts, 3);                       // the default
  EXPECT_FALSE(decode_job(value.substr(0, 5)).has_value());  // inside the id
}

TEST(Records, ABinaryValueWithAnUnknownStateIsCorrupt) {
  task_record t;
  t.id = "t";
  std::string value = encode_task(t);
  ASSERT_EQ(value.back(), '\0');  // the last error: an empty string
  // id, job, tenant, model, index, attempt, max_attempts, state, not_before, queued_at, error
  const size_t state_at = value.size() - 4;
  ASSERT_EQ(value[state_at], '\0');
  value[state_at] = '\x09';
  EXPECT_FALSE(decode_task(value).has_value());
  value[state_at] = '\x02';
  ASSERT_TRUE(decode_task(value).has_value());
  EXPECT_EQ(decode_task(value)->state, task_state::done);
}

TEST(Records, BinaryTaskLeaseEventRoundTrip) {
  task_record t{"t1",   "job_1",
                "acme", "m",
                4,      2,
                7,      task_state::leased,
                99,     55,
                "boom", {},
                {},     job_status::queued,
                {},     {}};
  const auto task = decode_task(encode_task(t));
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->id, "t1");
  EXPECT_EQ(task->job_id, "job_1");
  EXPECT_EQ(task->tenant, "acme");
  EXPECT_EQ(task->model, "m");
  EXPECT_EQ(task->index, 4);
  EXPECT_EQ(task->attempt, 2);
  EXPECT_EQ(task->max_attempts, 7);
  EXPECT_EQ(task->state, task_state::leased);
  EXPECT_EQ(task->not_before_ms, 99);
  EXPECT_EQ(task->queued_at_ms, 55);
  EXPECT_EQ(task->last_error, "boom");
  const auto lease = decode_lease(encode_lease(lease_record{"t1", 3, "tok", 1234, "node-a"}));
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->task_id, "t1");
  EXPECT_EQ(lease->attempt, 3);
  EXPECT_EQ(lease->token, "tok");
  EXPECT_EQ(lease->expires_at_ms, 1234);
  EXPECT_EQ(lease->holder, "node-a");
  for (auto previous : {std::optional<job_status>{}, std::optional{job_status::queued},
                        std::optional{job_status::cancelling}}) {
    event_record ev{"job_1",
                    5,
                    job_status::expired,
                    previous,
                    1'700'000'000'123,
                    3,
                    job_error{"deadline_exceeded", "too late"}};
    const auto event = decode_event(encode_event(ev));
    ASSERT_TRUE(event.has_value());
    EXPECT_EQ(event->job_id, "job_1");
    EXPECT_EQ(event->seq, 5u);
    EXPECT_EQ(event->state, job_status::expired);
    EXPECT_EQ(event->previous, previous);
    EXPECT_EQ(event->at_ms, 1'700'000'000'123);
    EXPECT_EQ(event->attempt, 3);
    ASSERT_TRUE(event->error.has_value());
    EXPECT_EQ(event->error->message, "too late");
  }
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
  task_record in{"t1",   "job_1",
                 "acme", "m",
                 4,      2,
                 7,      task_state::leased,
                 99,     55,
                 "boom", {},
                 {},     job_status::queued,
                 {},     {}};
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
  const auto o = decode_outbox(encode_outbox(outbox_record{7, task_message{"m", "t1", 1, 0}}));
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->seq, 0u);
  EXPECT_EQ(std::get<task_message>(o->what), (task_message{"m", "t1", 1, 0}));
  EXPECT_FALSE(decode_outbox("").has_value());
  static constexpr char one_separator[] = "\x01only-one\0separator";
  EXPECT_FALSE(
      decode_outbox(std::string_view(one_separator, sizeof one_separator - 1)).has_value());
}

// Every kind of outbox record comes back as it was written, and so does a webhook delivery.
TEST(Records, TypedOutboxAndWebhookRecordsRoundTrip) {
  event_record ev{"job_1", 4, job_status::completed, job_status::in_progress,
                  5'000,   2, job_error{"c", "m"}};
  job_event je{ev, true, task_counts{3, 0, 0, 2, 1, 0}, gateway_result{200, "{\"a\":1}"}, false};
  job_event elsewhere{ev, false, {}, std::nullopt, true};
  const std::vector<outbox_record> all = {
      {0, task_message{"gpt-x", "01A-00000001", 3, 0}},
      {0, task_message{"gpt-x", "01A-00000001", 3, 77}},
      {0, je},
      {0, elsewhere},
      {0, task_event{"job_1", "01A-00000002", "c-2", 2, job_status::failed, 3,
                     job_error{"gateway_error", "boom"}, gateway_result{503, "x"}, 9'000}},
      {0, task_event{"job_1", "01A-00000003", "", 3, job_status::in_progress, 1, std::nullopt,
                     std::nullopt, 9'001}},
      {0, dead_letter{"job_1", 2, "01A-00000002", "c-2", "gpt-x", 3, job_error{"e", "why"}, 10}},
      {0, dead_letter{"job_1", 1, "", "", "", 0, job_error{"ingest_failed", "why"}, 11}},
      {0, rendered_message{"id", "sy.tasks.m", std::string("p\0q", 3)}},
  };
  for (const auto& r : all) {
    auto back = decode_outbox(encode_outbox(r));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, r) << r.what.index();
  }
  webhook_record w{0, "job_1", "http://h/x", je, "", 2, 99, "503", "", 0};
  auto back = decode_webhook(encode_webhook(w));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->event, je);
  EXPECT_EQ(back->url, "http://h/x");
  EXPECT_TRUE(back->body.empty());
  EXPECT_EQ(back->attempts, 2);
  EXPECT_EQ(back->next_at_ms, 99);
  EXPECT_EQ(back->last_error, "503");
  EXPECT_TRUE(back->batch_status.empty());
  webhook_record b{7, "batch_1", "http://h/b", {}, "", 0, 5, "", "completed", 1234};
  auto batch_back = decode_webhook(encode_webhook(b));
  ASSERT_TRUE(batch_back.has_value());
  EXPECT_EQ(batch_back->batch_status, "completed");
  EXPECT_EQ(batch_back->created_at_ms, 1234);
  EXPECT_EQ(batch_back->job_id, "batch_1");
  EXPECT_FALSE(decode_outbox("\x02\x09").has_value());  // a kind this build does not know
}

// Records a previous build wrote, rendered, are read as rendered messages and bodies.
TEST(Records, OutboxAndWebhookRecordsOfThePreviousBuildAreReadRendered) {
  static constexpr char v2[] = "\x01task:t-0:1\0sy.tasks.m\0t-0:1";
  auto o = decode_outbox(std::string_view(v2, sizeof v2 - 1));
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(std::get<rendered_message>(o->what),
            (rendered_message{"task:t-0:1", "sy.tasks.m", "t-0:1"}));
  auto w = decode_webhook(
      R"({"sq":4,"jb":"job_1","ur":"http://h/x","bd":"{\"job_id\":\"job_1\"}","an":1,"nx":7,"le":"x"})");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->body, R"({"job_id":"job_1"})");
  EXPECT_EQ(w->job_id, "job_1");
  EXPECT_EQ(w->url, "http://h/x");
  EXPECT_EQ(w->attempts, 1);
  EXPECT_EQ(w->next_at_ms, 7);
  EXPECT_FALSE(decode_webhook("not json").has_value());
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

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
