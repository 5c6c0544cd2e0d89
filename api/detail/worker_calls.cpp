#include "api/detail/worker_calls.hpp"

namespace sy::api::detail {
namespace {

using nlohmann::json;

json leased_json(const actors::leased_task& t) {
  json j = {{"task_id", t.task_id},
            {"job_id", t.job_id},
            {"attempt", t.attempt},
            {"input", json::parse(t.input, nullptr, false)},
            {"lease_expires_at", t.lease_expires_at_ms / 1000},
            {"lease_expires_at_ms", t.lease_expires_at_ms},
            {"lease_ttl_ms", t.lease_ttl_ms},
            {"capability_token", t.capability_token}};
  if (!t.traceparent.empty()) j["traceparent"] = t.traceparent;
  if (!t.tracestate.empty()) j["tracestate"] = t.tracestate;
  return j;
}

}  // namespace

boost::asio::awaitable<result<json>> run(actors::core::client& core, const admission& admit,
                                         worker_call call) {
  namespace msg = actors::core;
  auto req = admit.worker_call(call.what, call.body, call.authorization, call.token);
  if (!req) co_return req.error();
  using kind = worker_request::kind;
  const kind what = (*req)->what;
  msg::request r = msg::worker_call{std::move(*req)};
  switch (what) {
    case kind::lease: {
      auto leased = co_await msg::ask<actors::lease_reply>(core, std::move(r), call.caller);
      if (!leased) co_return leased.error();
      json tasks = json::array();
      for (const auto& t : leased->tasks) tasks.push_back(leased_json(t));
      co_return json{{"tasks", std::move(tasks)}};
    }
    case kind::heartbeat: {
      auto a = co_await msg::ask<actors::heartbeat_answer>(core, std::move(r));
      if (!a) co_return a.error();
      co_return json{{"lease_expires_at", a->lease_expires_at_ms / 1000},
                     {"lease_expires_at_ms", a->lease_expires_at_ms},
                     {"capability_token", a->capability_token},
                     {"cancel_requested", a->cancel_requested}};
    }
    case kind::credentials: {
      auto c = co_await msg::ask<actors::storage_credentials>(core, std::move(r));
      if (!c) co_return c.error();
      co_return json{
          {"access_key_id", c->access_key_id}, {"secret_access_key", c->secret_access_key},
          {"session_token", c->session_token}, {"expiration", c->expiration},
          {"endpoint", c->endpoint},           {"region", c->region}};
    }
    case kind::complete:
    case kind::fail: {
      auto done = co_await msg::ask_done(core, std::move(r));
      if (!done) co_return done.error();
      co_return json{{"recorded", true}};
    }
  }
  co_return make_error(errc::internal_error, "an unknown worker call");
}

}  // namespace sy::api::detail
