#include "runtime/client_output.hpp"

#include <gtest/gtest.h>

namespace sy::runtime::client {
namespace SY_UNITY_ID {

using json = nlohmann::json;

TEST(ClientOutput, ExitCodesFollowTheFinalStatus) {
  EXPECT_EQ(exit_for_status("completed"), exit_ok);
  EXPECT_EQ(exit_for_status("queued"), exit_ok);
  EXPECT_EQ(exit_for_status("in_progress"), exit_ok);
  EXPECT_EQ(exit_for_status("failed"), exit_failed);
  EXPECT_EQ(exit_for_status("cancelled"), exit_failed);
  EXPECT_EQ(exit_for_status("expired"), exit_failed);
  EXPECT_TRUE(is_terminal("expired"));
  EXPECT_FALSE(is_terminal("cancelling"));
  EXPECT_FALSE(is_terminal("finalizing"));
}

TEST(ClientOutput, ProgressLineShowsCountsRateAndEta) {
  EXPECT_EQ(progress_line({.completed = 0, .failed = 0, .total = 10, .elapsed_s = 0}, 10),
            "[----------] 0/10  completed 0  failed 0");
  EXPECT_EQ(progress_line({.completed = 4, .failed = 1, .total = 10, .elapsed_s = 2.5}, 10),
            "[#####-----] 5/10  completed 4  failed 1  2.0/s  ETA 3s");
  EXPECT_EQ(progress_line({.completed = 10, .failed = 0, .total = 10, .elapsed_s = 5}, 10),
            "[##########] 10/10  completed 10  failed 0  2.0/s");
  EXPECT_EQ(progress_line({.completed = 1, .failed = 0, .total = 3601, .elapsed_s = 1}, 4),
            "[----] 1/3601  completed 1  failed 0  1.0/s  ETA 1h00m");
  // No total yet (a batch still validating): an empty bar, never a division by zero.
  EXPECT_EQ(progress_line({.completed = 0, .failed = 0, .total = 0, .elapsed_s = 1}, 4),
            "[----] 0/0  completed 0  failed 0");
}

TEST(ClientOutput, TablesAndDetails) {
  const json page = {{"object", "list"},
                     {"data",
                      {{{"id", "job_1"},
                        {"status", "completed"},
                        {"endpoint", "/v1/embeddings"},
                        {"model", "m"},
                        {"attempts", 1},
                        {"max_attempts", 5},
                        {"created_at", 0}}}},
                     {"last_id", "job_1"},
                     {"has_more", true}};
  EXPECT_EQ(jobs_table(page),
            "ID     STATUS     ENDPOINT        MODEL  ATTEMPTS  CREATED (UTC)\n"
            "job_1  completed  /v1/embeddings  m      1/5       1970-01-01 00:00:00\n"
            "more: --after job_1\n");
  EXPECT_EQ(jobs_table({{"data", json::array()}}), "no jobs\n");
  EXPECT_EQ(batches_table(json::array()), "no batches\n");
  const json job = {{"id", "job_1"},
                    {"status", "failed"},
                    {"created_at", 60},
                    {"started_at", nullptr},
                    {"error", {{"code", "gateway_rejected"}, {"message", "no"}}},
                    {"result", {{"status_code", 400}, {"body", {{"e", 1}}}}}};
  const auto text = job_details(job);
  EXPECT_NE(text.find("status    failed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("created   1970-01-01 00:01:00\n"), std::string::npos) << text;
  EXPECT_NE(text.find("started   -\n"), std::string::npos) << text;
  EXPECT_NE(text.find("error     gateway_rejected: no\n"), std::string::npos) << text;
  EXPECT_NE(text.find("result    HTTP 400\n{\n  \"e\": 1\n}\n"), std::string::npos) << text;
  const json batch = {
      {"id", "batch_1"},
      {"status", "failed"},
      {"request_counts", {{"total", 0}, {"completed", 0}, {"failed", 0}}},
      {"errors",
       {{"object", "list"},
        {"data", {{{"code", "invalid_json_line"}, {"message", "bad"}, {"line", 2}}}}}}};
  const auto b = batch_details(batch);
  EXPECT_NE(b.find("requests     completed 0, failed 0, total 0\n"), std::string::npos) << b;
  EXPECT_NE(b.find("error     line 2: invalid_json_line: bad\n"), std::string::npos) << b;
}

TEST(ClientOutput, ErrorTextReadsTheEnvelope) {
  EXPECT_EQ(error_text(R"({"error":{"message":"No job job_1","type":"invalid_request_error",)"
                       R"("code":"job_not_found","param":null}})"),
            "No job job_1 (code job_not_found)");
  EXPECT_EQ(error_text("plain"), "plain");
  EXPECT_EQ(error_text(""), "(no body)");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime::client
