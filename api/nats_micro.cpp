#include "api/nats_micro.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <exception>
#include <mutex>
#include <random>
#include <regex>

#include <nlohmann/json.hpp>

#include "runtime/nats_headers.hpp"

namespace sy::api {
namespace {

using json = nlohmann::json;
using steady = std::chrono::steady_clock;

constexpr std::string_view srv_prefix = "$SRV";
constexpr const char* error_header = "Nats-Service-Error";
constexpr const char* error_code_header = "Nats-Service-Error-Code";

/// Set on nats.c's delivery threads while one of our callbacks runs: stop() called from a
/// handler must not wait for that very handler to return.
thread_local bool in_callback = false;

/// The one adapter from nats.c's status and thread-local error text to our error type.
sy::error nats_error(const std::string& what, natsStatus s) {
  const char* text = nats_GetLastError(nullptr);
  std::string msg =
      what + " failed: " + (text != nullptr && *text != '\0' ? text : natsStatus_GetText(s)) + '.';
  const bool down = s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED ||
                    s == NATS_NO_SERVER || s == NATS_NOT_YET_CONNECTED ||
                    s == NATS_STALE_CONNECTION;
  return make_error(down ? errc::nats_unavailable : errc::nats_error, std::move(msg));
}

bool is_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '_';
  });
}

/// The regular expression semver.org suggests, without the named groups.
bool is_semver(const std::string& v) {
  static const std::regex semver(R"(^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*))"
                                 R"((?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))"
                                 R"((?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?)"
                                 R"((?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$)");
  return std::regex_match(v, semver);
}

/// A NATS subject: dot-separated non-empty tokens without whitespace; `*` is a whole token and
/// `>` the whole last one, and only when `wildcards` is allowed.
bool is_subject(std::string_view s, bool wildcards) {
  if (s.empty()) return false;
  size_t start = 0;
  for (;;) {
    const size_t dot = s.find('.', start);
    const std::string_view tok = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (tok.empty()) return false;
    for (unsigned char c : tok)
      if (std::isspace(c) != 0 || c < 0x20) return false;
    const bool wild_tok = tok == "*" || (tok == ">" && dot == std::string_view::npos);
    if (tok.find_first_of("*>") != std::string_view::npos && (!wildcards || !wild_tok))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

/// 22 random characters of [0-9A-Za-z] (about 131 bits), like the other clients' NUIDs.
std::string make_id() {
  static constexpr std::string_view digits =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::random_device rd;
  std::uniform_int_distribution<size_t> pick(0, digits.size() - 1);
  std::string id(22, '0');
  for (char& c : id) c = digits[pick(rd)];
  return id;
}

/// `ms` since the epoch as RFC 3339 in UTC with milliseconds, e.g. 2024-05-01T12:00:00.250Z.
std::string rfc3339(int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  const int64_t frac = ms - static_cast<int64_t>(secs) * 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(frac));
  return buf;
}

std::map<std::string, std::string> read_headers(natsMsg* msg) {
  std::map<std::string, std::string> out;
  for (auto& [key, value] : runtime::read_nats_headers(msg)) out.emplace(key, std::move(value));
  return out;
}

micro_request read_request(natsMsg* msg, const std::string& endpoint) {
  const char* data = natsMsg_GetData(msg);
  const char* reply = natsMsg_GetReply(msg);
  return micro_request{endpoint, natsMsg_GetSubject(msg),
                       data == nullptr
                           ? std::string()
                           : std::string(data, static_cast<size_t>(natsMsg_GetDataLength(msg))),
                       read_headers(msg), reply == nullptr ? std::string() : std::string(reply)};
}

status publish(natsConnection* nc, const std::string& subject, const micro_reply& reply) {
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, reply.data.data(),
                                static_cast<int>(reply.data.size()));
  for (const auto& [name, value] : reply.headers)
    if (s == NATS_OK) s = natsMsgHeader_Add(msg, name.c_str(), value.c_str());
  if (s == NATS_OK && reply.error) {
    s = natsMsgHeader_Set(msg, error_header, reply.error->description.c_str());
    if (s == NATS_OK)
      s = natsMsgHeader_Set(msg, error_code_header, std::to_string(reply.error->code).c_str());
  }
  if (s == NATS_OK) s = natsConnection_PublishMsg(nc, msg);
  natsMsg_Destroy(msg);
  if (s != NATS_OK) return nats_error("Replying on " + subject, s);
  return sy::ok;
}

/// What a subscription delivers to: an endpoint's requests or one discovery verb.
enum class verb { endpoint, ping, info, stats };

