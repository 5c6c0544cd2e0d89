#include "runtime/webhook_client.hpp"

#include "runtime/outbound_http.hpp"

namespace sy::runtime {

namespace asio = boost::asio;

/// Largest answer body read (a failure's, for its error message).
constexpr uint64_t kMaxResponseBytes = uint64_t{64} * 1024;

struct webhook_client::impl {
  impl(asio::any_io_executor ex, webhook_policy policy, std::string secret,
       std::shared_ptr<const clock> c)
      : out(std::move(ex), std::move(policy)), secret(std::move(secret)), clk(std::move(c)) {}
  outbound_client out;
  std::string secret;
  std::shared_ptr<const clock> clk;
};

namespace {

asio::awaitable<webhook_outcome> run_delivery(
    std::shared_ptr<const webhook_client::impl> self, std::string url, std::string body,
    std::string delivery_id, std::vector<std::pair<std::string, std::string>> extra) {
  outbound_request req;
  req.url = std::move(url);
  // Signed now, at send time, so that a delivery retried an hour later is not rejected by a
  // receiver's timestamp tolerance.
  req.headers = {
      {"Content-Type", "application/json"},
      {"User-Agent", "switchyard-webhook"},
      {"X-Switchyard-Signature", webhook_signature(self->secret, self->clk->now_ms() / 1000, body)},
      {"X-Switchyard-Delivery", std::move(delivery_id)}};
  for (auto& h : extra) req.headers.push_back(std::move(h));
  req.body = std::move(body);
  outbound_options options;
  options.max_body_bytes = kMaxResponseBytes;
  auto r = co_await self->out.send(std::move(req), std::move(options));
  webhook_outcome out;
  out.delivered = r.answered && r.status_code >= 200 && r.status_code <= 299;
  out.permanent = r.permanent;
  out.status_code = r.status_code;
  out.error = std::move(r.error);
  co_return out;
}

}  // namespace

webhook_client::webhook_client(asio::any_io_executor ex, webhook_policy policy, std::string secret,
                               std::shared_ptr<const clock> clk)
    : impl_(
          std::make_shared<impl>(std::move(ex), std::move(policy), std::move(secret),
                                 clk ? std::move(clk) : std::make_shared<system_clock_source>())) {}

webhook_client::~webhook_client() = default;

asio::awaitable<webhook_outcome> webhook_client::deliver(
    std::string url, std::string body, std::string delivery_id,
    std::vector<std::pair<std::string, std::string>> extra) {
  // Not a coroutine itself: the awaitable must not refer to `this`, only to the shared impl.
  return run_delivery(impl_, std::move(url), std::move(body), std::move(delivery_id),
                      std::move(extra));
}

}  // namespace sy::runtime
