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
#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::test {
namespace {

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

}  // namespace
}  // namespace sy::test