struct endpoint_counters {
  uint64_t requests = 0;
  uint64_t errors = 0;
  std::string last_error;
  int64_t processing_ns = 0;
};

}  // namespace

/// The state the nats.c callbacks share with the service object. It lives as long as the last
/// subscription still holds it (until nats.c has called its completion callback), so a callback
/// running late never touches freed memory.
struct micro_service::core {
  natsConnection* nc = nullptr;
  micro_config config;
  std::string id;
  std::string started;  ///< RFC 3339

  mutable std::mutex mu;
  std::vector<endpoint_counters> counters;  // guarded by mu

  std::mutex done_mu;
  std::condition_variable done_cv;
  int open_subs = 0;  ///< subscriptions whose completion callback is still due; guarded by done_mu

  void record(size_t endpoint, int64_t ns, const micro_reply& reply) {
    std::lock_guard lock(mu);
    auto& c = counters[endpoint];
    ++c.requests;
    c.processing_ns += ns;
    if (reply.error) {
      ++c.errors;
      c.last_error = std::to_string(reply.error->code) + ":" + reply.error->description;
    }
  }

  json identity(const char* type) const {
    json metadata = json::object();
    for (const auto& [k, v] : config.metadata) metadata[k] = v;
    return {{"type", type},
            {"name", config.name},
            {"id", id},
            {"version", config.version},
            {"metadata", std::move(metadata)}};
  }

  json info() const {
    json doc = identity("io.nats.micro.v1.info_response");
    doc["description"] = config.description;
    json eps = json::array();
    for (const auto& e : config.endpoints) {
      json metadata = json::object();
      for (const auto& [k, v] : e.metadata) metadata[k] = v;
      eps.push_back({{"name", e.name},
                     {"subject", e.subject},
                     {"queue_group", config.queue_group},
                     {"metadata", std::move(metadata)}});
    }
    doc["endpoints"] = std::move(eps);
    return doc;
  }

  std::vector<micro_endpoint_stats> stats() const {
    std::vector<micro_endpoint_stats> out;
    std::lock_guard lock(mu);
    for (size_t i = 0; i < config.endpoints.size(); ++i) {
      const auto& c = counters[i];
      const int64_t avg = c.requests == 0 ? 0 : c.processing_ns / static_cast<int64_t>(c.requests);
      out.push_back({config.endpoints[i].name, config.endpoints[i].subject, config.queue_group,
                     c.requests, c.errors, c.last_error, c.processing_ns, avg});
    }
    return out;
  }

  json stats_doc() const {
    json doc = identity("io.nats.micro.v1.stats_response");
    json eps = json::array();
    for (const auto& s : stats())
      eps.push_back({{"name", s.name},
                     {"subject", s.subject},
                     {"queue_group", s.queue_group},
                     {"num_requests", s.num_requests},
                     {"num_errors", s.num_errors},
                     {"last_error", s.last_error},
                     {"processing_time", s.processing_time_ns},
                     {"average_processing_time", s.average_processing_time_ns}});
    doc["endpoints"] = std::move(eps);
    doc["started"] = started;
    return doc;
  }
};

/// One request's answer-to-be: shared by its responder and the callback that made it.
struct micro_responder::state {
  std::shared_ptr<micro_service::core> core;
  size_t endpoint = 0;
  std::string reply;
  steady::time_point received;
  std::atomic<bool> done{false};

  status finish(const micro_reply& r) {
    if (done.exchange(true))
      return make_error(errc::invalid_value, "This request has been answered already.");
    // Processing time is a monotonic duration, not a time of day: no engine clock is involved.
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - received).count();
    // Counted before the reply leaves, so a requester that asks STATS next sees this request.
    core->record(endpoint, ns, r);
    if (reply.empty()) return sy::ok;
    return publish(core->nc, reply, r);
  }
};

