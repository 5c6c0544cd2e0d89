// What the surfaces (HTTP, the NATS micro service and intake, the worker calls) hand the core and
// what it answers are plain values: each round-trips through CAF's binary serializer unchanged —
// the admitted requests (a submission with its tasks, an append, a batch, an upload, a worker
// call) and the answers (a job, its events, a page of jobs or tasks, a lease, a heartbeat's
// answer, credentials, a batch, files), and the batch manager's own (actors/batch_manager.hpp: a
// batch's rerun, its answers, a file I/O step's end). Every field of every value below differs from
// its default, so an `inspect` overload that forgets a field fails the comparison (the defaulted
// operator== compares all). A client's body travels as its JSON text, not as a document.

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deep_to_string.hpp>

#include "actors/batch_manager.hpp"
#include "actors/batch_service.hpp"
#include "actors/core_messages.hpp"
#include "actors/detail/caf_inspect.hpp"
#include "actors/job_service.hpp"
#include "actors/worker_service.hpp"
#include "tests/support/admit.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

namespace st = storage;

task_input task(bool http) {
  task_input t;
  t.custom_id = http ? "fetch-1" : "row-1";
  t.body = http ? R"({"method":"GET","url":"https://example.com/a"})"
                : R"({"messages":[],"model":"m1"})";
  t.model = http ? "http-task:example.com" : "m1";
  t.http = http;
  t.runtime = !http;
  return t;
}

submission full_submission() {
  submission s;
  s.tenant = "acme";
  s.endpoint = "/v1/chat/completions";
  s.body = R"({"messages":[{"content":"hi","role":"user"}],"model":"m1"})";
  s.model = "m1";
  s.tasks = {task(false), task(true)};
  s.max_inflight = 7;
  s.open = true;
  s.task_events = true;
  s.input_file_id = "file-01";
  s.runtime = "thumbnails";
  s.grants.read = {{"in", "a/"}};
  s.grants.write = {{"out", "b/"}};
  s.grants.scratch = {{"tmp", "c/"}};
  s.metadata = {{"team", "a"}};
  s.max_attempts = 4;
  s.idempotency_key = "key-1";
  s.webhook_url = "https://hooks.example.com/x";
  s.timeout_ms = 60'000;
  s.trace = {std::string(32, 'a'), std::string(16, 'b'), 0, "vendor=1"};
  return s;
}

/// A batch request with every field set.
batch_request full_batch_request() {
  batch_request b;
  b.tenant = "acme";
  b.input_file_id = "file-01";
  b.endpoint = "/v1/embeddings";
  b.completion_window = "24h";
  b.completion_window_ms = 86'400'000;
  b.metadata = {{"run", "nightly"}};
  b.output_expires_after = 3600;
  b.trace = {std::string(32, 'c'), std::string(16, 'd'), 1, ""};
  b.max_inflight = 9;
  b.webhook_url = "https://hooks.example.com/b";
  b.max_attempts = 4;
  return b;
}

/// A batch record in progress with its extension fields set.
st::batch_record batch(const std::string& id) {
  st::batch_record b;
  b.id = id;
  b.tenant = "acme";
  b.status = st::batch_status::in_progress;
  b.total = 12;
  b.completed = 3;
  b.max_inflight = 3;
  b.webhook_url = "https://hooks.example.com/b";
  b.event_seq = 2;
  return b;
}

st::job_record job(const std::string& id) {
  st::job_record j;
  j.id = id;
  j.tenant = "acme";
  j.status = st::job_status::in_progress;
  j.endpoint = "/v1/chat/completions";
  j.model = "m1";
  j.body = R"({"model":"m1"})";
  j.created_at_ms = 1'700'000'000'000;
  j.attempts = 2;
  j.max_attempts = 3;
  j.webhook_url = "https://hooks.example.com/x";
  return j;
}

st::event_record event(uint64_t seq) {
  st::event_record e;
  e.job_id = "job_01";
  e.seq = seq;
  e.state = st::job_status::failed;
  e.previous = st::job_status::in_progress;
  e.at_ms = 1'700'000'000'123;
  e.attempt = 3;
  e.error = st::job_error{"upstream_error", "the gateway answered 502"};
  return e;
}

st::task_record task_record(int index) {
  st::task_record t;
  t.id = "01-" + std::to_string(index);
  t.job_id = "job_01";
  t.tenant = "acme";
  t.model = "m1";
  t.index = index;
  t.attempt = 2;
  t.custom_id = "row-" + std::to_string(index);
  t.body = R"({"model":"m1"})";
  return t;
}

