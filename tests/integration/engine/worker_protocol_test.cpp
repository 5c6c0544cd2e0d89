// External workers (docs/workers.md): a job for a runtime is leased by a worker over the
// internal listener, with a capability token for that attempt only; the worker heartbeats,
// completes or fails, and an attempt that ran out or ended is fenced out. Real engine, real
// NATS, real LMDB, both real listeners; the worker is this test speaking HTTP.

#include <chrono>
#include <future>
#include <string>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "config/sha256.hpp"
#include "runtime/es256.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/worker_calls.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;
using std::chrono::milliseconds;

void use_runtime(engine_env& env, int64_t lease_ttl_ms, int max_attempts = 3) {
  env.settings().runtimes["demo"] = config::runtime_settings{lease_ttl_ms, max_attempts};
}

json submit(http_client& c, json input, const std::map<std::string, std::string>& h = {}) {
  auto r = c.post_json("/v1/jobs", {{"runtime", "demo"}, {"input", std::move(input)}}, h);
  EXPECT_TRUE(r.status == 201 || r.status == 202) << r.status << " " << r.body;
  return r.json();
}

/// One lease call; the tasks it got.
json lease(http_client& w, int max_tasks = 1, int wait_ms = 10'000,
           const std::map<std::string, std::string>& h = {}) {
  auto r = w.post_json("/v1/task/lease",
                       {{"runtime", "demo"}, {"max_tasks", max_tasks}, {"wait_ms", wait_ms}}, h);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json()["tasks"];
}

http_reply call(http_client& w, const std::string& route, const std::string& token, json body) {
  return w.post_json("/v1/task/" + route, body, {{cap, token}});
}

