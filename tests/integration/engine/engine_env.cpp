#include "tests/integration/engine/engine_env.hpp"

#include <gtest/gtest.h>

#include "tests/support/wait.hpp"

namespace sy::test {

engine_env::engine_env() {
  gateway_ = std::make_unique<fakes::fake_gateway>();
  gateway_->start();
  runtime::nats_server_options o;
  o.store_dir = dir_.sub("nats");
  o.log_file = dir_.sub("nats.log");
  auto n = runtime::nats_server::start(o);
  if (!n) throw std::runtime_error("nats-server: " + n.error().message);
  nats_ = std::move(n.value());

  settings_.listen = "127.0.0.1:0";
  settings_.data_dir = dir_.path();
  settings_.log_level = "warn";
  settings_.internal_listen = "127.0.0.1:0";
  config::gateway_settings gw;
  gw.url = gateway_->url();
  gw.request_timeout_ms = 5'000;
  gw.max_retries = 0;
  gw.initial_backoff_ms = 10;
  gw.max_backoff_ms = 50;
  settings_.gateway = gw;
  settings_.requeue_initial_backoff_ms = 50;
  settings_.requeue_max_backoff_ms = 200;
  settings_.lease_ttl_ms = 3'000;
  settings_.reaper_interval_ms = 200;
  settings_.shutdown_timeout_ms = 2'000;
  settings_.ack_wait_ms = 5'000;
  // Small enough for a temp dir, large enough that no test but the map-growth one fills it.
  settings_.lmdb_initial_map_bytes = int64_t{64} << 20;
}

engine_env::~engine_env() { stop(); }

runtime::manual_clock& engine_env::use_manual_clock(int64_t start_ms) {
  auto c = std::make_unique<runtime::manual_clock>(start_ms);
  auto& ref = *c;
  clock_ = std::move(c);
  return ref;
}

storage::environment& engine_env::open_store() {
  if (!env_) {
    auto e = storage::environment::open(settings_.data_dir, settings_.lmdb_initial_map_bytes);
    if (!e) throw std::runtime_error("lmdb: " + e.error().message);
    env_ = std::move(e.value());
  }
  return *env_;
}

void engine_env::start() {
  open_store();
  if (!js_) {
    runtime::js_layout layout;
    layout.ack_wait_ms = settings_.ack_wait_ms;
    auto js = runtime::js_client::connect(nats_->url(), "engine-test", layout, 5'000);
    if (!js) throw std::runtime_error("nats: " + js.error().message);
    js_ = std::move(js.value());
    if (auto st = js_->ensure_layout(); !st) throw std::runtime_error(st.error().message);
  }
  auto eng = actors::engine::start({settings_, *env_, *js_, *clock_});
  if (!eng) throw std::runtime_error("engine: " + eng.error().message);
  engine_ = std::move(eng.value());
  auto* e = engine_.get();
  core_ = std::make_unique<actors::core::local_client>(*e, e, &e->batches());
  auto bound = api::listener::bind(settings_.listen);
  if (!bound) throw std::runtime_error("http: " + bound.error().message);
  auto http = api::http_server::start(
      std::move(*bound), settings_, *core_, [e] { return e->ready(); }, &engine_->batches());
  if (!http) throw std::runtime_error("http: " + http.error().message);
  http_ = std::move(http.value());
  auto internal_bound = api::listener::bind(settings_.internal_listen);
  if (!internal_bound) throw std::runtime_error("internal http: " + internal_bound.error().message);
  auto internal = api::http_server::start_internal(std::move(*internal_bound), settings_, *core_,
                                                   [e] { return e->ready(); });
  if (!internal) throw std::runtime_error("internal http: " + internal.error().message);
  internal_ = std::move(internal.value());
}

void engine_env::stop() {
  if (http_) http_->stop_accepting();
  if (engine_) engine_->shutdown();  // ends the workers' long polls: the internal one drains fast
  if (internal_) internal_->stop_accepting();
  if (http_) http_->stop();
  if (internal_) internal_->stop();
  http_.reset();
  internal_.reset();
  core_.reset();
  engine_.reset();
}

http_reply engine_env::submit(http_client& c, const std::string& content, nlohmann::json fake,
                              const std::map<std::string, std::string>& headers,
                              nlohmann::json extra) {
  nlohmann::json body = {{"model", "test-model"},
                         {"messages", {{{"role", "user"}, {"content", content}}}}};
  if (!fake.is_null()) body["fake"] = fake;
  nlohmann::json req = {{"endpoint", "/v1/chat/completions"}, {"body", body}};
  for (auto it = extra.begin(); it != extra.end(); ++it) req[it.key()] = it.value();
  return c.post_json("/v1/jobs", req, headers);
}

nlohmann::json engine_env::wait_terminal(http_client& c, const std::string& id,
                                         std::chrono::milliseconds deadline) {
  nlohmann::json last;
  wait_for(
      [&] {
        auto r = c.get("/v1/jobs/" + id);
        last = r.json();
        if (r.status != 200) return false;
        auto s = last.value("status", "");
        return s == "completed" || s == "failed" || s == "cancelled" || s == "expired";
      },
      deadline);
  return last;
}

size_t engine_env::count(storage::db d) {
  auto txn = open_store().begin_read();
  if (!txn.ok()) throw std::runtime_error("lmdb: cannot begin a read transaction");
  size_t n = 0;
  txn.scan(d, "", [&](std::string_view, std::string_view) { return ++n, true; });
  return n;
}

}  // namespace sy::test