class surface_messages : public ::testing::Test {
 protected:
  template <class T>
  T round_trip(const T& in, T out = T{}) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto err = sink(const_cast<T&>(in));
    EXPECT_FALSE(err) << sys.render(err);
    caf::binary_deserializer source{sys, buf};
    err = source(out);
    EXPECT_FALSE(err) << sys.render(err);
    EXPECT_EQ(source.remaining(), 0u);
    return out;
  }

  /// An admitted request loaded into one admitted empty: the value another node's admission let
  /// through arrives whole.
  template <class T>
  void expect_admitted_round_trip(const T& value) {
    auto in = test::admit::as_is(value);
    auto out = round_trip(in, test::admit::as_is(T{}));
    EXPECT_TRUE(*out == value) << caf::deep_to_string(value) << "\nbecame "
                               << caf::deep_to_string(*out);
  }

  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
};

TEST_F(surface_messages,
       a_submission_with_its_tasks_crosses_with_every_field_and_its_body_as_text) {
  expect_admitted_round_trip(full_submission());
}

TEST_F(surface_messages, an_append_crosses_whole) {
  task_append a;
  a.tasks = {task(false), task(true)};
  a.last_batch = true;
  a.tenant = "acme";
  a.idempotency_key = "append-1";
  expect_admitted_round_trip(a);
}

TEST_F(surface_messages, a_batch_and_an_upload_cross_whole) {
  expect_admitted_round_trip(full_batch_request());
  staged_file f;
  f.record = {"file-02", "acme", "in.jsonl", "batch", 1234, 1'700'000'000, 1'700'086'400};
  f.path = "/data/files/uploads/u-1";
  f.expires_after_s = 86'400;
  expect_admitted_round_trip(f);
}

TEST_F(surface_messages, every_kind_of_worker_call_crosses_whole) {
  for (auto what : {worker_request::kind::lease, worker_request::kind::heartbeat,
                    worker_request::kind::complete, worker_request::kind::fail,
                    worker_request::kind::credentials}) {
    worker_request w;
    w.what = what;
    w.runtime = "thumbnails";
    w.max_tasks = 5;
    w.wait_ms = 20'000;
    w.token = "eyJhbGciOiJFUzI1NiJ9.x.y";
    w.output = R"({"ok":true})";
    w.error_code = "bad_input";
    w.error_message = "the input had no url";
    w.retryable = true;
    expect_admitted_round_trip(w);
  }
}

