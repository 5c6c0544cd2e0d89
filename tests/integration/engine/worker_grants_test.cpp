// Storage grants of worker tasks (docs/workers.md, "Storage credentials"): checked against the
// tenant's allowed prefixes at submission, kept with the job, carried in the capability token,
// and minted into credentials only while the attempt holds its lease. Real engine, NATS and LMDB;
// no STS here (tests/integration/workers/sts_s3_test.cpp mints against a real one), so these
// tests cover every refusal that comes before STS is called.

#include <fstream>

#include <gtest/gtest.h>

#include "runtime/es256.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/worker_calls.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

void configure(engine_env& env, int64_t lease_ttl_ms = 5'000) {
  env.settings().runtimes["demo"] = config::runtime_settings{lease_ttl_ms, 3};
  env.settings().tenant_storage_prefixes["default"] = {"s3://data/default/", "s3://scratch/x/"};
}

http_reply submit(http_client& c, json grants) {
  json body = {{"runtime", "demo"}, {"input", {{"n", 1}}}};
  if (!grants.is_null()) body["grants"] = std::move(grants);
  return c.post_json("/v1/jobs", body);
}

json lease_one(http_client& w) {
  auto r = w.post_json("/v1/task/lease", {{"runtime", "demo"}, {"wait_ms", 10'000}});
  EXPECT_EQ(r.status, 200) << r.body;
  auto tasks = r.json()["tasks"];
  EXPECT_EQ(tasks.size(), 1u);
  return tasks.empty() ? json::object() : tasks[0];
}

TEST(worker_grants, grants_outside_the_tenants_prefixes_or_not_canonical_are_refused) {
  engine_env env;
  configure(env);
  env.start();
  http_client c(env.port());
  struct bad_case {
    json grants;
    std::string code;
    std::string param;
  };
  const bad_case cases[] = {
      {{{"read", {"s3://data/other/"}}}, "invalid_grants", "grants"},           // another prefix
      {{{"write", {"s3://elsewhere/default/"}}}, "invalid_grants", "grants"},   // another bucket
      {{{"read", {"s3://data/"}}}, "invalid_grants", "grants.read[0]"},         // a whole bucket
      {{{"read", {"s3://data/default"}}}, "invalid_grants", "grants.read[0]"},  // no trailing '/'
      {{{"read", {"s3://data/default/../x/"}}}, "invalid_grants", "grants.read[0]"},
      {{{"read", {"s3://data/default/%2e%2e/"}}}, "invalid_grants", "grants.read[0]"},
      {{{"scratch", {"s3://data/default/*"}}}, "invalid_grants", "grants.scratch[0]"},
      {{{"write", {"S3://data/default/"}}}, "invalid_grants", "grants.write[0]"},
      {{{"write", {"s3://data/default//x/"}}}, "invalid_grants", "grants.write[0]"},
      {{{"delete", {"s3://data/default/"}}}, "invalid_grants", "grants.delete"},
      {{{"read", "s3://data/default/"}}, "invalid_grants", "grants.read"},
      {json::array(), "invalid_grants", "grants"},
  };
  for (const auto& bad : cases) {
    auto r = submit(c, bad.grants);
    EXPECT_EQ(r.status, 400) << bad.grants.dump() << " " << r.body;
    EXPECT_EQ(code_of(r), bad.code) << bad.grants.dump();
    EXPECT_EQ(r.json()["error"]["param"], bad.param) << bad.grants.dump();
  }
  // Grants belong to jobs done by workers: a chat job with grants is refused.
  auto chat = c.post_json("/v1/jobs", {{"endpoint", "/v1/chat/completions"},
                                       {"body", {{"model", "m"}, {"messages", json::array()}}},
                                       {"grants", {{"read", {"s3://data/default/"}}}}});
  EXPECT_EQ(chat.status, 400) << chat.body;
  EXPECT_EQ(chat.json()["error"]["param"], "grants");
  // Nothing was stored.
  EXPECT_EQ(c.get("/v1/jobs").json()["data"].size(), 0u);
}

TEST(worker_grants, a_tenant_not_listed_may_grant_nothing) {
  engine_env env;
  configure(env);
  env.settings().tenant_storage_prefixes.clear();
  env.start();
  http_client c(env.port());
  auto r = submit(c, {{"read", {"s3://data/default/in/"}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(code_of(r), "invalid_grants");
  EXPECT_EQ(c.get("/v1/jobs").json()["data"].size(), 0u);
  // Without grants a runtime job is accepted as before.
  EXPECT_EQ(submit(c, nullptr).status, 202);
}

TEST(worker_grants, grants_are_kept_with_the_job_and_carried_in_every_token_of_the_attempt) {
  engine_env env;
  configure(env);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  const json grants = {{"read", {"s3://data/default/in/"}},
                       {"write", {"s3://data/default/out/"}},
                       {"scratch", {"s3://scratch/x/tmp/"}}};
  auto r = submit(c, grants);
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(r.json()["grants"], grants);
  auto t = lease_one(w);
  auto claims = token_claims(t["capability_token"]);
  EXPECT_EQ(claims["grants"], grants);
  EXPECT_EQ(claims["tenant"], "default");
  // A heartbeat's fresh token carries them too.
  auto beat = w.post_json("/v1/task/heartbeat", json::object(), {{cap, t["capability_token"]}});
  ASSERT_EQ(beat.status, 200) << beat.body;
  EXPECT_EQ(token_claims(beat.json()["capability_token"])["grants"], grants);
  // This engine has no STS: the call is understood and refused with the reason.
  auto creds = w.post_json("/v1/task/credentials", json::object(), {{cap, t["capability_token"]}});
  EXPECT_EQ(creds.status, 502) << creds.body;
  EXPECT_EQ(code_of(creds), "credentials_unavailable");
  EXPECT_NE(creds.body.find("sts_endpoint"), std::string::npos) << creds.body;
}

TEST(worker_grants, credentials_are_refused_without_grants_after_the_attempt_and_for_bad_tokens) {
  engine_env env;
  configure(env);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  ASSERT_EQ(submit(c, nullptr).status, 202);
  auto t = lease_one(w);
  const std::string token = t["capability_token"];
  auto none = w.post_json("/v1/task/credentials", json::object(), {{cap, token}});
  EXPECT_EQ(none.status, 400) << none.body;
  EXPECT_EQ(code_of(none), "invalid_grants");
  auto missing = w.post_json("/v1/task/credentials", json::object());
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(code_of(missing), "invalid_capability_token");
  auto forged = w.post_json("/v1/task/credentials", json::object(), {{cap, token + "x"}});
  EXPECT_EQ(forged.status, 401);
  auto extra = w.post_json("/v1/task/credentials", {{"ttl", 60}}, {{cap, token}});
  EXPECT_EQ(extra.status, 400);
  EXPECT_EQ(code_of(extra), "unknown_parameter");

  // A granted task: once its attempt has its outcome, no credentials are minted for it.
  ASSERT_EQ(submit(c, {{"read", {"s3://data/default/in/"}}}).status, 202);
  auto granted = lease_one(w);
  const std::string gtoken = granted["capability_token"];
  ASSERT_EQ(w.post_json("/v1/task/complete", {{"output", 1}}, {{cap, gtoken}}).status, 200);
  auto after = w.post_json("/v1/task/credentials", json::object(), {{cap, gtoken}});
  EXPECT_EQ(after.status, 409) << after.body;
  EXPECT_EQ(code_of(after), "stale_attempt");
}

TEST(worker_grants, credentials_are_refused_once_the_lease_has_run_out) {
  engine_env env;
  configure(env, 2'000);
  auto& clock = env.use_manual_clock();
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  ASSERT_EQ(submit(c, {{"read", {"s3://data/default/in/"}}}).status, 202);
  auto t = lease_one(w);
  // Past the lease's end, within the token's clock skew: the token still verifies, the lease
  // does not hold (whether or not the reaper has taken the task back yet).
  clock.advance(3'000);
  auto r = w.post_json("/v1/task/credentials", json::object(), {{cap, t["capability_token"]}});
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(code_of(r), "lease_expired");
}

/// An operator's key (signing_key_file): it signs every token, it is the whole JWKS, and it is
/// never rotated by the engine.
TEST(worker_grants, an_operators_signing_key_signs_and_is_not_rotated_by_the_engine) {
  temp_dir keys;
  auto key = runtime::es256_key::generate();
  ASSERT_TRUE(key.ok());
  std::ofstream(keys.sub("signing.pem")) << key->to_pem();
  engine_env env;
  configure(env);
  env.settings().signing_key_file = keys.sub("signing.pem");
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  ASSERT_EQ(submit(c, nullptr).status, 202);
  auto t = lease_one(w);
  const std::string token = t["capability_token"];
  auto header = json::parse(*runtime::base64url_decode(token.substr(0, token.find('.'))));
  EXPECT_EQ(header["kid"], key->kid());
  auto jwks = w.get("/internal/jwks/task").json()["keys"];
  ASSERT_EQ(jwks.size(), 1u);
  EXPECT_EQ(jwks[0]["kid"], key->kid());
  auto rotate = w.post_json("/internal/keys/rotate", json::object());
  EXPECT_EQ(rotate.status, 400) << rotate.body;
  EXPECT_NE(rotate.body.find("signing_key_file"), std::string::npos) << rotate.body;
  EXPECT_EQ(w.get("/internal/jwks/task").json()["keys"].size(), 1u);
  EXPECT_EQ(w.post_json("/v1/task/complete", {{"output", 1}}, {{cap, token}}).status, 200);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
