#include "runtime/key_ring.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t lead = 60'000;               // published a minute before it signs
constexpr int64_t ttl = int64_t{10} * 60'000;  // tokens live at most ten minutes
constexpr int64_t t0 = 1'800'000'000'000;

key_ring::options opts(const test::temp_dir& d) { return {d.sub("keys"), "", lead, ttl}; }

size_t pem_files(const test::temp_dir& d) {
  size_t n = 0;
  for (const auto& f : fs::directory_iterator(d.sub("keys")))
    n += f.path().extension() == ".pem" ? 1 : 0;
  return n;
}

std::vector<std::string> kids(const json& jwks) {
  std::vector<std::string> out;
  for (const auto& k : jwks["keys"]) out.push_back(k["kid"]);
  return out;
}

TEST(key_ring, the_first_start_makes_a_private_key_file_and_a_restart_keeps_it) {
  test::temp_dir d;
  auto ring = key_ring::open(opts(d), t0);
  ASSERT_TRUE(ring.ok()) << ring.error().message;
  ASSERT_EQ(pem_files(d), 1u);
  for (const auto& f : fs::directory_iterator(d.sub("keys"))) {
    struct stat st {};
    ASSERT_EQ(::stat(f.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f.path();
  }
  const auto token = *ring->signer(t0).sign({}, {{"sub", "task:a"}});
  auto again = key_ring::open(opts(d), t0 + 1000);  // a restart
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 1u);
  EXPECT_EQ(again->signer(t0 + 1000).kid(), ring->signer(t0).kid());
  const auto* k = again->find(ring->signer(t0).kid(), t0 + 1000);
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->verify(token).ok());  // signed before the restart, verified after it
}

TEST(key_ring, a_rotated_key_is_published_before_it_signs_and_the_old_one_until_its_tokens_expire) {
  test::temp_dir d;
  auto ring = key_ring::open(opts(d), t0);
  ASSERT_TRUE(ring.ok());
  const std::string old_kid = ring->signer(t0).kid();
  const auto old_token = *ring->signer(t0).sign({}, {{"sub", "task:a"}});
  ASSERT_TRUE(ring->rotate(t0 + 5));
  const std::string new_kid = ring->jwks(t0 + 5)["keys"][0]["kid"];
  ASSERT_NE(new_kid, old_kid);
  // Published at once, signing only after the lead.
  EXPECT_EQ(kids(ring->jwks(t0 + 5)), (std::vector<std::string>{new_kid, old_kid}));
  EXPECT_EQ(ring->signer(t0 + 5 + lead - 1).kid(), old_kid);
  EXPECT_EQ(ring->signer(t0 + 5 + lead).kid(), new_kid);
  // The old key stays published (and verifies) until its last token can have expired.
  const int64_t old_gone = t0 + 5 + lead + ttl;
  ASSERT_NE(ring->find(old_kid, old_gone - 1), nullptr);
  EXPECT_TRUE(ring->find(old_kid, old_gone - 1)->verify(old_token).ok());
  EXPECT_EQ(ring->prune(old_gone - 1), 0u);
  EXPECT_EQ(ring->find(old_kid, old_gone), nullptr);
  EXPECT_EQ(kids(ring->jwks(old_gone)), (std::vector<std::string>{new_kid}));
  EXPECT_EQ(ring->prune(old_gone), 1u);
  EXPECT_EQ(pem_files(d), 1u);
  // A restart in the middle of a rotation sees the same schedule (it is in the file names).
  ASSERT_TRUE(ring->rotate(old_gone));
  auto again = key_ring::open(opts(d), old_gone + 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 2u);
  EXPECT_EQ(again->signer(old_gone + 1).kid(), new_kid);
  EXPECT_NE(again->signer(old_gone + lead).kid(), new_kid);
}

TEST(key_ring, an_operator_pem_file_signs_and_is_not_rotated) {
  test::temp_dir d;
  auto key = es256_key::generate();
  ASSERT_TRUE(key.ok());
  std::ofstream(d.sub("op.pem")) << key->to_pem();
  auto ring = key_ring::open({d.sub("keys"), d.sub("op.pem"), lead, ttl}, t0);
  ASSERT_TRUE(ring.ok()) << ring.error().message;
  EXPECT_EQ(ring->signer(t0).kid(), key->kid());
  EXPECT_FALSE(ring->rotate(t0).ok());
  std::ofstream(d.sub("bad.pem")) << "not a key";
  EXPECT_FALSE(key_ring::open({d.sub("keys"), d.sub("bad.pem"), lead, ttl}, t0).ok());
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
