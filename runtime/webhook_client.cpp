#include "runtime/webhook_client.hpp"

#include "runtime/outbound_http.hpp"

namespace sy::runtime {

namespace asio = boost::asio;

/// Largest answer body read (a failure's, for its error message).
constexpr uint64_t kMaxResponseBytes = uint64_t{64} * 1024;

struct webhook_client::impl {
  impl(asio::any_io_executor ex, webhook_policy policy, std::string key,
       std::shared_ptr<const clock> c, bool legacy)
      : out(std::move(ex), std::move(policy), c),
        key(std::move(key)),
        clk(std::move(c)),
        legacy_headers(legacy) {}
  outbound_client out;
  std::string key;
  std::shared_ptr<const clock> clk;
  bool legacy_headers;
};

namespace {

asio::awaitable<webhook_outcome> run_delivery(
    std::shared_ptr<const webhook_client::impl> self, std::string url, std::string body,
    std::string delivery_id, std::vector<std::pair<std::string, std::string>> extra) {
  outbound_request req;
  req.url = std::move(url);
  // Signed now, at send time, so that a delivery retried an hour later is not rejected by a
  // receiver's timestamp tolerance. The id is the delivery's, the same on every retry of it,
  // which is what a receiver deduplicates on.
  const int64_t now_s = self->clk->now_ms() / 1000;
  req.headers = {
      {"Content-Type", "application/json"},
      {"User-Agent", "switchyard-webhook"},
      {"webhook-id", delivery_id},
      {"webhook-timestamp", std::to_string(now_s)},
      {"webhook-signature", standard_webhook_signature(self->key, delivery_id, now_s, body)}};
  if (self->legacy_headers) {
    req.headers.emplace_back("X-Switchyard-Signature", webhook_signature(self->key, now_s, body));
    req.headers.emplace_back("X-Switchyard-Delivery", std::move(delivery_id));
  }
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

webhook_client::webhook_client(asio::any_io_executor ex, webhook_policy policy, std::string key,
                               std::shared_ptr<const clock> clk, bool legacy_headers)
    : impl_(std::make_shared<impl>(std::move(ex), std::move(policy), std::move(key),
                                   clk ? std::move(clk) : std::make_shared<system_clock_source>(),
                                   legacy_headers)) {}

webhook_client::~webhook_client() = default;

asio::awaitable<webhook_outcome> webhook_client::deliver(
    std::string url, std::string body, std::string delivery_id,
    std::vector<std::pair<std::string, std::string>> extra) {
  // Not a coroutine itself: the awaitable must not refer to `this`, only to the shared impl.
  return run_delivery(impl_, std::move(url), std::move(body), std::move(delivery_id),
                      std::move(extra));
}

}  // namespace sy::runtime
