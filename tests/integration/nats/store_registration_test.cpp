// The store registry's decisions against a real JetStream key-value bucket, on an injected clock
// (the `now_ms` given to try_claim): who holds the streams, when another store waits, when it
// takes over, and when a holder learns it lost them.

#include "runtime/store_registration.hpp"

#include <gtest/gtest.h>

#include "tests/integration/nats/nats_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using state = runtime::store_registration::state;

runtime::store_identity store(const std::string& id, int64_t lease_ms = 3'000) {
  return {.store_id = id,
          .host = "host-" + id,
          .pid = 7,
          .data_dir = "/data/" + id,
          .lease_ms = lease_ms};
}

TEST(store_registration, the_first_store_holds_the_streams_and_renews_them) {
  nats_env env;
  runtime::store_registration a(*env.client, store("a"));
  EXPECT_EQ(a.try_claim(0), state::held) << a.last_error();
  EXPECT_EQ(a.bucket(), "SY_REGISTRY");
  auto first = env.client->kv_get(a.bucket(), runtime::store_registration::key);
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_NE((*first)->value.find("\"data_dir\":\"/data/a\""), std::string::npos);
  EXPECT_EQ(a.renew(), state::held);
  auto second = env.client->kv_get(a.bucket(), runtime::store_registration::key);
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_GT((*second)->revision, (*first)->revision);
  EXPECT_EQ(a.renew_every_ms(), 1'000);
}

TEST(store_registration, another_store_waits_and_is_refused_while_the_holder_renews) {
  nats_env env;
  runtime::store_registration a(*env.client, store("a"));
  ASSERT_EQ(a.try_claim(0), state::held);
  runtime::store_registration b(*env.client, store("b"));
  EXPECT_EQ(b.try_claim(1'000), state::waiting);
  EXPECT_NE(b.other().find("/data/a"), std::string::npos);
  EXPECT_EQ(b.try_claim(3'999), state::waiting) << "not a millisecond before a's lease";
  ASSERT_EQ(a.renew(), state::held);
  EXPECT_EQ(b.try_claim(4'000), state::conflict);
  EXPECT_NE(b.conflict().find("data dir /data/a"), std::string::npos) << b.conflict();
  EXPECT_NE(b.conflict().find("stream_prefix and subject_prefix"), std::string::npos);
  EXPECT_FALSE(b.held());
  EXPECT_EQ(a.renew(), state::held) << "a refused newcomer changes nothing";
}

TEST(store_registration, a_holder_that_stops_renewing_is_taken_over_after_its_lease_and_learns_it) {
  nats_env env;
  runtime::store_registration a(*env.client, store("a", 2'000));
  ASSERT_EQ(a.try_claim(0), state::held);
  runtime::store_registration b(*env.client, store("b", 5'000));
  EXPECT_EQ(b.try_claim(10'000), state::waiting);
  EXPECT_EQ(b.try_claim(11'999), state::waiting);
  EXPECT_EQ(b.try_claim(12'000), state::held) << b.last_error();  // a's lease, not b's
  EXPECT_EQ(a.renew(), state::conflict);
  EXPECT_NE(a.conflict().find("/data/b"), std::string::npos) << a.conflict();
  EXPECT_FALSE(a.held());
  a.release();  // not ours any more: left alone
  EXPECT_EQ(b.renew(), state::held);
}

TEST(store_registration, the_same_store_takes_its_entry_at_once_and_a_release_frees_the_streams) {
  nats_env env;
  {
    runtime::store_registration before_crash(*env.client, store("a"));
    ASSERT_EQ(before_crash.try_claim(0), state::held);
  }  // killed: no release
  runtime::store_registration restarted(*env.client, store("a"));
  EXPECT_EQ(restarted.try_claim(1), state::held);
  restarted.release();
  auto gone = env.client->kv_get(restarted.bucket(), runtime::store_registration::key);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  runtime::store_registration other(*env.client, store("b"));
  EXPECT_EQ(other.try_claim(2), state::held) << "a released entry is free at once";
}

TEST(store_registration, an_entry_lost_with_the_servers_store_is_written_again_on_renewal) {
  nats_env env;
  runtime::store_registration a(*env.client, store("a"));
  ASSERT_EQ(a.try_claim(0), state::held);
  ASSERT_TRUE(env.client->kv_delete(a.bucket(), runtime::store_registration::key).ok());
  EXPECT_EQ(a.renew(), state::held);
  auto back = env.client->kv_get(a.bucket(), runtime::store_registration::key);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_NE((*back)->value.find("/data/a"), std::string::npos);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
