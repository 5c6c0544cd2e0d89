#include "tests/integration/webhook/webhook_env.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include <optional>

namespace sy::testing {

namespace asio = boost::asio;
using runtime::webhook_outcome;

fakes::webhook_receiver_options WebhookTest::receiver_options(int64_t tolerance_s) {
  fakes::webhook_receiver_options o;
  o.secret = kWebhookSecret;
  o.tolerance_s = tolerance_s;
  return o;
}

void WebhookTest::SetUp() { ASSERT_EQ(receiver.start(), ""); }

runtime::webhook_policy WebhookTest::loopback_policy(int64_t timeout_ms) {
  config::settings s;
  s.webhook_allow_loopback = true;
  s.webhook_timeout_ms = timeout_ms;
  auto p = runtime::make_webhook_policy(s);
  EXPECT_TRUE(p.ok());
  return p.ok() ? *p : runtime::webhook_policy{};
}

webhook_outcome WebhookTest::deliver(runtime::webhook_client& client, const std::string& url,
                                     const std::string& body, const std::string& delivery_id) {
  std::optional<webhook_outcome> out;
  asio::co_spawn(ioc, client.deliver(url, body, delivery_id),
                 [&](std::exception_ptr e, webhook_outcome o) {
                   EXPECT_FALSE(e) << "deliver threw";
                   out = std::move(o);
                 });
  ioc.restart();
  ioc.run_for(std::chrono::seconds(20));
  EXPECT_TRUE(out.has_value()) << "deliver did not finish";
  return out.value_or(webhook_outcome{});
}

std::vector<webhook_outcome> WebhookTest::deliver_all(runtime::webhook_client& client,
                                                      const std::string& url,
                                                      const std::vector<std::string>& bodies) {
  std::vector<std::optional<webhook_outcome>> outs(bodies.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    asio::co_spawn(ioc, client.deliver(url, bodies[i], "d" + std::to_string(i)),
                   [&outs, i](std::exception_ptr, webhook_outcome o) { outs[i] = std::move(o); });
  }
  ioc.restart();
  ioc.run_for(std::chrono::seconds(20));
  std::vector<webhook_outcome> done;
  for (auto& o : outs) {
    EXPECT_TRUE(o.has_value()) << "deliver did not finish";
    done.push_back(o.value_or(webhook_outcome{}));
  }
  return done;
}

std::string WebhookTest::body(const std::string& job_id, int64_t sequence) {
  return nlohmann::json{{"job_id", job_id}, {"sequence", sequence}, {"state", "succeeded"}}.dump();
}

int64_t WebhookTest::elapsed_ms(std::chrono::steady_clock::time_point start) {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now() - start).count();
}

uint16_t WebhookTest::closed_port() {
  asio::io_context ctx;
  asio::ip::tcp::acceptor a(ctx, {asio::ip::make_address_v4("127.0.0.1"), 0});
  return a.local_endpoint().port();  // closed when `a` goes out of scope
}

}  // namespace sy::testing
