// How a gateway outcome ends an attempt, and which leases the reaper expires.

#include <gtest/gtest.h>

#include "actors/attempt.hpp"
#include "actors/lease_reaper.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

runtime::gateway_outcome answered(int status, bool retryable) {
  runtime::gateway_outcome o;
  o.got_response = true;
  o.status_code = status;
  o.retryable = retryable;
  o.body = "{\"x\":1}";
  o.tries = 1;
  return o;
}

TEST(judge, success_rejection_and_retry) {
  EXPECT_EQ(judge(answered(200, false), false).end, storage::attempt_end::succeeded);
  auto rejected = judge(answered(400, false), false);
  EXPECT_EQ(rejected.end, storage::attempt_end::rejected);
  EXPECT_EQ(rejected.error_code, "gateway_rejected");
  EXPECT_NE(rejected.error_message.find("400"), std::string::npos);
  auto busy = judge(answered(503, true), false);
  EXPECT_EQ(busy.end, storage::attempt_end::retry);
  EXPECT_EQ(busy.error_code, "gateway_error");
}

TEST(judge, transport_failure_retries_and_shutdown_releases) {
  runtime::gateway_outcome down;
  down.retryable = true;
  down.error = "connect 127.0.0.1:9: Connection refused";
  down.tries = 3;
  auto v = judge(down, false);
  EXPECT_EQ(v.end, storage::attempt_end::retry);
  EXPECT_EQ(v.error_code, "gateway_unreachable");
  EXPECT_NE(v.error_message.find("Connection refused"), std::string::npos);
  down.error = "aborted";
  EXPECT_EQ(judge(down, true).end, storage::attempt_end::released);
  // A response that arrived during shutdown is still recorded.
  EXPECT_EQ(judge(answered(200, false), true).end, storage::attempt_end::succeeded);
}

TEST(lease_is_dead, expiry_and_earlier_runs) {
  storage::lease_record l{"t", 1, "tok", 1000, "local/B"};
  EXPECT_FALSE(lease_is_dead(l, 999, "local/B", "local/"));
  EXPECT_TRUE(lease_is_dead(l, 1000, "local/B", "local/"));
  EXPECT_TRUE(lease_is_dead(l, 0, "local/C", "local/"));  // an earlier run of this node
  l.holder = "other-node/X";
  EXPECT_FALSE(lease_is_dead(l, 0, "local/C", "local/"));  // another node's live lease
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
