#include "api/core_bridge.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "runtime/log.hpp"

namespace sy::api {
namespace {

namespace asio = boost::asio;
namespace core = actors::core;

std::string text(natsStatus s) { return natsStatus_GetText(s); }

/// Decodes, serves and answers one request; a request that does not decode is answered with
/// its error, as any other.
asio::awaitable<void> serve_one(natsConnection* nc, core::client& local, std::string data,
                                std::string reply_to) {
  auto request = core::decode_request(data);
  core::reply answer{request ? sy::error{} : request.error()};
  // Not in a conditional expression: g++ 12 destroys a value awaited there twice.
  if (request) answer = co_await local.call(std::move(*request));
  if (reply_to.empty()) co_return;
  const std::string bytes = core::encode(answer);
  if (auto s = natsConnection_Publish(nc, reply_to.c_str(), bytes.data(),
                                      static_cast<int>(bytes.size()));
      s != NATS_OK)
    log::warn("core", "could not answer a forwarded request",
              {{"reply_to", reply_to}, {"error", text(s)}});
}

}  // namespace

core_bridge::core_bridge(natsConnection* nc, actors::core::client& core)
    : nc_(nc),
      core_(core),
      work_(std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
          io_.get_executor())),
      thread_([this] { io_.run(); }) {}

result<std::unique_ptr<core_bridge>> core_bridge::start(natsConnection* nc,
                                                        const std::string& subject,
                                                        actors::core::client& core) {
  std::unique_ptr<core_bridge> b{new core_bridge(nc, core)};
  if (auto s = natsConnection_QueueSubscribe(&b->sub_, nc, subject.c_str(), "core",
                                             &core_bridge::on_request, b.get());
      s != NATS_OK)
    return make_error(errc::nats_error, "cannot subscribe " + subject + ": " + text(s));
  if (auto s = natsConnection_Flush(nc); s != NATS_OK)
    return make_error(errc::nats_error, "cannot subscribe " + subject + ": " + text(s));
  return b;
}

void core_bridge::on_request(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  auto* self = static_cast<core_bridge*>(closure);
  std::string data(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
  const char* reply = natsMsg_GetReply(msg);
  std::string reply_to = reply ? reply : "";
  natsMsg_Destroy(msg);
  asio::co_spawn(self->io_, serve_one(self->nc_, self->core_, std::move(data), std::move(reply_to)),
                 asio::detached);
}

void core_bridge::stop() {
  if (sub_) {
    // After Unsubscribe returns, no callback runs any more (nats.c waits for the one running).
    natsSubscription_Unsubscribe(sub_);
    natsSubscription_Destroy(sub_);
    sub_ = nullptr;
  }
  work_.reset();
  if (thread_.joinable()) thread_.join();
}

core_bridge::~core_bridge() { stop(); }

result<core::reply> call_core(natsConnection* nc, const std::string& subject,
                              const core::request& r, std::chrono::milliseconds timeout) {
  const std::string bytes = core::encode(r);
  natsMsg* answer = nullptr;
  auto s = natsConnection_Request(&answer, nc, subject.c_str(), bytes.data(),
                                  static_cast<int>(bytes.size()), timeout.count());
  if (s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS)
    return make_error(errc::nats_unavailable, "no node answered on " + subject + " within " +
                                                  std::to_string(timeout.count()) +
                                                  " ms: " + text(s));
  if (s != NATS_OK) return make_error(errc::nats_error, "cannot ask " + subject + ": " + text(s));
  auto reply = core::decode_reply(std::string_view(
      natsMsg_GetData(answer), static_cast<size_t>(natsMsg_GetDataLength(answer))));
  natsMsg_Destroy(answer);
  return reply;
}

}  // namespace sy::api
