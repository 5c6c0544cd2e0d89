// Minted credentials against a real S3 + STS server (issue 19 item 6): a session policy derived
// from a task's grants (config/s3_scope), AssumeRole signed by runtime/sts + runtime/sigv4, then
// S3 requests signed with the minted credentials — allowed inside the granted prefixes, refused
// everywhere else (another prefix, another tenant's prefix, another bucket, listing without the
// prefix).

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "config/s3_scope.hpp"
#include "runtime/sts.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

/// The server of ../shared/tools/s3-sts-up, started by the suite's first test and shared.
/// Started in SetUp, not SetUpTestSuite: a failure there fails the test, where gtest would mark
/// the tests skipped (and ctest report them as skipped, not failed).
class s3_sts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (port_ == 0) start();
    ASSERT_NE(port_, 0) << "the S3 + STS server did not start (see the first test's failure)";
  }
  static void start() {
    dir_ = new temp_dir();
    tools_ = std::string(SY_SOURCE_DIR) + "/../shared/tools";
    {
      child_process up(
          {"/bin/sh", "-c", tools_ + "/s3-sts-up " + dir_->sub("srv") + " > " + dir_->sub("env")},
          dir_->sub("up.log"));
      const int st = up.wait(std::chrono::seconds(240));
      ASSERT_EQ(st, 0) << "s3-sts-up failed (see " << dir_->sub("up.log") << "): " << up.log();
    }
    std::ifstream in(dir_->sub("env"));
    for (std::string line; std::getline(in, line);) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) env_[line.substr(0, eq)] = line.substr(eq + 1);
    }
    ASSERT_TRUE(env_.count("S3_ENDPOINT") && env_.count("ROLE_ARN")) << "no endpoint in env";
    const auto& ep = env_["S3_ENDPOINT"];  // http://127.0.0.1:PORT
    host_ = ep.substr(ep.find("//") + 2);
    port_ = static_cast<uint16_t>(std::stoi(host_.substr(host_.find(':') + 1)));
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) {
      child_process down({"/bin/sh", "-c", tools_ + "/s3-sts-down " + dir_->sub("srv")},
                         dir_->sub("down.log"));
      down.wait(std::chrono::seconds(60));
    }
    delete dir_;
    dir_ = nullptr;
  }

  static runtime::aws_credentials minter() {
    return {env_["MINTER_ACCESS_KEY"], env_["MINTER_SECRET_KEY"], ""};
  }

  /// One S3 request, path-style, signed with `c`.
  static http_reply s3(const runtime::aws_credentials& c, const std::string& method,
                       const std::string& path,
                       const std::vector<std::pair<std::string, std::string>>& query = {},
                       const std::string& body = {}) {
    runtime::sigv4_request r{method, path, query, {{"Host", host_}}, body};
    auto s = runtime::sigv4_sign(r, c, {env_["S3_REGION"], "s3", std::time(nullptr), true});
    std::string target = path;
    std::vector<std::pair<std::string, std::string>> q;
    for (const auto& [k, v] : query)
      q.emplace_back(runtime::sigv4_uri_encode(k), runtime::sigv4_uri_encode(v));
    std::sort(q.begin(), q.end());
    for (size_t i = 0; i < q.size(); ++i)
      target += (i == 0 ? "?" : "&") + q[i].first + "=" + q[i].second;
    std::map<std::string, std::string> headers{{"Host", host_},
                                               {"Content-Type", "application/octet-stream"}};
    for (const auto& [k, v] : s.headers) headers[k] = v;
    http_client client(port_);
    return client.request(method, target, body, headers);
  }

  static inline temp_dir* dir_ = nullptr;
  static inline std::string tools_;
  static inline std::map<std::string, std::string> env_;
  static inline std::string host_;
  static inline uint16_t port_ = 0;
};

config::s3_prefix prefix(const std::string& uri) { return *config::parse_s3_prefix(uri); }