TEST_F(surface_messages, the_core_answers_cross_whole) {
  submit_outcome made{job("job_01"), true};
  EXPECT_TRUE(round_trip(made) == made);
  job_page jobs{{job("job_02"), job("job_01")}, true};
  EXPECT_TRUE(round_trip(jobs) == jobs);
  event_batch events{job("job_01"), {event(1), event(2)}};
  EXPECT_TRUE(round_trip(events) == events) << caf::deep_to_string(events);
  task_page tasks{job("job_01"), {task_record(0), task_record(1)}, true};
  EXPECT_TRUE(round_trip(tasks) == tasks);
  lease_reply lease{{leased_task{"01-0", "job_01", 2, R"({"url":"s3://in/a"})", 1'700'000'030'000,
                                 30'000, "token", std::string(55, 't'), "vendor=1"}}};
  EXPECT_TRUE(round_trip(lease) == lease);
  heartbeat_answer beat{1'700'000'060'000, "fresh-token", true};
  EXPECT_TRUE(round_trip(beat) == beat);
  storage_credentials creds{
      "AKIA", "secret", "session", "2026-11-28T20:00:00Z", "http://127.0.0.1:7480", "us-east-1"};
  EXPECT_TRUE(round_trip(creds) == creds);
  st::batch_record b;
  b.id = "batch_01";
  b.tenant = "acme";
  b.status = st::batch_status::in_progress;
  b.max_inflight = 3;
  b.webhook_url = "https://hooks.example.com/b";
  b.max_attempts = 5;
  batch_page batches{{b}, true};
  EXPECT_TRUE(round_trip(batches) == batches);
  file_page files{{{"file-01", "acme", "in.jsonl", "batch", 10, 1, 2}}, true};
  EXPECT_TRUE(round_trip(files) == files);
}

TEST_F(surface_messages, the_batch_managers_requests_and_answers_cross_whole) {
  core::rerun_batch rerun{"acme", "batch_01"};
  EXPECT_TRUE(round_trip(rerun) == rerun);
  core::delete_batch remove{"acme", "batch_01"};
  EXPECT_TRUE(round_trip(remove) == remove);
  const std::vector<batch_answer> answers = {
      batch_answer{batch("batch_01")}, batch_answer{core::done{}},
      batch_answer{st::file_record{"file-01", "acme", "in.jsonl", "batch", 10, 1, 2}},
      batch_answer{sy::error{"job_not_rerunnable", "its error file was deleted", "id"}}};
  for (const auto& a : answers) EXPECT_TRUE(round_trip(a) == a) << a.value.index();
  io_done step{7, "cannot move the upload to /data/files/file-01: No space left on device"};
  EXPECT_TRUE(round_trip(step) == step);
}

/// One request of each alternative, every field set.
std::vector<core::request> every_request() {
  task_append append;
  append.tasks = {task(false)};
  append.last_batch = true;
  append.tenant = "acme";
  append.idempotency_key = "a-1";
  worker_request complete;
  complete.what = worker_request::kind::complete;
  complete.token = "token";
  complete.output = R"({"ok":true})";
  return {
      core::submit_job{test::admit::as_is(full_submission())},
      core::get_job{"acme", "job_01"},
      core::wait_job{"acme", "job_01", 30'000},
      core::job_events{"acme", "job_01", 7, 15'000},
      core::cancel_job{"acme", "job_01"},
      core::delete_job{"acme", "job_02"},
      core::rerun_job{"acme", "job_03"},
      core::list_jobs{"acme", st::job_status::failed, 50, "job_00", st::job_kind::batch},
      core::list_tasks{"acme", "job_01", st::job_status::queued, 100, "01-5"},
      core::get_task{"acme", "job_01", "row-7"},
      core::append_tasks{"job_01", test::admit::as_is(append)},
      core::worker_call{test::admit::as_is(complete)},
      core::get_jwks{},
      core::rotate_keys{},
      core::create_file{test::admit::as_is(staged_file{
          {"file-01", "acme", "in.jsonl", "batch", 10, 1, 2}, "/data/files/uploads/u-1", 3600})},
      core::get_file{"acme", "file-01"},
      core::list_files{"acme", "batch", true, "file-00", 500},
      core::delete_file{"acme", "file-02"},
      core::create_batch{test::admit::as_is(full_batch_request())},
      core::get_batch{"acme", "batch_01"},
      core::list_batches{"acme", "batch_00", 20},
      core::cancel_batch{"acme", "batch_01"}};
}

std::vector<core::reply> every_reply() {
  return {sy::error{"job_not_found", "no job with id 'job_9'", "id"},
          core::done{},
          submit_outcome{job("job_01"), true},
          job("job_02"),
          event_batch{job("job_01"), {event(1)}},
          job_page{{job("job_01")}, true},
          task_page{job("job_01"), {task_record(3)}, true},
          lease_reply{{leased_task{"01-0", "job_01", 1, "{}", 5, 6, "tok", "tp", "ts"}}},
          heartbeat_answer{7, "fresh", true},
          storage_credentials{"a", "b", "c", "d", "e", "f"},
          std::string(R"({"keys":[]})"),
          st::file_record{"file-01", "acme", "in.jsonl", "batch", 10, 1, 2},
          file_page{{{"file-01", "acme", "in.jsonl", "batch", 10, 1, 2}}, true},
          batch("batch_01"),
          batch_page{{batch("batch_02")}, false}};
}

TEST(core_messages, every_request_and_every_reply_crosses_as_bytes_unchanged) {
  auto requests = every_request();
  ASSERT_EQ(requests.size(), std::variant_size_v<core::request>);
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(requests[i].index(), i);
    auto back = core::decode_request(core::encode(requests[i]));
    ASSERT_TRUE(back.ok()) << i << ": " << back.error().message;
    EXPECT_TRUE(*back == requests[i]) << "request alternative " << i;
  }
  auto replies = every_reply();
  ASSERT_EQ(replies.size(), std::variant_size_v<core::reply>);
  for (size_t i = 0; i < replies.size(); ++i) {
    ASSERT_EQ(replies[i].index(), i);
    auto back = core::decode_reply(core::encode(replies[i]));
    ASSERT_TRUE(back.ok()) << i << ": " << back.error().message;
    EXPECT_TRUE(*back == replies[i]) << "reply alternative " << i;
  }
}

TEST(core_messages, bytes_of_another_version_or_cut_short_or_with_a_tail_are_refused) {
  const std::string good = core::encode(core::request{core::get_job{"acme", "job_01"}});
  EXPECT_EQ(core::decode_request("").error().code, "invalid_request");
  std::string other = good;
  other[0] = 2;
  EXPECT_EQ(core::decode_request(other).error().code, "invalid_request");
  EXPECT_EQ(core::decode_request(good.substr(0, good.size() - 1)).error().code, "invalid_request");
  EXPECT_EQ(core::decode_request(good + "x").error().code, "invalid_request");
  std::string past = good;
  past[1] = static_cast<char>(std::variant_size_v<core::request>);  // an index past the end
  EXPECT_EQ(core::decode_request(past).error().code, "invalid_request");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
