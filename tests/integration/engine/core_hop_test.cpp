// The core's messages cross a process boundary as they will between cluster nodes: a client
// admits its requests on its side (as the node that received them would), sends the encoded
// message over NATS request-reply on the loopback, and the engine's bridge serves it and sends the
// encoded answer back (api/core_bridge.hpp). A submission, a read, a wait, a cancel, a worker's
// lease and completion, and an error each make the hop; the job the hop made is the one HTTP sees.

#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <nats/nats.h>

#include "api/admission.hpp"
#include "api/core_bridge.hpp"
#include "tests/integration/engine/engine_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

namespace core = actors::core;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* subject = "sy.core.node-test";

class core_hop : public ::testing::Test {
 protected:
  void SetUp() override {
    env.settings().runtimes["demo"] = config::runtime_settings{60'000, 3};
    env.start();
    ASSERT_EQ(natsConnection_ConnectTo(&server_nc, env.nats().url().c_str()), NATS_OK);
    ASSERT_EQ(natsConnection_ConnectTo(&client_nc, env.nats().url().c_str()), NATS_OK);
    core_ =
        std::make_unique<core::local_client>(env.engine(), &env.engine(), &env.engine().batches());
    auto b = api::core_bridge::start(server_nc, subject, *core_);
    ASSERT_TRUE(b.ok()) << b.error().message;
    bridge = std::move(*b);
  }
  void TearDown() override {
    if (bridge) bridge->stop();
    natsConnection_Destroy(client_nc);
    natsConnection_Destroy(server_nc);
  }

  /// Sends `r` over the hop; the answer's alternative T (failing the test on an error).
  template <class T>
  T ask(core::request r) {
    auto answer = api::call_core(client_nc, subject, r, milliseconds(20'000));
    EXPECT_TRUE(answer.ok()) << (answer ? "" : answer.error().message);
    if (!answer) return T{};
    if (auto* e = std::get_if<sy::error>(&*answer)) ADD_FAILURE() << e->code << ": " << e->message;
    auto* v = std::get_if<T>(&*answer);
    EXPECT_NE(v, nullptr) << "the answer is alternative " << answer->index();
    return v ? std::move(*v) : T{};
  }

  actors::admitted<actors::submission> job(const json& body) {
    const std::string text = body.dump();
    api::client_request r;
    r.body = text;
    auto s = admission.job(r);
    EXPECT_TRUE(s.ok()) << (s ? "" : s.error().message);
    return std::move(*s);
  }

  actors::admitted<actors::worker_request> worker(actors::worker_request::kind what,
                                                  const json& body, const std::string& token) {
    const std::string text = body.dump();
    auto w = admission.worker_call(what, text, "", token);
    EXPECT_TRUE(w.ok()) << (w ? "" : w.error().message);
    return std::move(*w);
  }

  engine_env env;
  api::admission admission{env.settings()};
  natsConnection* server_nc = nullptr;
  natsConnection* client_nc = nullptr;
  std::unique_ptr<core::local_client> core_;
  std::unique_ptr<api::core_bridge> bridge;
};

TEST_F(core_hop, a_submission_and_its_reads_cross_and_the_job_is_the_one_http_sees) {
  auto made = ask<actors::submit_outcome>(core::submit_job{
      job({{"endpoint", "/v1/chat/completions"},
           {"body",
            {{"model", "test-model"}, {"messages", {{{"role", "user"}, {"content", "hop"}}}}}}})});
  ASSERT_TRUE(made.created);
  const std::string id = made.job.id;
  EXPECT_EQ(made.job.model, "test-model");
  auto done = ask<storage::job_record>(core::wait_job{"default", id, 20'000});
  EXPECT_EQ(done.status, storage::job_status::completed);
  ASSERT_TRUE(done.result.has_value());
  EXPECT_NE(done.result->body.find("echo: hop"), std::string::npos) << done.result->body;
  auto read = ask<storage::job_record>(core::get_job{"default", id});
  EXPECT_EQ(read, done);
  auto page = ask<actors::job_page>(
      core::list_jobs{"default", storage::job_status::completed, 10, "", std::nullopt});
  ASSERT_EQ(page.jobs.size(), 1u);
  EXPECT_EQ(page.jobs[0].id, id);
  http_client c(env.port());
  EXPECT_EQ(env.wait_terminal(c, id)["status"], "completed");
}

TEST_F(core_hop, a_cancel_and_a_workers_lease_and_completion_cross) {
  auto queued = ask<actors::submit_outcome>(
      core::submit_job{job({{"runtime", "demo"}, {"input", {{"n", 1}}}})});
  auto cancelled = ask<storage::job_record>(core::cancel_job{"default", queued.job.id});
  EXPECT_EQ(cancelled.status, storage::job_status::cancelled);

  auto work = ask<actors::submit_outcome>(
      core::submit_job{job({{"runtime", "demo"}, {"input", {{"n", 2}}}})});
  auto lease = ask<actors::lease_reply>(core::worker_call{
      worker(actors::worker_request::kind::lease, {{"runtime", "demo"}, {"wait_ms", 10'000}}, "")});
  ASSERT_EQ(lease.tasks.size(), 1u);
  EXPECT_EQ(lease.tasks[0].job_id, work.job.id);
  EXPECT_EQ(json::parse(lease.tasks[0].input), json({{"n", 2}}));
  ask<core::done>(
      core::worker_call{worker(actors::worker_request::kind::complete,
                               {{"output", {{"doubled", 4}}}}, lease.tasks[0].capability_token)});
  auto finished = ask<storage::job_record>(core::get_job{"default", work.job.id});
  EXPECT_EQ(finished.status, storage::job_status::completed);
  ASSERT_TRUE(finished.result.has_value());
  EXPECT_EQ(json::parse(finished.result->body), json({{"doubled", 4}}));
}

TEST_F(core_hop, the_cores_errors_and_undecodable_bytes_come_back_as_errors) {
  auto missing =
      api::call_core(client_nc, subject, core::get_job{"default", "job_nope"}, milliseconds(5'000));
  ASSERT_TRUE(missing.ok());
  auto* e = std::get_if<sy::error>(&*missing);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, "job_not_found");
  // Another tenant's job does not exist for it, across the hop as over HTTP.
  auto made = ask<actors::submit_outcome>(
      core::submit_job{job({{"runtime", "demo"}, {"input", json::object()}})});
  auto other = api::call_core(client_nc, subject, core::get_job{"someone-else", made.job.id},
                              milliseconds(5'000));
  ASSERT_TRUE(other.ok());
  ASSERT_NE(std::get_if<sy::error>(&*other), nullptr);
  // Bytes that are no request: the bridge answers with the decoder's error.
  natsMsg* answer = nullptr;
  ASSERT_EQ(natsConnection_RequestString(&answer, client_nc, subject, "garbage", 5'000), NATS_OK);
  auto decoded = actors::core::decode_reply(std::string_view(
      natsMsg_GetData(answer), static_cast<size_t>(natsMsg_GetDataLength(answer))));
  natsMsg_Destroy(answer);
  ASSERT_TRUE(decoded.ok());
  auto* refused = std::get_if<sy::error>(&*decoded);
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->code, "invalid_request");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
