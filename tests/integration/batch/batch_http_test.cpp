// The Files and Batch API over HTTP against the real engine: streamed uploads land
// byte-identical, every bad request gets its OpenAI error and changes nothing, listing and
// content download work, deleting removes bytes and record.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/multipart_form.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;
namespace fs = std::filesystem;

std::string jsonl(int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += json{{"custom_id", "c" + std::to_string(i)},
                {"method", "POST"},
                {"url", "/v1/chat/completions"},
                {"body",
                 {{"model", "test-model"},
                  {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}}}}
               .dump() +
           "\n";
  return out;
}

size_t entries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

void expect_error(const http_reply& r, int status, const std::string& code,
                  const std::string& param = "") {
  EXPECT_EQ(r.status, status) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["error"]["code"], code) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << r.body;
  }
  EXPECT_TRUE(j["error"].contains("type") && j["error"].contains("message")) << r.body;
}

TEST(batch_http, a_large_upload_streams_to_disk_byte_identical) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string content;
  content.reserve(6 << 20);
  for (int i = 0; content.size() < (5u << 20); ++i)
    content +=
        "{\"i\":" + std::to_string(i) + ",\"pad\":\"" + std::string(100, 'a' + i % 26) + "\"}\n";
  auto r = upload(c, form({{"purpose", "user_data"}}, "big.jsonl", content));
  ASSERT_EQ(r.status, 200) << r.body;
  auto f = r.json();
  EXPECT_EQ(f["object"], "file");
  EXPECT_EQ(f["bytes"], content.size());
  EXPECT_EQ(f["purpose"], "user_data");
  EXPECT_EQ(f["filename"], "big.jsonl");
  std::ifstream in(env.engine().batches().file_path(f["id"]), std::ios::binary);
  std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(stored == content) << "the stored bytes differ from the upload";
  auto got = c.get("/v1/files/" + f["id"].get<std::string>() + "/content");
  ASSERT_EQ(got.status, 200);
  EXPECT_TRUE(got.body == content);
  EXPECT_NE(got.headers["content-disposition"].find("big.jsonl"), std::string::npos);
  EXPECT_EQ(entries(env.engine().batches().upload_dir()), 0u) << "a staging file was left";
}

