// What storage's typed records become on the wire (actors/event_json.hpp, the relay's
// outbox_message): byte-exact JSON, subjects and Nats-Msg-Ids, as the builds that rendered them
// in storage wrote them.

#include "actors/event_json.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "actors/outbox_relay.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

using namespace storage;
using json = nlohmann::json;

const event_record done_event{"job_1", 4, job_status::completed, job_status::in_progress,
                              5'000,   2, job_error{"c", "m\"q"}};

TEST(event_json, a_state_change_with_its_counts_and_inline_result) {
  job_event e{done_event, true, task_counts{3, 0, 0, 2, 1, 0}, gateway_result{200, R"({"a":1})"},
              false};
  EXPECT_EQ(
      event_json(e),
      R"({"job_id":"job_1","sequence":4,"state":"completed","previous_state":"in_progress",)"
      R"("timestamp":5,"timestamp_ms":5000,"attempt":2,"error":{"code":"c","message":"m\"q"},)"
      R"("task_counts":{"total":3,"queued":0,"in_progress":0,"completed":2,"failed":1,)"
      R"("cancelled":0},"result":{"status_code":200,"body":{"a":1}}})");
}

TEST(event_json, the_creation_and_a_result_too_large_to_carry) {
  job_event created{event_record{"job_1", 1, job_status::queued, std::nullopt, 1'999, 0, {}},
                    false,
                    {},
                    std::nullopt,
                    false};
  EXPECT_EQ(event_json(created),
            R"({"job_id":"job_1","sequence":1,"state":"queued","previous_state":null,)"
            R"("timestamp":1,"timestamp_ms":1999,"attempt":0,"error":null,"result":null})");
  job_event large{done_event, true, task_counts{}, std::nullopt, true};
  large.event.error.reset();
  EXPECT_EQ(event_json(large),
            R"({"job_id":"job_1","sequence":4,"state":"completed","previous_state":"in_progress",)"
            R"("timestamp":5,"timestamp_ms":5000,"attempt":2,"error":null,"task_counts":{"total":)"
            R"(null,"queued":0,"in_progress":0,"completed":0,"failed":0,"cancelled":0},)"
            R"("result":null,"result_url":"/v1/jobs/job_1"})");
  // A webhook renders its event, or sends what a previous build rendered.
  EXPECT_EQ(webhook_body(webhook_record{1, "job_1", "u", large, "", 0, 0, "", "", 0}),
            event_json(large));
  EXPECT_EQ(webhook_body(webhook_record{1, "job_1", "u", large, "{}", 0, 0, "", "", 0}), "{}");
  // A batch's terminal transition is OpenAI's event, its id the delivery's (webhook-id).
  webhook_record batch{42, "batch_01", "u", {}, "", 3, 0, "", "expired", 1'800'000'000'999};
  EXPECT_EQ(webhook_id(batch), "whd_42");
  EXPECT_EQ(webhook_body(batch),
            R"({"id":"whd_42","object":"event","type":"batch.expired","created_at":1800000000,)"
            R"("data":{"id":"batch_01"}})");
}

// The event of a job as SSE renders it: taken from the job record by job_event_of.
job_record job_with_result(std::string body) {
  job_record job;
  job.id = "job_01J";
  job.status = job_status::completed;
  job.result = gateway_result{200, std::move(body)};
  return job;
}

TEST(event_json, a_creation_has_nulls_and_no_previous_state) {
  event_record ev;
  ev.job_id = "job_01J";
  ev.seq = 1;
  ev.state = job_status::queued;
  ev.at_ms = 1'700'000'000'123;
  auto j = json::parse(event_json(job_event_of(job_record{}, ev, 1024)));
  EXPECT_EQ(j, json::parse(R"({"job_id":"job_01J","sequence":1,"state":"queued",
      "previous_state":null,"timestamp":1700000000,"timestamp_ms":1700000000123,"attempt":0,
      "error":null,"result":null})"));
}

TEST(event_json, a_terminal_change_inlines_a_small_result_and_links_a_large_one) {
  event_record ev;
  ev.job_id = "job_01J";
  ev.seq = 4;
  ev.state = job_status::completed;
  ev.previous = job_status::in_progress;
  ev.attempt = 2;
  ev.error = job_error{"gateway_error", "first try: 503 \"busy\""};
  auto small = json::parse(event_json(job_event_of(job_with_result(R"({"ok": true})"), ev, 1024)));
  EXPECT_EQ(small["previous_state"], "in_progress");
  EXPECT_EQ(small["error"],
            json({{"code", "gateway_error"}, {"message", "first try: 503 \"busy\""}}));
  EXPECT_EQ(small["result"], json({{"status_code", 200}, {"body", {{"ok", true}}}}));
  EXPECT_FALSE(small.contains("result_url"));
  auto large =
      json::parse(event_json(job_event_of(job_with_result(std::string(2000, 'x')), ev, 1024)));
  EXPECT_TRUE(large["result"].is_null());
  EXPECT_EQ(large["result_url"], "/v1/jobs/job_01J");
}

TEST(event_json, task_events_and_dead_letters) {
  task_event t{"job_1",
               "01A-00000002",
               "c-2",
               2,
               job_status::completed,
               1,
               std::nullopt,
               gateway_result{200, "not json"},
               9'000};
  EXPECT_EQ(task_event_json(t),
            R"({"job_id":"job_1","task_id":"01A-00000002","custom_id":"c-2","index":2,)"
            R"("state":"completed","attempt":1,"error":null,"result":{"status_code":200,)"
            R"("body":"not json"},"timestamp_ms":9000})");
  t.custom_id.clear();
  t.result.reset();
  t.error = job_error{"e", "m"};
  EXPECT_EQ(task_event_json(t),
            R"({"job_id":"job_1","task_id":"01A-00000002","custom_id":null,"index":2,)"
            R"("state":"completed","attempt":1,"error":{"code":"e","message":"m"},"result":null,)"
            R"("timestamp_ms":9000})");
  const dead_letter task{"job_1", 2, "01A-00000002", "c-2", "gpt-x", 3, job_error{"e", "w"}, 10};
  EXPECT_EQ(dead_letter_json(task),
            R"({"job_id":"job_1","run":2,"task_id":"01A-00000002","custom_id":"c-2",)"
            R"("model":"gpt-x","attempts":3,"error":{"code":"e","message":"w"},"at_ms":10})");
  const dead_letter ingest{"job_1", 1, "", "", "", 0, job_error{"e", "w"}, 11};
  EXPECT_EQ(dead_letter_json(ingest),
            R"({"job_id":"job_1","run":1,"task_id":null,"error":{"code":"e","message":"w"},)"
            R"("at_ms":11})");
}

TEST(event_json, task_messages_round_trip_and_garbage_is_refused) {
  auto p = parse_task_message(task_message_payload("abc", 7));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->first, "abc");
  EXPECT_EQ(p->second, 7);
  EXPECT_FALSE(parse_task_message("abc").has_value());
  EXPECT_FALSE(parse_task_message("abc:x").has_value());
  EXPECT_FALSE(parse_task_message("abc:0").has_value());
  EXPECT_NE(task_message_id("a", 1), task_message_id("a", 2));
}

TEST(outbox_message, each_record_gets_its_subject_id_and_payload) {
  runtime::js_layout layout;
  layout.subject_prefix = "p";
  auto of = [&](auto what) { return outbox_message(outbox_record{9, std::move(what)}, layout); };
  auto m = of(task_message{"gpt_x", "01A-0", 2, 0});
  EXPECT_EQ(m.subject, "p.tasks.gpt_5Fx");
  EXPECT_EQ(m.msg_id, "task:01A-0:2");
  EXPECT_EQ(m.payload, "01A-0:2");
  EXPECT_EQ(of(task_message{"m", "01A-0", 2, 77}).msg_id, "task:01A-0:2:r77");
  const job_event e{done_event, false, {}, std::nullopt, false};
  m = of(e);
  EXPECT_EQ(m.subject, "p.jobs.job_1.completed");
  EXPECT_EQ(m.msg_id, "event:job_1:4");
  EXPECT_EQ(m.payload, event_json(e));
  m = of(task_event{"job_1", "01A-2", "", 2, job_status::failed, 3, {}, {}, 1});
  EXPECT_EQ(m.subject, "p.jobs.job_1.task.failed");
  EXPECT_EQ(m.msg_id, "task-event:01A-2:3:failed");
  m = of(dead_letter{"job_1", 1, "01A-2", "", "gpt_x", 3, job_error{"e", "w"}, 10});
  EXPECT_EQ(m.subject, "p.dlq.gpt_5Fx");
  EXPECT_EQ(m.msg_id, "dlq:01A-2:3");
  // A later run's (a batch line's tries start again in a rerun): another message.
  m = of(dead_letter{"job_1", 2, "01A-2", "", "gpt_x", 3, job_error{"e", "w"}, 10});
  EXPECT_EQ(m.msg_id, "dlq:01A-2:3:r2");
  m = of(dead_letter{"job_1", 2, "", "", "", 0, job_error{"e", "w"}, 10});
  EXPECT_EQ(m.subject, "p.dlq._ingest");
  EXPECT_EQ(m.msg_id, "ingest:job_1:2");
  m = of(rendered_message{"id", "sy.tasks.m", "x"});
  EXPECT_EQ(m.subject, "sy.tasks.m");
  EXPECT_EQ(m.msg_id, "id");
  EXPECT_EQ(m.payload, "x");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
