// Our ES256 tokens checked by an independent verifier: Debian's `jose` CLI (José, the C JOSE
// library's tool), given only the token and the JWKS we would publish (issue 19 item 4).

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "runtime/es256.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

using nlohmann::json;

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `jose jws ver -i token -k jwks -O payload`; its exit status (-1: it did not end).
int jose_verify(const test::temp_dir& dir, const std::string& token, const json& jwks) {
  write(dir.sub("token"), token);
  write(dir.sub("jwks.json"), jwks.dump());
  std::remove(dir.sub("payload").c_str());
  test::child_process p({"/usr/bin/jose", "jws", "ver", "-i", dir.sub("token"), "-k",
                         dir.sub("jwks.json"), "-O", dir.sub("payload")},
                        dir.sub("jose.log"));
  const int st = p.wait(std::chrono::seconds(20));
  return st < 0 ? -1 : WEXITSTATUS(st);
}

TEST(es256_jose, the_jose_cli_verifies_our_tokens_against_our_jwks_and_refuses_changed_ones) {
  test::temp_dir dir;
  auto key = es256_key::generate();
  auto other = es256_key::generate();
  ASSERT_TRUE(key.ok() && other.ok());
  const json claims = {{"sub", "task:t1"}, {"attempt", 1}, {"task_id", "t1"}};
  auto token = key->sign({{"typ", "JWT"}}, claims);
  ASSERT_TRUE(token.ok());
  const json jwks = {{"keys", {other->public_jwk(), key->public_jwk()}}};
  ASSERT_EQ(jose_verify(dir, *token, jwks), 0) << read(dir.sub("jose.log"));
  EXPECT_EQ(json::parse(read(dir.sub("payload"))), claims);

  // A signature byte changed: refused.
  std::string changed = *token;
  const auto at = changed.rfind('.') + 10;
  changed[at] = changed[at] == 'A' ? 'B' : 'A';
  EXPECT_NE(jose_verify(dir, changed, jwks), 0);
  // Only the other key published: refused.
  EXPECT_NE(jose_verify(dir, *token, json{{"keys", {other->public_jwk()}}}), 0);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
