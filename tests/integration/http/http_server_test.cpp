#include "api/http_server.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/limits.hpp"
#include "config/sha256.hpp"
#include "tests/integration/http/http_client.hpp"
#include "tests/integration/http/memory_job_service.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;
using std::chrono::milliseconds;

const std::string job_body =
    R"({"endpoint":"/v1/chat/completions","body":{"model":"m1","messages":[]}})";

class http_server_test : public ::testing::Test {
 protected:
  void start(config::settings s) {
    s.listen = "127.0.0.1:0";
    auto bound = api::listener::bind(s.listen);
    ASSERT_TRUE(bound.ok()) << bound.error().message;
    auto server =
        api::http_server::start(std::move(*bound), s, core_, [this] { return ready_.load(); });
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
    ASSERT_NE(server_->port(), 0);
  }
  void SetUp() override {
    config::settings s;
    s.max_body_bytes = 1024;
    s.http_read_timeout_ms = 2000;
    s.api_keys = {{config::sha256_hex("key-a"), "a"}, {config::sha256_hex("key-b"), "b"}};
    start(s);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  http_response call(http_request req) {
    http_client client(server_->port());
    EXPECT_FALSE(client.connect());
    beast::error_code ec;
    auto res = client.roundtrip(std::move(req), ec);
    EXPECT_FALSE(ec) << ec.message();
    return res;
  }
  http_response submit(const std::string& body, const std::string& key = "key-a",
                       const std::string& idempotency_key = {}) {
    auto req = make_request(http::verb::post, "/v1/jobs", body, "application/json", key);
    if (!idempotency_key.empty()) req.set("Idempotency-Key", idempotency_key);
    return call(std::move(req));
  }
  static json error_of(const http_response& res) {
    auto j = json::parse(res.body(), nullptr, false);
    EXPECT_TRUE(j.contains("error")) << res.body();
    return j.is_object() ? j.value("error", json()) : json();
  }

  memory_job_service service_;
  actors::core::local_client core_{service_};
  std::atomic<bool> ready_{true};
  std::unique_ptr<api::http_server> server_;
};

TEST_F(http_server_test, submit_answers_202_with_location_and_retry_after) {
  auto res = submit(job_body);
  ASSERT_EQ(res.result(), http::status::accepted) << res.body();
  auto j = json::parse(res.body());
  EXPECT_EQ(j["object"], "job");
  EXPECT_EQ(j["status"], "queued");
  EXPECT_EQ(j["model"], "m1");
  EXPECT_EQ(res[http::field::location], "/v1/jobs/" + j["id"].get<std::string>());
  EXPECT_EQ(res[http::field::retry_after], "1");
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_FALSE(res["x-request-id"].empty());
  EXPECT_EQ(service_.submits.load(), 1);
}

TEST_F(http_server_test, get_returns_the_job_or_404) {
  auto id = json::parse(submit(job_body).body())["id"].get<std::string>();
  auto res = call(make_request(http::verb::get, "/v1/jobs/" + id, "", "", "key-a"));
  ASSERT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(json::parse(res.body())["id"], id);
  auto missing = call(make_request(http::verb::get, "/v1/jobs/job_nope", "", "", "key-a"));
  EXPECT_EQ(missing.result(), http::status::not_found);
  EXPECT_EQ(error_of(missing)["code"], "job_not_found");
  EXPECT_FALSE(missing["x-request-id"].empty());
}

TEST_F(http_server_test, another_tenants_job_is_404) {
  auto id = json::parse(submit(job_body).body())["id"].get<std::string>();
  auto res = call(make_request(http::verb::get, "/v1/jobs/" + id, "", "", "key-b"));
  EXPECT_EQ(res.result(), http::status::not_found);
  EXPECT_EQ(error_of(res)["code"], "job_not_found");
}

TEST_F(http_server_test, api_key_is_required_and_checked) {
  auto missing = call(make_request(http::verb::post, "/v1/jobs", job_body));
  EXPECT_EQ(missing.result(), http::status::unauthorized);
  EXPECT_EQ(error_of(missing)["code"], "missing_api_key");
  auto wrong = submit(job_body, "key-c");
  EXPECT_EQ(wrong.result(), http::status::unauthorized);
  EXPECT_EQ(error_of(wrong)["type"], "authentication_error");
  EXPECT_EQ(service_.submits.load(), 0);
}

TEST_F(http_server_test, idempotent_resubmission) {
  auto first = submit(job_body, "key-a", "k1");
  ASSERT_EQ(first.result(), http::status::accepted);
  auto id = json::parse(first.body())["id"];
  auto again = submit(job_body, "key-a", "k1");
  EXPECT_EQ(again.result(), http::status::accepted);
  EXPECT_EQ(json::parse(again.body())["id"], id);
  service_.set_status(id, storage::job_status::completed);
  auto done = submit(job_body, "key-a", "k1");
  EXPECT_EQ(done.result(), http::status::ok);
  EXPECT_TRUE(done[http::field::retry_after].empty());
  EXPECT_EQ(json::parse(done.body())["result"]["body"], json({{"ok", true}}));
  auto other = R"({"endpoint":"/v1/embeddings","body":{"model":"m1"}})";
  auto conflict = submit(other, "key-a", "k1");
  EXPECT_EQ(conflict.result(), http::status::unprocessable_entity);
  EXPECT_EQ(error_of(conflict)["code"], "idempotency_conflict");
  auto bad_key = submit(job_body, "key-a", std::string(256, 'k'));
  EXPECT_EQ(bad_key.result(), http::status::bad_request);
  EXPECT_EQ(error_of(bad_key)["code"], "invalid_idempotency_key");
}

TEST_F(http_server_test, malformed_json_is_400_with_envelope) {
  auto res = submit(R"({"endpoint": "/v1/embeddings", "body": {)");
  EXPECT_EQ(res.result(), http::status::bad_request);
  auto e = error_of(res);
  EXPECT_EQ(e["code"], "invalid_json");
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_TRUE(e["param"].is_null());
  EXPECT_NE(e["message"].get<std::string>().find("byte"), std::string::npos) << e;
  EXPECT_EQ(service_.submits.load(), 0);
}

TEST_F(http_server_test, validation_errors_name_the_parameter) {
  auto res = submit(R"({"endpoint":"/v1/chat/completions","body":{"messages":[]}})");
  EXPECT_EQ(res.result(), http::status::bad_request);
  EXPECT_EQ(error_of(res)["param"], "body.model");
  EXPECT_EQ(service_.submits.load(), 0);
}

TEST_F(http_server_test, wrong_content_type_is_415) {
  auto req = make_request(http::verb::post, "/v1/jobs", job_body, "text/plain", "key-a");
  auto res = call(std::move(req));
  EXPECT_EQ(res.result(), http::status::unsupported_media_type);
  EXPECT_EQ(error_of(res)["code"], "unsupported_media_type");
  auto charset = make_request(http::verb::post, "/v1/jobs", job_body,
                              "Application/JSON; charset=utf-8", "key-a");
  EXPECT_EQ(call(std::move(charset)).result(), http::status::accepted);
}

TEST_F(http_server_test, body_over_the_limit_is_413_and_never_reaches_the_service) {
  std::string big = R"({"endpoint":"/v1/embeddings","body":{"model":"m","input":")" +
                    std::string(4096, 'x') + R"("}})";
  http_client client(server_->port());
  ASSERT_FALSE(client.connect());
  beast::error_code ec;
  auto res = client.roundtrip(
      make_request(http::verb::post, "/v1/jobs", big, "application/json", "key-a"), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.result(), http::status::payload_too_large);
  EXPECT_EQ(error_of(res)["code"], "body_too_large");
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(client.wait_closed(milliseconds(3000)), boost::asio::error::eof);
  EXPECT_EQ(service_.submits.load(), 0);
}