TEST_F(s3_sts, minted_credentials_work_inside_their_prefixes_and_nowhere_else) {
  // The minter's own setup: two buckets and an object in each tenant's input prefix.
  for (const char* b : {"/data", "/other"}) {
    auto r = s3(minter(), "PUT", b);
    ASSERT_TRUE(r.status == 200 || r.status == 409) << b << ": " << r.status << " " << r.body;
  }
  for (const char* key :
       {"/data/tenant-a/in/x.txt", "/data/tenant-b/in/y.txt", "/other/tenant-a/in/x.txt"})
    ASSERT_EQ(s3(minter(), "PUT", key, {}, "seed").status, 200) << key;

  config::s3_grants g;
  g.read = {prefix("s3://data/tenant-a/in/")};
  g.write = {prefix("s3://data/tenant-a/out/")};
  const std::string policy = config::s3_session_policy(g).dump();  // compact JSON
  runtime::sts_target t{host_, env_["S3_REGION"], env_["ROLE_ARN"], minter()};
  auto call = runtime::assume_role_request(t, {"task-t1-1", policy, 900}, std::time(nullptr));
  std::map<std::string, std::string> headers(call.headers.begin(), call.headers.end());
  http_client sts(port_);
  auto answer = sts.request(call.method, call.target, call.body, headers);
  auto minted = runtime::parse_assume_role_response(answer.status, answer.body);
  ASSERT_TRUE(minted.ok()) << minted.error().message << "\n" << answer.body;
  const auto& c = minted->credentials;
  EXPECT_FALSE(minted->expiration.empty());

  // Allowed: read the input, write the output, list the input prefix.
  auto got = s3(c, "GET", "/data/tenant-a/in/x.txt");
  EXPECT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.body, "seed");
  EXPECT_EQ(s3(c, "PUT", "/data/tenant-a/out/z", {}, "result").status, 200);
  EXPECT_EQ(s3(c, "GET", "/data", {{"list-type", "2"}, {"prefix", "tenant-a/in/"}}).status, 200);
  // Refused: writing the input, another tenant's prefixes, another bucket, a wider listing.
  EXPECT_EQ(s3(c, "PUT", "/data/tenant-a/in/z", {}, "x").status, 403);
  EXPECT_EQ(s3(c, "GET", "/data/tenant-b/in/y.txt").status, 403);
  EXPECT_EQ(s3(c, "PUT", "/data/tenant-b/out/z", {}, "x").status, 403);
  EXPECT_EQ(s3(c, "GET", "/other/tenant-a/in/x.txt").status, 403);
  EXPECT_EQ(s3(c, "PUT", "/other/tenant-a/out/z", {}, "x").status, 403);
  EXPECT_EQ(s3(c, "GET", "/data", {{"list-type", "2"}}).status, 403);
  EXPECT_EQ(s3(c, "GET", "/data", {{"list-type", "2"}, {"prefix", "tenant-a/"}}).status, 403);
  EXPECT_EQ(s3(c, "GET", "/data", {{"list-type", "2"}, {"prefix", "tenant-b/in/"}}).status, 403);
  // The minter's own keys are not the minted ones; a wrong session token is refused.
  auto forged = c;
  forged.session_token = "x" + forged.session_token.substr(1);
  EXPECT_NE(s3(forged, "GET", "/data/tenant-a/in/x.txt").status, 200);
}