namespace {

/// The closure of one subscription. Deleted by the completion callback (nats.c calls it once the
/// subscription is closed and its last message callback has returned).
struct sub_ctx {
  std::shared_ptr<micro_service::core> core;
  verb kind = verb::endpoint;
  size_t endpoint = 0;
};

void handle_request(const sub_ctx& ctx, natsMsg* msg) {
  const micro_endpoint& ep = ctx.core->config.endpoints[ctx.endpoint];
  auto st = std::make_shared<micro_responder::state>();
  st->core = ctx.core;
  st->endpoint = ctx.endpoint;
  st->received = steady::now();
  micro_request req = read_request(msg, ep.name);
  st->reply = req.reply;
  try {
    ep.handler(req, micro_responder(st));
  } catch (const std::exception& e) {
    // Usually answered already: the responder, destroyed while unwinding, answered "dropped".
    (void)st->finish(micro_reply::failure(500, std::string("The handler failed: ") + e.what()));
  } catch (...) {
    (void)st->finish(micro_reply::failure(500, "The handler failed."));
  }
}

void handle_discovery(const sub_ctx& ctx, natsMsg* msg) {
  const char* reply = natsMsg_GetReply(msg);
  if (reply == nullptr) return;
  json doc = ctx.kind == verb::ping   ? ctx.core->identity("io.nats.micro.v1.ping_response")
             : ctx.kind == verb::info ? ctx.core->info()
                                      : ctx.core->stats_doc();
  // A failed publish needs no further action: the requester times out as for a lost message.
  (void)publish(ctx.core->nc, reply, micro_reply{doc.dump(), {}, std::nullopt});
}

void on_msg(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  const auto& ctx = *static_cast<const sub_ctx*>(closure);
  in_callback = true;
  try {
    if (ctx.kind == verb::endpoint)
      handle_request(ctx, msg);
    else
      handle_discovery(ctx, msg);
  } catch (...) {  // nothing may unwind into C (e.g. bad_alloc, or a JSON dump failing)
  }
  in_callback = false;
  natsMsg_Destroy(msg);
}

void on_complete(void* closure) {
  auto* ctx = static_cast<sub_ctx*>(closure);
  {
    std::lock_guard lock(ctx->core->done_mu);
    --ctx->core->open_subs;
  }
  ctx->core->done_cv.notify_all();
  delete ctx;  // may release the core's last reference
}

/// Subscribes `subject` (queue-subscribes when `queue` is not empty) for `kind`.
status subscribe(const std::shared_ptr<micro_service::core>& core,
                 std::vector<natsSubscription*>& subs, const std::string& subject,
                 const std::string& queue, verb kind, size_t endpoint) {
  auto ctx = std::make_unique<sub_ctx>(sub_ctx{core, kind, endpoint});
  natsSubscription* sub = nullptr;
  natsStatus s = queue.empty()
                     ? natsConnection_Subscribe(&sub, core->nc, subject.c_str(), on_msg, ctx.get())
                     : natsConnection_QueueSubscribe(&sub, core->nc, subject.c_str(), queue.c_str(),
                                                     on_msg, ctx.get());
  if (s != NATS_OK) return nats_error("Subscribing to " + subject, s);
  subs.push_back(sub);
  {
    std::lock_guard lock(core->done_mu);
    ++core->open_subs;
  }
  s = natsSubscription_SetOnCompleteCB(sub, on_complete, ctx.get());
  if (s != NATS_OK) {
    // The subscription closed already (the connection did): its callback may still hold ctx,
    // so ctx is left to leak rather than freed under it; stop() need not wait for it.
    (void)ctx.release();
    std::lock_guard lock(core->done_mu);
    --core->open_subs;
    return nats_error("Subscribing to " + subject, s);
  }
  (void)ctx.release();  // owned by the subscription now; freed by on_complete
  return sy::ok;
}

status validate(natsConnection* nc, micro_config& c) {
  auto bad = [](std::string message) {
    return make_error(errc::invalid_config, std::move(message));
  };
  if (nc == nullptr) return bad("A NATS service needs a connection.");
  if (!is_name(c.name)) return bad("Service name '" + c.name + "' is not [A-Za-z0-9_-]+.");
  if (!is_semver(c.version)) return bad("Service version '" + c.version + "' is not SemVer.");
  if (!c.queue_group.empty() && !is_subject(c.queue_group, false))
    return bad("Queue group '" + c.queue_group + "' is not a valid NATS subject.");
  if (c.endpoints.empty()) return bad("Service '" + c.name + "' has no endpoints.");
  for (auto& e : c.endpoints) {
    if (e.subject.empty()) e.subject = e.name;
    if (!is_name(e.name)) return bad("Endpoint name '" + e.name + "' is not [A-Za-z0-9_-]+.");
    if (!is_subject(e.subject, true) || e.subject.starts_with(srv_prefix))
      return bad("Endpoint subject '" + e.subject + "' is not a valid subject outside $SRV.");
    if (!e.handler) return bad("Endpoint '" + e.name + "' has no handler.");
  }
  return sy::ok;
}

}  // namespace

std::optional<std::string> micro_request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (runtime::same_header(k, name)) return v;
  return std::nullopt;
}

micro_reply micro_reply::failure(int code, std::string description, std::string data) {
  return micro_reply{std::move(data), {}, micro_error{code, std::move(description)}};
}