TEST(batch_http, bad_uploads_are_rejected_and_store_nothing) {
  engine_env env;
  env.settings().files_max_bytes = 64 * 1024;
  env.start();
  const std::string uploads = env.engine().batches().upload_dir();
  auto fresh = [&] { return std::make_unique<http_client>(env.port()); };
  expect_error(
      upload(*fresh(), form({{"purpose", "batch"}}, "in.jsonl", std::string(100'000, 'x'))), 413,
      "file_too_large", "file");
  expect_error(upload(*fresh(), form({}, "in.jsonl", jsonl(1))), 400, "missing_required_parameter",
               "purpose");
  expect_error(upload(*fresh(), form({{"purpose", "batch"}}, "", "")), 400,
               "missing_required_parameter", "file");
  expect_error(upload(*fresh(), form({{"purpose", "batch"}}, "in.txt", jsonl(1))), 400,
               "invalid_file", "file");
  expect_error(upload(*fresh(), form({{"purpose", "nonsense"}}, "in.jsonl", jsonl(1))), 400,
               "invalid_value", "purpose");
  expect_error(upload(*fresh(), form({{"purpose", "batch"},
                                      {"expires_after[anchor]", "created_at"},
                                      {"expires_after[seconds]", "10"}},
                                     "in.jsonl", jsonl(1))),
               400, "invalid_value", "expires_after[seconds]");
  expect_error(fresh()->request("POST", "/v1/files", "{}", {{"Content-Type", "application/json"}}),
               400, "invalid_file");
  // A body cut before its closing boundary.
  std::string cut = form({{"purpose", "batch"}}, "in.jsonl", jsonl(2));
  cut.resize(cut.size() - 10);
  expect_error(upload(*fresh(), cut), 400, "invalid_file");
  http_client c(env.port());
  auto list = c.get("/v1/files");
  ASSERT_EQ(list.status, 200);
  EXPECT_TRUE(list.json()["data"].empty()) << list.body;
  EXPECT_EQ(entries(uploads), 0u) << "a staging file was left";
  // expires_after that is valid sets expires_at.
  auto ok = upload(c, form({{"purpose", "batch"},
                            {"expires_after[anchor]", "created_at"},
                            {"expires_after[seconds]", "3600"}},
                           "in.jsonl", jsonl(1)));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json()["expires_at"].get<int64_t>(), ok.json()["created_at"].get<int64_t>() + 3600);
}

TEST(batch_http, bad_batch_requests_get_their_error_and_create_nothing) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto file = upload(c, form({{"purpose", "batch"}}, "in.jsonl", jsonl(2))).json();
  std::string fid = file["id"];
  auto other = upload(c, form({{"purpose", "user_data"}}, "x.jsonl", jsonl(1))).json();
  json good = {
      {"input_file_id", fid}, {"endpoint", "/v1/chat/completions"}, {"completion_window", "24h"}};
  auto with = [&](const std::string& k, json v) {
    json b = good;
    if (v.is_discarded()) {
      b.erase(k);
    } else {
      b[k] = v;
    }
    return c.post_json("/v1/batches", b);
  };
  expect_error(with("input_file_id", json::value_t::discarded), 400, "missing_required_parameter",
               "input_file_id");
  expect_error(with("endpoint", "/v1/moderations"), 400, "invalid_value", "endpoint");
  expect_error(with("completion_window", "1h"), 400, "invalid_value", "completion_window");
  json many = json::object();
  for (int i = 0; i < 17; ++i) many["k" + std::to_string(i)] = "v";
  expect_error(with("metadata", many), 400, "invalid_metadata", "metadata");
  expect_error(with("metadata", {{"k", 1}}), 400, "invalid_metadata");
  expect_error(with("metadata", {{"k", std::string(513, 'v')}}), 400, "invalid_metadata");
  expect_error(with("output_expires_after", {{"anchor", "created_at"}, {"seconds", 5}}), 400,
               "invalid_value", "output_expires_after");
  expect_error(with("surprise", 1), 400, "unknown_parameter", "surprise");
  expect_error(with("max_inflight", 0), 400, "invalid_max_inflight", "max_inflight");
  expect_error(with("max_inflight", 10'001), 400, "invalid_max_inflight", "max_inflight");
  expect_error(with("max_inflight", "2"), 400, "invalid_max_inflight", "max_inflight");
  expect_error(with("max_attempts", 0), 400, "invalid_max_attempts", "max_attempts");
  expect_error(with("max_attempts", 101), 400, "invalid_max_attempts", "max_attempts");
  expect_error(with("max_attempts", "2"), 400, "invalid_max_attempts", "max_attempts");
  expect_error(with("webhook_url", "ftp://example.com/x"), 400, "invalid_webhook_url",
               "webhook_url");
  expect_error(with("webhook_url", 5), 400, "invalid_webhook_url", "webhook_url");
  // A field of another JSON type is invalid_request naming it (metadata has its own code); an id
  // longer than any the engine issues is refused without a lookup.
  expect_error(with("input_file_id", 5), 400, "invalid_request", "input_file_id");
  expect_error(with("endpoint", true), 400, "invalid_request", "endpoint");
  expect_error(with("completion_window", 24), 400, "invalid_request", "completion_window");
  expect_error(with("metadata", json::array()), 400, "invalid_metadata", "metadata");
  expect_error(with("output_expires_after", "1h"), 400, "invalid_value", "output_expires_after");
  expect_error(with("input_file_id", std::string(65, 'f')), 400, "string_above_max_length",
               "input_file_id");
  expect_error(with("input_file_id", "file-nope"), 404, "file_not_found", "input_file_id");
  expect_error(with("input_file_id", other["id"]), 400, "invalid_value", "input_file_id");
  expect_error(c.request("POST", "/v1/batches", "{", {{"Content-Type", "application/json"}}), 400,
               "invalid_json");
  expect_error(c.request("POST", "/v1/batches", "x", {{"Content-Type", "text/plain"}}), 415,
               "unsupported_media_type");
  auto list = c.get("/v1/batches");
  ASSERT_EQ(list.status, 200);
  EXPECT_TRUE(list.json()["data"].empty()) << list.body;
  expect_error(c.get("/v1/batches?limit=0"), 400, "invalid_value", "limit");
  expect_error(c.get("/v1/batches/batch_nope"), 404, "batch_not_found");
  expect_error(c.request("POST", "/v1/batches/batch_nope/cancel"), 404, "batch_not_found");
  expect_error(c.get("/v1/files/file-nope"), 404, "file_not_found");
  expect_error(c.get("/v1/files/file-nope/content"), 404, "file_not_found");
  expect_error(c.request("DELETE", "/v1/files/file-nope"), 404, "file_not_found");
  expect_error(c.get("/v1/files?order=sideways"), 400, "invalid_value", "order");
  EXPECT_EQ(c.request("PUT", "/v1/batches").status, 405);
  // The extension fields are echoed on the batch object (null when not given; max_attempts is
  // the effective value, the default_max_attempts setting when not given).
  auto plain = with("metadata", nullptr);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_TRUE(plain.json()["max_inflight"].is_null());
  EXPECT_TRUE(plain.json()["webhook_url"].is_null());
  EXPECT_EQ(plain.json()["max_attempts"], 3);
  json extended = good;
  extended["max_inflight"] = 2;
  extended["webhook_url"] = "https://hooks.example.com/batches";
  extended["max_attempts"] = 5;
  auto made = c.post_json("/v1/batches", extended);
  ASSERT_EQ(made.status, 200) << made.body;
  EXPECT_EQ(made.json()["max_inflight"], 2);
  EXPECT_EQ(made.json()["max_attempts"], 5);
  EXPECT_EQ(made.json()["webhook_url"], "https://hooks.example.com/batches");
  EXPECT_EQ(c.get("/v1/batches/" + made.json()["id"].get<std::string>()).json()["webhook_url"],
            "https://hooks.example.com/batches");
}

/// `n` copies of `c` (a UTF-8 sequence: one character).
std::string repeat(const std::string& c, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += c;
  return out;
}

// OpenAI's metadata limits are characters: "é" is 2 bytes, "€" 3 and "😀" 4, so 512 of them
// are 1,024 to 2,048 bytes and still within the value limit.
TEST(batch_http, metadata_limits_count_characters_not_bytes) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string fid = upload(c, form({{"purpose", "batch"}}, "in.jsonl", jsonl(1))).json()["id"];
  auto create = [&](const json& metadata) {
    return c.post_json("/v1/batches", {{"input_file_id", fid},
                                       {"endpoint", "/v1/chat/completions"},
                                       {"completion_window", "24h"},
                                       {"metadata", metadata}});
  };
  const json longest = {{repeat("é", 64), repeat("é", 512)},
                        {"euro", repeat("€", 512)},
                        {repeat("😀", 64), repeat("😀", 512)}};
  auto r = create(longest);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["metadata"], longest);
  expect_error(create({{"k", repeat("é", 513)}}), 400, "invalid_metadata", "metadata");
  expect_error(create({{"k", repeat("😀", 513)}}), 400, "invalid_metadata", "metadata");
  expect_error(create({{std::string(65, 'k'), "v"}}), 400, "invalid_metadata", "metadata");
  auto long_key = create({{repeat("é", 65), "v"}});
  expect_error(long_key, 400, "invalid_metadata", "metadata");
  // The key is quoted cut at whole characters, so the message stays valid UTF-8.
  EXPECT_NE(long_key.json()["error"]["message"].get<std::string>().find(repeat("é", 64) + "..."),
            std::string::npos);
  // Bytes that are not UTF-8 are refused before the limits are counted.
  auto invalid = c.request("POST", "/v1/batches",
                           R"({"input_file_id":")" + fid +
                               R"(","endpoint":"/v1/chat/completions","completion_window":"24h",)"
                               "\"metadata\":{\"k\":\"\xC3(\"}}",
                           {{"Content-Type", "application/json"}});
  expect_error(invalid, 400, "invalid_json");
  EXPECT_NE(invalid.json()["error"]["message"].get<std::string>().find("UTF-8"), std::string::npos)
      << invalid.body;
  EXPECT_EQ(c.get("/v1/batches").json()["data"].size(), 1u) << "only the valid batch exists";
}