/// The whole path through the engine: a runtime job with grants, leased by a worker (this test,
/// over the internal listener), credentials minted by POST /v1/task/credentials, used against S3
/// — and none minted once the attempt has its outcome.
TEST_F(s3_sts, the_engine_mints_credentials_for_a_leased_attempt_and_not_after_it) {
  auto bucket = s3(minter(), "PUT", "/jobs");
  ASSERT_TRUE(bucket.status == 200 || bucket.status == 409) << bucket.status << " " << bucket.body;
  for (const char* key : {"/jobs/tenant-a/in/doc.txt", "/jobs/tenant-b/in/doc.txt"})
    ASSERT_EQ(s3(minter(), "PUT", key, {}, "input").status, 200) << key;
  engine_env env;
  auto& cfg = env.settings();
  cfg.runtimes["convert"] = config::runtime_settings{10'000, 3};
  cfg.tenant_storage_prefixes["default"] = {"s3://jobs/tenant-a/"};
  cfg.sts_endpoint = env_["STS_ENDPOINT"].empty() ? env_["S3_ENDPOINT"] : env_["STS_ENDPOINT"];
  cfg.sts_region = env_["S3_REGION"];
  cfg.sts_role_arn = env_["ROLE_ARN"];
  cfg.sts_access_key_id = env_["MINTER_ACCESS_KEY"];
  cfg.sts_secret_access_key = env_["MINTER_SECRET_KEY"];  // validate() reads it from its file
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto job = c.post_json(
      "/v1/jobs",
      {{"runtime", "convert"},
       {"input", {{"doc", "in/doc.txt"}}},
       {"grants", {{"read", {"s3://jobs/tenant-a/in/"}}, {"write", {"s3://jobs/tenant-a/out/"}}}}});
  ASSERT_EQ(job.status, 202) << job.body;
  auto leased = w.post_json("/v1/task/lease", {{"runtime", "convert"}, {"wait_ms", 10'000}});
  ASSERT_EQ(leased.status, 200) << leased.body;
  ASSERT_EQ(leased.json()["tasks"].size(), 1u) << leased.body;
  const std::string token = leased.json()["tasks"][0]["capability_token"];
  const std::map<std::string, std::string> with_token = {{"X-Switchyard-Task-Capability", token}};

  auto minted = w.post_json("/v1/task/credentials", json::object(), with_token);
  ASSERT_EQ(minted.status, 200) << minted.body;
  auto m = minted.json();
  EXPECT_EQ(m["endpoint"], cfg.sts_endpoint);
  EXPECT_EQ(m["region"], env_["S3_REGION"]);
  EXPECT_FALSE(m["expiration"].get<std::string>().empty());
  const runtime::aws_credentials creds{m["access_key_id"].get<std::string>(),
                                       m["secret_access_key"].get<std::string>(),
                                       m["session_token"].get<std::string>()};
  EXPECT_NE(creds.access_key_id, env_["MINTER_ACCESS_KEY"]);
  auto in = s3(creds, "GET", "/jobs/tenant-a/in/doc.txt");
  EXPECT_EQ(in.status, 200) << in.body;
  EXPECT_EQ(in.body, "input");
  EXPECT_EQ(s3(creds, "PUT", "/jobs/tenant-a/out/doc.txt", {}, "output").status, 200);
  EXPECT_EQ(s3(creds, "PUT", "/jobs/tenant-a/in/doc.txt", {}, "x").status, 403);
  EXPECT_EQ(s3(creds, "GET", "/jobs/tenant-b/in/doc.txt").status, 403);
  EXPECT_EQ(s3(creds, "GET", "/jobs", {{"list-type", "2"}, {"prefix", "tenant-a/"}}).status, 403);

  ASSERT_EQ(w.post_json("/v1/task/complete", {{"output", "out/doc.txt"}}, with_token).status, 200);
  auto after = w.post_json("/v1/task/credentials", json::object(), with_token);
  EXPECT_EQ(after.status, 409) << after.body;
  EXPECT_EQ(after.json()["error"]["code"], "stale_attempt");
  // What the worker wrote is there, for the minter's own keys to read.
  EXPECT_EQ(s3(minter(), "GET", "/jobs/tenant-a/out/doc.txt").body, "output");
}

/// The example workers (examples/workers/, Python and Node) as a user runs them: each leases a
/// task whose input asks it to write its output to S3, mints credentials for the attempt, PUTs
/// the object with them (its own SigV4) and completes; a write outside the grants is refused by
/// S3 and the task fails with the reason.
TEST_F(s3_sts, the_example_workers_mint_credentials_and_write_inside_their_grants_only) {
  auto bucket = s3(minter(), "PUT", "/results");
  ASSERT_TRUE(bucket.status == 200 || bucket.status == 409) << bucket.status << " " << bucket.body;
  engine_env env;
  auto& cfg = env.settings();
  cfg.runtimes["demo"] = config::runtime_settings{10'000, 1};
  cfg.tenant_storage_prefixes["default"] = {"s3://results/tenant-a/"};
  cfg.sts_endpoint = env_["S3_ENDPOINT"];
  cfg.sts_region = env_["S3_REGION"];
  cfg.sts_role_arn = env_["ROLE_ARN"];
  cfg.sts_access_key_id = env_["MINTER_ACCESS_KEY"];
  cfg.sts_secret_access_key = env_["MINTER_SECRET_KEY"];
  env.start();
  http_client c(env.port());
  const json grants = {{"write", {"s3://results/tenant-a/out/"}}};
  for (const std::string lang : {"python", "node"}) {
    auto job = [&](const std::string& key) {
      auto r = c.post_json(
          "/v1/jobs", {{"runtime", "demo"},
                       {"input", {{"text", "from " + lang}, {"write_to", "s3://results/" + key}}},
                       {"grants", grants}});
      EXPECT_EQ(r.status, 202) << r.body;
      return r.json().value("id", "");
    };
    const std::string inside = job("tenant-a/out/" + lang + ".txt");
    const std::string outside = job("tenant-a/in/" + lang + ".txt");
    const bool node = lang == "node";
    std::vector<std::string> argv = {
        node ? "/usr/bin/env" : "/usr/bin/python3",
        std::string(SY_SOURCE_DIR) +
            (node ? "/examples/workers/node/worker.mjs" : "/examples/workers/python/worker.py"),
        "--url",
        "http://127.0.0.1:" + std::to_string(env.internal_port()),
        "--runtime",
        "demo",
        "--max-tasks",
        "2",
        "--wait-ms",
        "1000"};
    if (node) argv.insert(argv.begin() + 1, "node");
    child_process worker(argv, dir_->sub("worker-" + lang + ".log"));
    auto done = env.wait_terminal(c, inside);
    EXPECT_EQ(done["status"], "completed") << done.dump() << worker.log();
    EXPECT_EQ(done["result"]["body"]["written"], "s3://results/tenant-a/out/" + lang + ".txt");
    EXPECT_EQ(s3(minter(), "GET", "/results/tenant-a/out/" + lang + ".txt").body,
              "FROM " + (node ? std::string("NODE") : std::string("PYTHON")));
    auto refused = env.wait_terminal(c, outside);
    EXPECT_EQ(refused["status"], "failed") << refused.dump();
    EXPECT_EQ(refused["error"]["code"], "storage_write_failed") << refused.dump();
    EXPECT_EQ(s3(minter(), "GET", "/results/tenant-a/in/" + lang + ".txt").status, 404);
    EXPECT_EQ(worker.wait(std::chrono::seconds(30)), 0) << worker.log();
    // The secret never reaches the worker's log or the job's output.
    EXPECT_EQ(worker.log().find("secret_access_key\":"), std::string::npos);
  }
}

TEST_F(s3_sts, an_assume_role_the_server_refuses_says_why) {
  runtime::sts_target t{host_,
                        env_["S3_REGION"],
                        env_["ROLE_ARN"],
                        {env_["MINTER_ACCESS_KEY"], "not-the-secret", ""}};
  auto call = runtime::assume_role_request(
      t, {"task-t1-1", R"({"Version":"2012-10-17","Statement":[]})", 900}, std::time(nullptr));
  std::map<std::string, std::string> headers(call.headers.begin(), call.headers.end());
  http_client sts(port_);
  auto answer = sts.request(call.method, call.target, call.body, headers);
  auto minted = runtime::parse_assume_role_response(answer.status, answer.body);
  ASSERT_FALSE(minted.ok());
  EXPECT_EQ(minted.error().code, "credentials_unavailable");
  EXPECT_NE(minted.error().message.find("HTTP 403"), std::string::npos) << minted.error().message;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
