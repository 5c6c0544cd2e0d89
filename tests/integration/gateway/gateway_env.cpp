#include "tests/integration/gateway/gateway_env.hpp"

#include <boost/asio/co_spawn.hpp>
#include <nlohmann/json.hpp>

#include <optional>

namespace sy::testing {

namespace asio = boost::asio;
using runtime::gateway_outcome;

void GatewayTest::SetUp() { ASSERT_EQ(fake.start(), ""); }

config::gateway_settings GatewayTest::settings() const {
  config::gateway_settings s;
  s.url = fake.url();
  s.request_timeout_ms = 3'000;
  s.max_retries = 2;
  s.initial_backoff_ms = 5;
  s.max_backoff_ms = 20;
  s.max_connections = 4;
  return s;
}

gateway_outcome GatewayTest::send(runtime::gateway_client& client, runtime::gateway_request req,
                                  std::shared_ptr<runtime::abort_handle> abort) {
  std::optional<gateway_outcome> out;
  asio::co_spawn(ioc, client.send(std::move(req), std::move(abort)),
                 [&](std::exception_ptr, gateway_outcome o) { out = std::move(o); });
  ioc.restart();
  ioc.run_for(std::chrono::seconds(20));
  EXPECT_TRUE(out.has_value()) << "send did not finish";
  return out.value_or(gateway_outcome{});
}

std::vector<gateway_outcome> GatewayTest::send_all(runtime::gateway_client& client,
                                                   std::vector<runtime::gateway_request> reqs) {
  std::vector<std::optional<gateway_outcome>> outs(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    asio::co_spawn(ioc, client.send(std::move(reqs[i])),
                   [&outs, i](std::exception_ptr, gateway_outcome o) { outs[i] = std::move(o); });
  }
  ioc.restart();
  ioc.run_for(std::chrono::seconds(20));
  std::vector<gateway_outcome> done;
  for (auto& o : outs) {
    EXPECT_TRUE(o.has_value()) << "send did not finish";
    done.push_back(o.value_or(gateway_outcome{}));
  }
  return done;
}

int64_t GatewayTest::elapsed_ms(std::chrono::steady_clock::time_point start) {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now() - start).count();
}

runtime::gateway_request chat(const std::string& text, const std::string& fake_json) {
  nlohmann::json body = {{"model", "gpt-test"},
                         {"messages", {{{"role", "user"}, {"content", text}}}}};
  if (!fake_json.empty()) body["fake"] = nlohmann::json::parse(fake_json);
  return {"/v1/chat/completions", body.dump()};
}

}  // namespace sy::testing