TEST_F(http_server_test, unknown_route_is_404_and_wrong_method_is_405) {
  auto unknown = call(make_request(http::verb::get, "/v1/nothing-here"));
  EXPECT_EQ(unknown.result(), http::status::not_found);
  EXPECT_EQ(error_of(unknown)["code"], "not_found");
  auto wrong = call(make_request(http::verb::delete_, "/v1/jobs"));
  EXPECT_EQ(wrong.result(), http::status::method_not_allowed);
  EXPECT_EQ(wrong[http::field::allow], "POST, GET");  // GET lists jobs
  EXPECT_EQ(error_of(wrong)["code"], "method_not_allowed");
  auto get_only = call(make_request(http::verb::post, "/healthz", "{}"));
  EXPECT_EQ(get_only[http::field::allow], "GET");
}

TEST_F(http_server_test, health_and_readiness) {
  auto health = call(make_request(http::verb::get, "/healthz"));
  EXPECT_EQ(health.result(), http::status::ok);
  EXPECT_EQ(json::parse(health.body()), json({{"status", "ok"}}));
  EXPECT_EQ(call(make_request(http::verb::get, "/readyz")).result(), http::status::ok);
  ready_ = false;
  auto not_ready = call(make_request(http::verb::get, "/readyz"));
  EXPECT_EQ(not_ready.result(), http::status::service_unavailable);
  EXPECT_EQ(not_ready[http::field::content_type], "application/json");
}

