#include "api/detail/query.hpp"

#include <gtest/gtest.h>

namespace sy::api::detail {
namespace SY_UNITY_ID {

TEST(parse_query, pairs_in_order_and_percent_decoded) {
  auto q = parse_query("/v1/jobs?a=1&b=x%20y&c=p+q&d&&e=%2F%3d");
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 5u);
  EXPECT_EQ((*q)[0].name, "a");
  EXPECT_EQ((*q)[0].value, "1");
  EXPECT_EQ((*q)[1].value, "x y");
  EXPECT_EQ((*q)[2].value, "p q");
  EXPECT_EQ((*q)[3].name, "d");
  EXPECT_EQ((*q)[3].value, "");
  EXPECT_EQ((*q)[4].value, "/=");
}

TEST(parse_query, no_query_is_empty) {
  auto q = parse_query("/v1/jobs");
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->empty());
  EXPECT_TRUE(parse_query("/v1/jobs?")->empty());
}

TEST(parse_query, malformed_escape_names_the_parameter) {
  auto q = parse_query("/v1/jobs?after=job%2");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().code, "invalid_value");
  EXPECT_EQ(q.error().param, "after");
  EXPECT_FALSE(parse_query("/v1/jobs?x=%zz").ok());
  EXPECT_FALSE(parse_query("/v1/jobs?x=%").ok());
}

TEST(query_value, last_one_wins) {
  auto q = parse_query("/x?limit=1&limit=2");
  EXPECT_EQ(query_value(*q, "limit"), "2");
  EXPECT_EQ(query_value(*q, "status"), std::nullopt);
}

TEST(list_params, defaults) {
  auto p = parse_list_params("/v1/jobs");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->limit, 20);
  EXPECT_FALSE(p->status.has_value());
  EXPECT_EQ(p->after, "");
}

TEST(list_params, reads_status_limit_after) {
  auto p = parse_list_params("/v1/jobs?status=in_progress&limit=100&after=job_01AB&x=y");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->status, storage::job_status::in_progress);
  EXPECT_EQ(p->limit, 100);
  EXPECT_EQ(p->after, "job_01AB");
  EXPECT_EQ(parse_list_params("/v1/jobs?status=cancelling")->status,
            storage::job_status::cancelling);
  EXPECT_EQ(parse_list_params("/v1/jobs?limit=1")->limit, 1);
}

TEST(list_params, bad_limit_is_invalid_value_naming_limit) {
  for (const char* bad : {"0", "101", "-1", "abc", "", "1.5", "1000000000000"}) {
    auto p = parse_list_params(std::string("/v1/jobs?limit=") + bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().code, "invalid_value");
    EXPECT_EQ(p.error().param, "limit");
  }
}

TEST(list_params, unknown_status_is_invalid_value_naming_status) {
  for (const char* bad : {"done", "", "QUEUED"}) {
    auto p = parse_list_params(std::string("/v1/jobs?status=") + bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().code, "invalid_value");
    EXPECT_EQ(p.error().param, "status");
  }
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api::detail