TEST(workers, a_long_poll_ends_when_the_engine_clock_passes_its_wait) {
  engine_env env;
  auto& clock = env.use_manual_clock();
  use_runtime(env, 600'000);
  env.start();
  const int64_t due = clock.now_ms() + 10'000;
  auto poll = std::async(std::launch::async, [&] {
    http_client w(env.internal_port());
    return lease(w, 1, 10'000);
  });
  // The poll waits on a timer of the engine's clock, not on the wall clock.
  // (Its own timer: others, armed as the engine starts, may come in the meantime.)
  ASSERT_TRUE(wait_for([&] { return clock.armed_due_at(due) > 0; }));
  clock.advance(9'999);
  EXPECT_EQ(poll.wait_for(milliseconds(300)), std::future_status::timeout)
      << "the poll ended before the engine's clock passed its wait";
  clock.advance(1);
  // At once: a wall-clock wait would still have about 9 s to go.
  ASSERT_EQ(poll.wait_for(std::chrono::seconds(3)), std::future_status::ready);
  EXPECT_TRUE(poll.get().empty());
}

TEST(workers, a_worker_leases_a_job_completes_it_and_the_job_holds_its_output) {
  engine_env env;
  use_runtime(env, 5'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto job = submit(c, {{"text", "hello"}});
  EXPECT_EQ(job["runtime"], "demo");
  EXPECT_TRUE(job["model"].is_null());
  auto tasks = lease(w);
  ASSERT_EQ(tasks.size(), 1u);
  const auto& t = tasks[0];
  EXPECT_EQ(t["job_id"], job["id"]);
  EXPECT_EQ(t["attempt"], 1);
  EXPECT_EQ(t["input"], (json{{"text", "hello"}}));
  EXPECT_EQ(t["lease_ttl_ms"], 5'000);
  EXPECT_EQ(c.get("/v1/jobs/" + job["id"].get<std::string>()).json()["status"], "in_progress");
  auto done = call(w, "complete", t["capability_token"], {{"output", {{"text", "HELLO"}}}});
  ASSERT_EQ(done.status, 200) << done.body;
  auto end = env.wait_terminal(c, job["id"]);
  EXPECT_EQ(end["status"], "completed");
  EXPECT_EQ(end["attempts"], 1);
  EXPECT_EQ(end["result"]["body"], (json{{"text", "HELLO"}}));
  // Exactly one outcome per attempt: a second one is refused and changes nothing.
  auto again = call(w, "complete", t["capability_token"], {{"output", "other"}});
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(code_of(again), "stale_attempt");
  EXPECT_EQ(c.get("/v1/jobs/" + job["id"].get<std::string>()).json()["result"]["body"],
            (json{{"text", "HELLO"}}));
}

TEST(workers, each_listener_serves_only_its_own_routes) {
  engine_env env;
  use_runtime(env, 5'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto on_public = c.post_json("/v1/task/lease", {{"runtime", "demo"}});
  EXPECT_EQ(on_public.status, 404);
  EXPECT_EQ(c.get("/internal/jwks/task").status, 404);
  EXPECT_EQ(w.get("/v1/jobs").status, 404);
  EXPECT_EQ(w.post_json("/v1/jobs", {{"runtime", "demo"}, {"input", 1}}).status, 404);
  EXPECT_EQ(w.get("/healthz").status, 200);
}

TEST(workers, bad_jobs_and_bad_calls_get_clear_errors_and_change_nothing) {
  engine_env env;
  use_runtime(env, 5'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto unknown = c.post_json("/v1/jobs", {{"runtime", "nope"}, {"input", 1}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(code_of(unknown), "runtime_not_found");
  auto no_input = c.post_json("/v1/jobs", {{"runtime", "demo"}});
  EXPECT_EQ(no_input.status, 400);
  EXPECT_EQ(no_input.json()["error"]["param"], "input");
  auto mixed =
      c.post_json("/v1/jobs", {{"runtime", "demo"}, {"input", 1}, {"body", json::object()}});
  EXPECT_EQ(mixed.status, 400);
  EXPECT_EQ(mixed.json()["error"]["param"], "body");
  auto model =
      c.post_json("/v1/jobs", {{"endpoint", "/v1/chat/completions"},
                               {"body", {{"model", "runtime:demo"}, {"messages", json::array()}}}});
  EXPECT_EQ(model.status, 400);
  EXPECT_EQ(c.get("/v1/jobs").json()["data"].size(), 0u);
  // Worker calls: an unknown runtime, bounds, a missing or forged token.
  auto r = w.post_json("/v1/task/lease", {{"runtime", "nope"}});
  EXPECT_EQ(code_of(r), "runtime_not_found");
  r = w.post_json("/v1/task/lease", {{"runtime", "demo"}, {"max_tasks", 101}});
  EXPECT_EQ(r.status, 400);
  r = w.post_json("/v1/task/lease", {{"runtime", "demo"}, {"wait_ms", 30'001}});
  EXPECT_EQ(r.status, 400);
  r = w.post_json("/v1/task/complete", {{"output", 1}});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(code_of(r), "invalid_capability_token");
  EXPECT_EQ(call(w, "complete", "not.a.token", {{"output", 1}}).status, 401);
  // A token signed by a key the engine never published.
  auto job = submit(c, 1);
  auto t = lease(w)[0];
  const std::string real = t["capability_token"];
  auto foreign_key = runtime::es256_key::generate();
  ASSERT_TRUE(foreign_key);
  const auto payload = json::parse(*runtime::base64url_decode(
      real.substr(real.find('.') + 1, real.rfind('.') - real.find('.') - 1)));
  auto forged = foreign_key->sign({{"typ", "JWT"}}, payload);
  ASSERT_TRUE(forged);
  r = call(w, "complete", *forged, {{"output", "forged"}});
  EXPECT_EQ(r.status, 401) << r.body;
  // The real signature over claims rewritten to name another task (a replay elsewhere).
  auto other = submit(c, 2);
  auto claims = payload;
  claims["task_id"] = other["id"].get<std::string>().substr(4) + "-0";
  claims["sub"] = "task:" + claims["task_id"].get<std::string>();
  const std::string replayed = real.substr(0, real.find('.') + 1) +
                               runtime::base64url_encode(claims.dump()) +
                               real.substr(real.rfind('.'));
  r = call(w, "complete", replayed, {{"output", "replayed"}});
  EXPECT_EQ(r.status, 401) << r.body;
  r = call(w, "fail", real, {{"error", {{"code", "bad code!"}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(c.get("/v1/jobs/" + job["id"].get<std::string>()).json()["status"], "in_progress");
  ASSERT_EQ(call(w, "complete", real, {{"output", "real"}}).status, 200);
  EXPECT_EQ(env.wait_terminal(c, job["id"])["result"]["body"], "real");
}

TEST(workers, a_lease_that_runs_out_is_fenced_and_the_task_runs_again) {
  engine_env env;
  use_runtime(env, 1'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto job = submit(c, {{"n", 1}});
  auto first = lease(w)[0];
  ASSERT_EQ(first["attempt"], 1);
  // No heartbeat: the reaper takes the task back and it is leased again as attempt 2.
  auto second = lease(w, 1, 10'000);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0]["attempt"], 2);
  // The first worker comes back late: its lease has ended, so it is refused.
  // The first worker comes back late: once its token's lease end has passed it is refused as
  // expired. Meanwhile the second one heartbeats, so its lease holds.
  const int64_t first_end_ms = first["lease_expires_at"].get<int64_t>() * 1000 + 1000;
  std::string token = second[0]["capability_token"];
  auto beat_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for([&] {
    if (std::chrono::steady_clock::now() >= beat_at) {
      auto hb = call(w, "heartbeat", token, json::object());
      EXPECT_EQ(hb.status, 200) << hb.body;
      if (hb.status == 200) token = hb.json()["capability_token"];
      beat_at = std::chrono::steady_clock::now() + milliseconds(150);
    }
    return std::chrono::duration_cast<milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count() >= first_end_ms;
  }));
  auto late = call(w, "complete", first["capability_token"], {{"output", "late"}});
  EXPECT_EQ(late.status, 409);
  EXPECT_EQ(code_of(late), "lease_expired");
  auto hb = call(w, "heartbeat", first["capability_token"], json::object());
  EXPECT_EQ(hb.status, 409);
  ASSERT_EQ(call(w, "complete", token, {{"output", "on time"}}).status, 200);
  auto end = env.wait_terminal(c, job["id"]);
  EXPECT_EQ(end["status"], "completed");
  EXPECT_EQ(end["attempts"], 2);
  EXPECT_EQ(end["result"]["body"], "on time");
}

TEST(workers, heartbeats_keep_a_long_task_and_each_returns_a_fresh_token) {
  engine_env env;
  use_runtime(env, 1'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto job = submit(c, "long");
  auto t = lease(w)[0];
  std::string token = t["capability_token"];
  const auto until = std::chrono::steady_clock::now() + milliseconds(3'000);
  int beats = 0;
  while (std::chrono::steady_clock::now() < until) {
    const auto next = std::chrono::steady_clock::now() + milliseconds(200);
    auto hb = call(w, "heartbeat", token, json::object());
    ASSERT_EQ(hb.status, 200) << hb.body;
    EXPECT_FALSE(hb.json()["cancel_requested"].get<bool>());
    token = hb.json()["capability_token"];
    ++beats;
    ASSERT_TRUE(wait_for([&] { return std::chrono::steady_clock::now() >= next; }));
  }
  EXPECT_GE(beats, 5);
  ASSERT_EQ(call(w, "complete", token, {{"output", "done"}}).status, 200);
  auto end = env.wait_terminal(c, job["id"]);
  EXPECT_EQ(end["status"], "completed");
  EXPECT_EQ(end["attempts"], 1);  // never taken back, though it ran three leases long
}

TEST(workers, a_retryable_failure_runs_again_and_a_final_one_fails_the_job) {
  engine_env env;
  use_runtime(env, 5'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto job = submit(c, "x");
  auto t = lease(w)[0];
  auto r = call(w, "fail", t["capability_token"],
                {{"error", {{"code", "disk_full"}, {"message", "no space"}}}, {"retryable", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto t2 = lease(w)[0];
  EXPECT_EQ(t2["attempt"], 2);
  r = call(w, "fail", t2["capability_token"],
           {{"error", {{"code", "bad_image"}, {"message", "not a PNG"}}}, {"retryable", false}});
  ASSERT_EQ(r.status, 200);
  auto end = env.wait_terminal(c, job["id"]);
  EXPECT_EQ(end["status"], "failed");
  EXPECT_EQ(end["error"]["code"], "bad_image");
  EXPECT_EQ(end["attempts"], 2);
}

TEST(workers, a_cancelled_job_tells_its_worker_at_the_next_heartbeat) {
  engine_env env;
  use_runtime(env, 5'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto job = submit(c, "x");
  const std::string id = job["id"];
  auto t = lease(w)[0];
  ASSERT_EQ(c.post_json("/v1/jobs/" + id + "/cancel", json::object()).status, 200);
  auto hb = call(w, "heartbeat", t["capability_token"], json::object());
  ASSERT_EQ(hb.status, 200);
  EXPECT_TRUE(hb.json()["cancel_requested"].get<bool>());
  ASSERT_EQ(call(w, "fail", hb.json()["capability_token"],
                 {{"error", {{"code", "cancelled"}}}, {"retryable", false}})
                .status,
            200);
  EXPECT_EQ(env.wait_terminal(c, id)["status"], "cancelled");
}

TEST(workers, a_lease_waits_for_work_and_takes_several_tasks_at_once) {
  engine_env env;
  use_runtime(env, 5'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  EXPECT_EQ(lease(w, 5, 300).size(), 0u);  // nothing queued: empty after the wait
  for (int i = 0; i < 3; ++i) submit(c, i);
  json got = json::array();
  ASSERT_TRUE(wait_for([&] {
    const json more = lease(w, 5, 1'000);
    for (const auto& t : more) got.push_back(t);
    return got.size() >= 3;
  }));
  EXPECT_EQ(got.size(), 3u);
  for (auto& t : got)
    EXPECT_EQ(call(w, "complete", t["capability_token"], {{"output", t["input"]}}).status, 200);
}

/// Sends a lease that waits `wait_ms`, half-closes the connection (the worker is gone as far as
/// the server can tell) and returns everything the server wrote until it closed.
std::string lease_then_leave(uint16_t port, int wait_ms) {
  namespace asio = boost::asio;
  asio::io_context ioc;
  asio::ip::tcp::socket s(ioc);
  s.connect({asio::ip::make_address("127.0.0.1"), port});
  const std::string body = json{{"runtime", "demo"}, {"max_tasks", 1}, {"wait_ms", wait_ms}}.dump();
  const std::string req =
      "POST /v1/task/lease HTTP/1.1\r\nHost: test\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  asio::write(s, asio::buffer(req));
  s.shutdown(asio::ip::tcp::socket::shutdown_send);
  std::string got;
  boost::system::error_code ec;
  asio::read(s, asio::dynamic_buffer(got), ec);  // until the server closes (eof)
  return got;
}

TEST(workers, a_worker_that_leaves_its_long_poll_is_leased_nothing) {
  engine_env env;
  use_runtime(env, 60'000);  // a task leased to nobody would stay away for a minute
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  // The server sees the worker leave while its poll waits: the poll ends at once, empty, well
  // before its 10 s (before this fix it waited them out and took the next task).
  const auto t0 = std::chrono::steady_clock::now();
  const std::string answer = lease_then_leave(env.internal_port(), 10'000);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_NE(answer.find("200 OK"), std::string::npos) << answer;
  EXPECT_NE(answer.find(R"({"tasks":[]})"), std::string::npos) << answer;
  // The next task goes to a worker that is there, on its first attempt.
  auto job = submit(c, "after");
  auto tasks = lease(w, 1, 10'000);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0]["job_id"], job["id"]);
  EXPECT_EQ(tasks[0]["attempt"], 1);
  EXPECT_EQ(call(w, "complete", tasks[0]["capability_token"], {{"output", "ok"}}).status, 200);
  EXPECT_EQ(env.wait_terminal(c, job["id"])["attempts"], 1);
}

TEST(workers, the_jwks_publishes_the_key_that_signs_the_tokens) {
  engine_env env;
  use_runtime(env, 5'000);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  submit(c, "x");
  const std::string token = lease(w)[0]["capability_token"];
  auto header = json::parse(*runtime::base64url_decode(token.substr(0, token.find('.'))));
  auto jwks = w.get("/internal/jwks/task");
  ASSERT_EQ(jwks.status, 200);
  bool found = false;
  const json doc = jwks.json();
  for (const auto& k : doc["keys"]) {
    found = found || k["kid"] == header["kid"];
    EXPECT_EQ(k["kty"], "EC");
    EXPECT_FALSE(k.contains("d"));  // never the private part
  }
  EXPECT_TRUE(found) << jwks.body << " " << header.dump();
}

TEST(workers, only_a_worker_key_leases_and_a_worker_key_is_not_a_client_key) {
  engine_env env;
  use_runtime(env, 5'000);
  env.settings().api_keys = {{config::sha256_hex("client-key"), "acme", "client"},
                             {config::sha256_hex("worker-key"), "", "worker"},
                             {config::sha256_hex("admin-key"), "", "admin"}};
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto as_worker = std::map<std::string, std::string>{{"Authorization", "Bearer worker-key"}};
  auto as_client = std::map<std::string, std::string>{{"Authorization", "Bearer client-key"}};
  EXPECT_EQ(c.post_json("/v1/jobs", {{"runtime", "demo"}, {"input", 1}}, as_worker).status, 401);
  submit(c, 1, as_client);
  auto r = w.post_json("/v1/task/lease", {{"runtime", "demo"}}, as_client);
  EXPECT_EQ(r.status, 401);
  r = w.post_json("/v1/task/lease", {{"runtime", "demo"}});
  EXPECT_EQ(code_of(r), "missing_api_key");
  ASSERT_EQ(lease(w, 1, 5'000, as_worker).size(), 1u);
  // A key rotation takes an admin key; the admin key leases nothing.
  auto as_admin = std::map<std::string, std::string>{{"Authorization", "Bearer admin-key"}};
  EXPECT_EQ(w.post_json("/internal/keys/rotate", json::object(), as_worker).status, 401);
  EXPECT_EQ(w.post_json("/internal/keys/rotate", json::object()).status, 401);
  EXPECT_EQ(w.get("/internal/jwks/task").json()["keys"].size(), 1u);
  auto rotated = w.post_json("/internal/keys/rotate", json::object(), as_admin);
  ASSERT_EQ(rotated.status, 200) << rotated.body;
  EXPECT_EQ(rotated.json()["jwks"]["keys"].size(), 2u);
  EXPECT_EQ(w.post_json("/v1/task/lease", {{"runtime", "demo"}}, as_admin).status, 401);
  EXPECT_EQ(c.get("/v1/jobs", as_admin).status, 401);
}

std::string kid_of(const std::string& token) {
  return json::parse(*runtime::base64url_decode(token.substr(0, token.find('.'))))["kid"];
}

size_t published_keys(http_client& w) { return w.get("/internal/jwks/task").json()["keys"].size(); }

TEST(workers, keys_rotate_on_time_and_tokens_of_the_old_key_verify_across_a_restart) {
  engine_env env;
  auto& clock = env.use_manual_clock();
  use_runtime(env, 600'000);  // the lease outlives the rotations below
  env.settings().signing_key_rotation_ms = 60'000;
  env.start();
  http_client c(env.port());
  auto job = submit(c, "x");
  std::string old_token;
  {
    http_client w(env.internal_port());
    old_token = lease(w)[0]["capability_token"];
    const std::string first_kid = kid_of(old_token);
    EXPECT_EQ(published_keys(w), 1u);
    // The minter's timer: a new key, published at once, signing a minute later.
    clock.advance(60'000);
    ASSERT_TRUE(wait_for([&] {
      if (published_keys(w) >= 2) return true;
      clock.advance(100);
      return false;
    }));
    auto hb = call(w, "heartbeat", old_token, json::object());
    ASSERT_EQ(hb.status, 200) << hb.body;
    EXPECT_EQ(kid_of(hb.json()["capability_token"]), first_kid);  // not signing yet
    old_token = hb.json()["capability_token"];
    clock.advance(61'000);
    hb = call(w, "heartbeat", old_token, json::object());
    ASSERT_EQ(hb.status, 200) << hb.body;
    EXPECT_NE(kid_of(hb.json()["capability_token"]), first_kid);  // the new key signs now
  }
  // The keys live in files: after a restart the old key's token still verifies.
  env.stop();
  env.start();
  http_client w(env.internal_port());
  auto done = call(w, "complete", old_token, {{"output", "rotated"}});
  ASSERT_EQ(done.status, 200) << done.body;
  http_client after(env.port());
  EXPECT_EQ(env.wait_terminal(after, job["id"])["result"]["body"], "rotated");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