TEST_F(http_server_test, the_dashboard_is_served_from_the_binary_at_ui) {
  auto page = call(make_request(http::verb::get, "/ui/"));
  ASSERT_EQ(page.result(), http::status::ok) << page.body();
  EXPECT_EQ(page[http::field::content_type], "text/html; charset=utf-8");
  EXPECT_NE(page.body().find("<script type=\"module\" src=\"app.js\""), std::string::npos)
      << page.body();
  // Only the engine's own origin: no inline script, no other host.
  EXPECT_NE(page["Content-Security-Policy"].find("default-src 'self'"), std::string::npos);
  EXPECT_EQ(page["X-Content-Type-Options"], "nosniff");
  auto script = call(make_request(http::verb::get, "/ui/app.js"));
  ASSERT_EQ(script.result(), http::status::ok);
  EXPECT_EQ(script[http::field::content_type], "text/javascript; charset=utf-8");
  EXPECT_GT(script.body().size(), 1000u);
  auto style = call(make_request(http::verb::get, "/ui/app.css?v=1"));
  EXPECT_EQ(style[http::field::content_type], "text/css; charset=utf-8");
  auto bare = call(make_request(http::verb::get, "/ui"));
  EXPECT_EQ(bare.result(), http::status::permanent_redirect);
  EXPECT_EQ(bare[http::field::location], "/ui/");
  auto missing = call(make_request(http::verb::get, "/ui/secrets.txt"));
  EXPECT_EQ(missing.result(), http::status::not_found);
  EXPECT_EQ(error_of(missing)["code"], "not_found");
  auto up = call(make_request(http::verb::get, "/ui/..%2Fapi%2Fauth.cpp"));
  EXPECT_EQ(up.result(), http::status::not_found);
}

TEST_F(http_server_test, keep_alive_serves_several_requests_on_one_connection) {
  http_client client(server_->port());
  ASSERT_FALSE(client.connect());
  std::string first_request_id;
  for (int i = 0; i < 5; ++i) {
    beast::error_code ec;
    auto res = client.roundtrip(
        make_request(http::verb::post, "/v1/jobs", job_body, "application/json", "key-a"), ec);
    ASSERT_FALSE(ec) << "request " << i << ": " << ec.message();
    EXPECT_EQ(res.result(), http::status::accepted);
    EXPECT_TRUE(res.keep_alive());
    EXPECT_NE(res["x-request-id"], first_request_id);
    if (i == 0) first_request_id = std::string(res["x-request-id"]);
    auto missing = client.roundtrip(make_request(http::verb::get, "/nope"), ec);
    ASSERT_FALSE(ec);
    EXPECT_EQ(missing.result(), http::status::not_found);
  }
  EXPECT_EQ(service_.submits.load(), 5);
}

