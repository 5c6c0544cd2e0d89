// A batch's lines and messages: request ids are deterministic per batch and line and distinct
// per line, error lines have OpenAI's shape, and the messages of stopped lines and of a
// finalization that gave up say what happened.

#include "runtime/batch_render.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace sy::runtime::batch {
namespace SY_UNITY_ID {

using json = nlohmann::json;

TEST(mix64, is_splitmix64s_finalizer) {
  EXPECT_EQ(mix64(0), 0u);
  // SplitMix64's first output for seed 0 is the finalizer of its first state.
  EXPECT_EQ(mix64(0x9e3779b97f4a7c15ULL), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(mix64(1), 0x5692161d100b05e5ULL);
}

TEST(mix64, maps_distinct_inputs_to_distinct_outputs) {
  std::set<uint64_t> seen;
  for (uint64_t x = 0; x < 10'000; ++x) seen.insert(mix64(x));
  EXPECT_EQ(seen.size(), 10'000u);
}

TEST(request_id_seed, is_the_first_16_bytes_of_the_ids_sha256) {
  // SHA-256("abc") = ba7816bf8f01cfea 414140de5dae2223 b00361a3...
  auto seed = request_id_seed("abc");
  EXPECT_EQ(seed[0], 0xba7816bf8f01cfeaULL);
  EXPECT_EQ(seed[1], 0x414140de5dae2223ULL);
}

TEST(request_id_for, is_batch_req_and_32_hex_digits_of_the_mixed_seed_and_offset) {
  EXPECT_EQ(request_id_for({0, 0}, 0), "batch_req_" + std::string(32, '0'));
  EXPECT_EQ(request_id_for({0, 0}, 1), "batch_req_5692161d100b05e55692161d100b05e5");
  const std::string id = request_id_for(request_id_seed("batch_1"), 12345);
  ASSERT_EQ(id.size(), 42u);
  EXPECT_EQ(id.rfind("batch_req_", 0), 0u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 10), std::string::npos);
}

TEST(request_id_for, is_the_same_for_the_same_line_and_distinct_across_lines_and_batches) {
  const auto a = request_id_seed("batch_a");
  const auto b = request_id_seed("batch_b");
  EXPECT_EQ(request_id_for(a, 777), request_id_for(request_id_seed("batch_a"), 777));
  EXPECT_NE(request_id_for(a, 777), request_id_for(b, 777));
  std::set<std::string> ids;
  for (uint64_t offset = 0; offset < 100'000; offset += 10) ids.insert(request_id_for(a, offset));
  EXPECT_EQ(ids.size(), 10'000u);
}

TEST(stop_message, says_why_the_line_did_not_run) {
  EXPECT_EQ(stop_message("batch_expired"),
            "This request could not be executed before the completion window expired.");
  EXPECT_EQ(stop_message("batch_cancelled"),
            "This request was not executed: the batch was cancelled.");
  EXPECT_EQ(stop_message("batch_failed"), "This request was not executed: the batch failed.");
  EXPECT_EQ(stop_message(""), stop_message("batch_failed"));
}

TEST(error_line, has_openais_shape_with_keys_in_order) {
  EXPECT_EQ(error_line("batch_req_1", "req-7", "model_not_found", "No gateway serves it."),
            R"({"custom_id":"req-7","error":{"code":"model_not_found","message":)"
            R"("No gateway serves it."},"id":"batch_req_1","response":null})");
}

TEST(error_line, an_unknown_custom_id_is_null) {
  auto line = json::parse(error_line("batch_req_1", "", "batch_failed", "m"));
  EXPECT_TRUE(line["custom_id"].is_null());
  EXPECT_TRUE(line["response"].is_null());
  EXPECT_EQ(line["error"]["code"], "batch_failed");
}

TEST(error_line, escapes_strings_and_replaces_invalid_utf8) {
  const std::string line = error_line("id", "a\"b\nc", "code", "bad \xff byte");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto parsed = json::parse(line);
  EXPECT_EQ(parsed["custom_id"], "a\"b\nc");
  EXPECT_EQ(parsed["error"]["message"], "bad \xef\xbf\xbd byte");  // U+FFFD
}

TEST(lost_message, is_empty_when_nothing_was_lost) {
  EXPECT_EQ(lost_message({10, 7, 3}, "", "", "", "", 3), "");
}

TEST(lost_message, names_the_undrained_lines_with_their_stop_code) {
  EXPECT_EQ(lost_message({10, 4, 1}, "batch_cancelled", "after 2 tries: disk full", "", "", 5),
            "The batch could not be finalized: cannot record the 5 requests that have no result "
            "as batch_cancelled (after 2 tries: disk full); they are in neither file.");
}

TEST(lost_message, names_each_file_that_could_not_be_written) {
  EXPECT_EQ(lost_message({10, 7, 3}, "", "", "cannot write x: EIO", "", 4),
            "The batch could not be finalized: cannot write the output file of 7 lines (after 4 "
            "tries: cannot write x: EIO); those results are lost.");
  EXPECT_EQ(lost_message({10, 7, 3}, "", "", "", "cannot fsync y: EIO", 4),
            "The batch could not be finalized: cannot write the error file of 3 lines (after 4 "
            "tries: cannot fsync y: EIO); those lines are lost.");
}

TEST(lost_message, joins_every_loss_in_order) {
  const std::string m = lost_message({10, 2, 3}, "batch_expired", "u", "o", "e", 1);
  EXPECT_EQ(m.rfind("The batch could not be finalized: cannot record the 5 requests", 0), 0u);
  const auto record = m.find("cannot record");
  const auto output = m.find("; cannot write the output file of 2 lines (after 1 tries: o)");
  const auto error = m.find("; cannot write the error file of 3 lines (after 1 tries: e)");
  ASSERT_NE(output, std::string::npos);
  ASSERT_NE(error, std::string::npos);
  EXPECT_LT(record, output);
  EXPECT_LT(output, error);
  EXPECT_EQ(m.back(), '.');
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime::batch
