#include "api/nats_service.hpp"

#include <algorithm>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "api/detail/worker_calls.hpp"
#include "api/errors.hpp"
#include "api/job_json.hpp"
#include "runtime/jetstream.hpp"
#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"

namespace sy::api {
namespace {

namespace asio = boost::asio;
using detail::worker_call;

micro_reply error_reply(const sy::error& e) {
  const auto& row = lookup_error(e.code);
  return micro_reply::failure(static_cast<int>(row.status),
                              e.message.empty() ? std::string(row.default_message) : e.message,
                              error_body(e));
}

/// A connect that retries in the background needs a callback (without one nats.c blocks until it
/// connects); the service has nothing to do then: nats.c makes its subscriptions on the server.
void on_connected(natsConnection*, void*) { log::info("nats", "service connected", {}); }

std::string header_or_empty(const micro_request& r, std::string_view name) {
  return r.header(name).value_or("");
}

/// `POST /v1/jobs` over NATS: through admission as an HTTP body goes (the payload judged as an
/// HTTP body of the same bytes), the answer after the commit.
asio::awaitable<void> create_job(actors::core::client& core, const admission& admit,
                                 micro_request req, micro_responder out) {
  const auto authorization = req.header("Authorization");
  const auto key = req.header("Idempotency-Key");
  const auto traceparent = req.header("traceparent");
  const auto tracestate = req.header("tracestate");
  auto view = [](const std::optional<std::string>& h) {
    return h ? std::optional<std::string_view>(*h) : std::nullopt;
  };
  client_request r{req.data,          view(authorization), view(key),
                   "Idempotency-Key", view(traceparent),   view(tracestate)};
  auto sub = admit.job(r);
  if (!sub) {
    (void)out.respond(error_reply(sub.error()));
    co_return;
  }
  actors::core::request submit = actors::core::submit_job{std::move(*sub)};
  auto made = co_await actors::core::ask<actors::submit_outcome>(core, std::move(submit));
  (void)out.respond(made ? micro_reply{job_json(made->job), {}, std::nullopt}
                         : error_reply(made.error()));
}

asio::awaitable<void> task_call(actors::core::client& core, const admission& admit,
                                worker_call call, micro_responder out) {
  auto answer = co_await detail::run(core, admit, std::move(call));
  (void)out.respond(answer ? micro_reply{answer->dump(), {}, std::nullopt}
                           : error_reply(answer.error()));
}

}  // namespace

nats_service::nats_service(const config::settings& settings, actors::core::client& core)
    : admission_(settings),
      core_(core),
      prefix_(settings.subject_prefix),
      shutdown_timeout_ms_(settings.shutdown_timeout_ms) {}

micro_config nats_service::config(int64_t now_ms) {
  micro_config c;
  c.name = "switchyard";
  c.version = "0.1.0";
  c.description = "Switchyard: job submission and the worker protocol (docs/nats.md)";
  c.started_ms = now_ms;
  // Its drain is part of the engine's stop, so it gets no more than the engine's grace.
  c.stop_timeout_ms = std::min(c.stop_timeout_ms, shutdown_timeout_ms_);
  c.endpoints.push_back({"jobs_create",
                         prefix_ + ".api.jobs.create",
                         [this](const micro_request& r, micro_responder out) {
                           asio::co_spawn(io_, create_job(core_, admission_, r, std::move(out)),
                                          asio::detached);
                         },
                         {}});
  const std::pair<const char*, worker_call::kind> calls[] = {
      {"lease", worker_call::kind::lease},
      {"heartbeat", worker_call::kind::heartbeat},
      {"complete", worker_call::kind::complete},
      {"fail", worker_call::kind::fail},
      {"credentials", worker_call::kind::credentials}};
  for (const auto& [name, kind] : calls) {
    c.endpoints.push_back({std::string("task_") + name,
                           prefix_ + ".task." + name,
                           [this, kind = kind](const micro_request& r, micro_responder out) {
                             worker_call call{kind, r.data, header_or_empty(r, "Authorization"),
                                              header_or_empty(r, detail::capability_header),
                                              nullptr};  // NATS has no connection to watch
                             asio::co_spawn(
                                 io_, task_call(core_, admission_, std::move(call), std::move(out)),
                                 asio::detached);
                           },
                           {}});
  }
  return c;
}

result<std::unique_ptr<nats_service>> nats_service::start(const config::settings& settings,
                                                          const std::string& nats_url,
                                                          actors::core::client& core,
                                                          int64_t now_ms) {
  std::unique_ptr<nats_service> s(new nats_service(settings, core));
  natsOptions* opts = nullptr;
  natsStatus st = natsOptions_Create(&opts);
  if (st != NATS_OK)
    return make_error(errc::nats_error,
                      std::string("cannot configure the NATS service: ") + natsStatus_GetText(st));
  if (auto servers = runtime::set_nats_servers(opts, nats_url); !servers) {
    natsOptions_Destroy(opts);
    return servers.error();
  }
  st = natsOptions_SetName(opts, "switchyard-service");
  if (st == NATS_OK) st = natsOptions_SetMaxReconnect(opts, -1);
  if (st == NATS_OK) st = natsOptions_SetReconnectWait(opts, 250);
  if (st == NATS_OK) st = natsOptions_SetRetryOnFailedConnect(opts, true, on_connected, nullptr);
  if (st == NATS_OK) st = natsConnection_Connect(&s->nc_, opts);
  natsOptions_Destroy(opts);
  if (st != NATS_OK && st != NATS_NOT_YET_CONNECTED)
    return make_error(errc::nats_error, std::string("cannot connect the NATS service to ") +
                                            nats_url + ": " + natsStatus_GetText(st));
  auto micro = micro_service::start(s->nc_, s->config(now_ms));
  if (!micro) return micro.error();
  s->micro_ = std::move(*micro);
  s->thread_ = std::thread([io = &s->io_] {
    runtime::name_this_thread("sy-nats-svc");
    io->run();
  });
  log::info("nats", "service started", {{"name", "switchyard"}, {"id", s->micro_->id()}});
  return s;
}

void nats_service::stop_accepting() {
  if (micro_) (void)micro_->stop();  // drains: requests received are handed to the io thread
}

void nats_service::stop() {
  if (stopped_) return;
  stopped_ = true;
  stop_accepting();
  work_.reset();
  if (thread_.joinable()) thread_.join();  // their coroutines end (they answer or fail)
  micro_.reset();
  if (nc_ != nullptr) natsConnection_Destroy(nc_);
  nc_ = nullptr;
}

nats_service::~nats_service() { stop(); }

}  // namespace sy::api