TEST(batch_http, a_batch_runs_lists_and_its_files_download_and_delete) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string fid = upload(c, form({{"purpose", "batch"}}, "in.jsonl", jsonl(7))).json()["id"];
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = c.post_json("/v1/batches", {{"input_file_id", fid},
                                         {"endpoint", "/v1/chat/completions"},
                                         {"completion_window", "24h"},
                                         {"metadata", {{"n", std::to_string(i)}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    ids.push_back(r.json()["id"]);
  }
  json done;
  for (const auto& id : ids)
    ASSERT_TRUE(wait_for([&] {
      done = c.get("/v1/batches/" + id).json();
      return done["status"] == "completed";
    })) << done.dump();
  EXPECT_EQ(done["request_counts"]["completed"], 7);
  EXPECT_EQ(done["metadata"]["n"], "2");
  auto page = c.get("/v1/batches?limit=2").json();
  ASSERT_EQ(page["data"].size(), 2u);
  EXPECT_EQ(page["data"][0]["id"], ids[2]);
  EXPECT_EQ(page["first_id"], ids[2]);
  EXPECT_EQ(page["last_id"], ids[1]);
  EXPECT_TRUE(page["has_more"].get<bool>());
  auto rest = c.get("/v1/batches?limit=2&after=" + ids[1]).json();
  ASSERT_EQ(rest["data"].size(), 1u);
  EXPECT_EQ(rest["data"][0]["id"], ids[0]);
  EXPECT_FALSE(rest["has_more"].get<bool>());
  std::string out = done["output_file_id"];
  auto content = c.get("/v1/files/" + out + "/content");
  ASSERT_EQ(content.status, 200);
  std::istringstream lines(content.body);
  int n = 0;
  for (std::string l; std::getline(lines, l);) n += !l.empty();
  EXPECT_EQ(n, 7);
  auto outputs = c.get("/v1/files?purpose=batch_output&order=asc").json();
  EXPECT_EQ(outputs["data"].size(), 3u);
  auto del = c.request("DELETE", "/v1/files/" + out);
  ASSERT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(del.json(), (json{{"id", out}, {"object", "file"}, {"deleted", true}}));
  EXPECT_FALSE(fs::exists(env.engine().batches().file_path(out)));
  expect_error(c.get("/v1/files/" + out), 404, "file_not_found");
  // A finished batch cannot be cancelled.
  expect_error(c.request("POST", "/v1/batches/" + ids[0] + "/cancel"), 409,
               "batch_not_cancellable");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