TEST_F(http_server_test, stop_accepting_closes_idle_connections) {
  http_client idle(server_->port());
  ASSERT_FALSE(idle.connect());
  beast::error_code ec;
  idle.roundtrip(make_request(http::verb::get, "/healthz"), ec);
  ASSERT_FALSE(ec);
  server_->stop_accepting();
  EXPECT_EQ(idle.wait_closed(milliseconds(3000)), boost::asio::error::eof);
  http_client late(server_->port());
  EXPECT_TRUE(late.connect());  // the listener is closed
}

TEST_F(http_server_test, stop_accepting_lets_an_in_flight_request_finish) {
  service_.hold();
  http_client client(server_->port());
  ASSERT_FALSE(client.connect());
  auto req = make_request(http::verb::post, "/v1/jobs", job_body, "application/json", "key-a");
  ASSERT_FALSE(client.write(req));
  ASSERT_TRUE(service_.wait_suspended(1, milliseconds(3000)));
  std::thread stopper([this] { server_->stop_accepting(); });
  auto deadline = std::chrono::steady_clock::now() + milliseconds(3000);
  while (!server_->draining() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  bool draining = server_->draining();
  service_.release();
  stopper.join();
  ASSERT_TRUE(draining);
  http_response res;
  ASSERT_FALSE(client.read(res));
  EXPECT_EQ(res.result(), http::status::accepted);
  EXPECT_FALSE(res.keep_alive());  // draining: the connection closes after this response
  EXPECT_EQ(client.wait_closed(milliseconds(3000)), boost::asio::error::eof);
}

TEST_F(http_server_test, headers_up_to_the_limit_are_read_one_byte_more_is_431) {
  // The request line and headers, with the blank line that ends them, exactly
  // limits::http_header_max_bytes long, then one byte longer.
  auto raw = [](size_t total) {
    const std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ";
    const std::string tail = "\r\n\r\n";
    return head + std::string(total - head.size() - tail.size(), 'p') + tail;
  };
  for (size_t total :
       {limits::http_header_max_bytes, limits::http_header_max_bytes + 1, size_t{16'384}}) {
    http_client client(server_->port());
    ASSERT_FALSE(client.connect());
    ASSERT_EQ(raw(total).size(), total);
    ASSERT_FALSE(client.write_raw(raw(total)));
    http_response res;
    ASSERT_FALSE(client.read(res)) << total;
    if (total <= limits::http_header_max_bytes) {
      EXPECT_EQ(res.result_int(), 200u) << total << " " << res.body();
    } else {
      EXPECT_EQ(res.result_int(), 431u) << total << " " << res.body();
      EXPECT_EQ(nlohmann::json::parse(res.body())["error"]["code"], "header_too_large");
    }
  }
}

class slow_client_test : public http_server_test {
 protected:
  void SetUp() override {
    config::settings s;
    s.http_read_timeout_ms = 200;
    start(s);
  }
};

TEST_F(slow_client_test, half_a_header_is_cut_off_after_the_read_timeout) {
  http_client client(server_->port());
  ASSERT_FALSE(client.connect());
  auto started = std::chrono::steady_clock::now();
  ASSERT_FALSE(client.write_raw("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Ty"));
  auto ec = client.wait_closed(milliseconds(3000));
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset)
      << ec.message();
  EXPECT_GE(waited, milliseconds(150));
  EXPECT_LT(waited, milliseconds(3000));
  EXPECT_EQ(service_.submits.load(), 0);
}

TEST_F(slow_client_test, no_keys_means_the_default_tenant) {
  auto res = call(make_request(http::verb::post, "/v1/jobs", job_body));
  ASSERT_EQ(res.result(), http::status::accepted) << res.body();
  auto id = json::parse(res.body())["id"].get<std::string>();
  EXPECT_EQ(call(make_request(http::verb::get, "/v1/jobs/" + id)).result(), http::status::ok);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