namespace {

/// Answers a request whose responder goes away unanswered, and lets go of it.
void drop(std::shared_ptr<micro_responder::state>& s) noexcept {
  if (s && !s->done.load()) {
    try {
      (void)s->finish(micro_reply::failure(500, "The service dropped the request unanswered."));
    } catch (...) {  // must not throw (destructor); the requester times out instead
    }
  }
  s.reset();
}

}  // namespace

micro_responder& micro_responder::operator=(micro_responder&& other) noexcept {
  if (this != &other) {
    drop(s_);
    s_ = std::move(other.s_);
  }
  return *this;
}

micro_responder::~micro_responder() { drop(s_); }

status micro_responder::respond(const micro_reply& reply) {
  if (!s_) return make_error(errc::invalid_value, "This responder was moved from.");
  return s_->finish(reply);
}

bool micro_responder::answered() const { return !s_ || s_->done.load(); }

std::string micro_responder::reply_subject() const { return s_ ? s_->reply : std::string(); }

micro_handler sync_handler(std::function<micro_reply(const micro_request&)> handler) {
  return [h = std::move(handler)](const micro_request& req, micro_responder r) {
    (void)r.respond(h(req));
  };
}

result<std::unique_ptr<micro_service>> micro_service::start(natsConnection* nc,
                                                            micro_config config) {
  if (auto st = validate(nc, config); !st) return st.error();
  auto c = std::make_shared<core>();
  c->nc = nc;
  c->id = make_id();
  c->started = rfc3339(config.started_ms);
  c->counters.resize(config.endpoints.size());
  c->config = std::move(config);
  std::unique_ptr<micro_service> svc(new micro_service(c));
  const auto& cfg = c->config;
  for (size_t i = 0; i < cfg.endpoints.size(); ++i) {
    auto st =
        subscribe(c, svc->subs_, cfg.endpoints[i].subject, cfg.queue_group, verb::endpoint, i);
    if (!st) return st.error();  // the destructor removes the subscriptions made so far
  }
  const std::pair<const char*, verb> verbs[] = {
      {"PING", verb::ping}, {"INFO", verb::info}, {"STATS", verb::stats}};
  for (const auto& [name, kind] : verbs) {
    const std::string all = std::string(srv_prefix) + "." + name;
    for (const std::string& subject :
         {all, all + "." + cfg.name, all + "." + cfg.name + "." + c->id}) {
      if (auto st = subscribe(c, svc->subs_, subject, {}, kind, 0); !st) return st.error();
    }
  }
  // A round trip, so that the server holds the subscriptions before the engine says it listens:
  // a request sent right after would otherwise find no responders. Not connected yet (NATS is
  // down at start): the subscriptions are sent on connect, and requests fail until then anyway.
  if (natsConnection_Status(nc) == NATS_CONN_STATUS_CONNECTED)
    (void)natsConnection_FlushTimeout(nc, 5'000);
  return svc;
}

micro_service::~micro_service() { (void)stop(); }

status micro_service::stop() {
  if (subs_.empty()) return sy::ok;
  const int64_t timeout_ms = core_->config.stop_timeout_ms;
  // A drain needs the server (it flushes, then waits for the server's PONG): without a
  // connection it would only wait out its timeout, and nothing more can arrive anyway.
  const bool connected = natsConnection_Status(core_->nc) == NATS_CONN_STATUS_CONNECTED;
  for (natsSubscription* sub : subs_) {
    // Draining stops new deliveries and lets those already received run; when the connection
    // cannot drain (closed, say), closing the subscription ends it all the same.
    if (!connected || natsSubscription_DrainTimeout(sub, timeout_ms) != NATS_OK)
      (void)natsSubscription_Unsubscribe(sub);
  }
  bool drained = true;
  if (!in_callback) {  // a handler stopping its own service must not wait for itself
    std::unique_lock lock(core_->done_mu);
    drained = core_->done_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                      [this] { return core_->open_subs == 0; });
  }
  for (natsSubscription* sub : subs_) natsSubscription_Destroy(sub);
  subs_.clear();
  if (!drained)
    return make_error(errc::nats_error, "Stopping service '" + core_->config.name +
                                            "': handlers still ran after " +
                                            std::to_string(timeout_ms) + " ms.");
  return sy::ok;
}

const std::string& micro_service::id() const { return core_->id; }

const micro_config& micro_service::config() const { return core_->config; }

std::vector<micro_endpoint_stats> micro_service::stats() const { return core_->stats(); }

}  // namespace sy::api
