#include "runtime/jetstream.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "config/address.hpp"
#include "config/limits.hpp"
#include "config/sha256.hpp"
#include "runtime/nats_headers.hpp"

namespace sy::runtime {

// ---------------------------------------------------------------------------------------------
// Shared state. A subscription keeps its connection alive and a message keeps its subscription
// alive, because nats.c acks through the message's subscription and connection.

namespace detail {

/// The acks of the batch publish_batch() is waiting for. nats.c calls on_pub_ack on its
/// delivery thread with the very natsMsg pointer we handed to js_PublishMsgAsync.
struct batch_tracker {
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<natsMsg*, size_t> inflight;  ///< message -> index in the batch
  std::vector<bool> acked;
  size_t resolved = 0;
  size_t expected = 0;  ///< the batch's size: the waiter is woken when all are resolved
};

struct js_conn {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  batch_tracker tracker;
  ~js_conn() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);  // closes first
  }
};

struct js_sub {
  std::shared_ptr<js_conn> conn;
  natsSubscription* sub = nullptr;
  std::string consumer;
  // Does not unsubscribe: the consumer was bound, not created, by the subscription, so
  // destroying it never deletes the durable consumer.
  ~js_sub() { natsSubscription_Destroy(sub); }
};

}  // namespace detail

namespace {

constexpr int64_t ns_per_ms = 1'000'000;
constexpr int64_t day_ms = 24LL * 3600 * 1000;
constexpr int64_t max_ack_pending = 20000;
constexpr int reconnect_buf_bytes = 8 * 1024 * 1024;
constexpr int64_t reconnect_wait_ms = 250;

bool is_disconnect(natsStatus s) {
  return s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED || s == NATS_NO_SERVER ||
         s == NATS_NOT_YET_CONNECTED || s == NATS_STALE_CONNECTION || s == NATS_TIMEOUT ||
         s == NATS_NO_RESPONDERS;
}

/// The one adapter from nats.c's status + thread-local error text to our error type.
///
/// nats.c keeps the thread's last error text until another error replaces it, and a call that
/// fails with a bare status (a request's timeout or no-responders) sets none: its text would be
/// an older, unrelated one — e.g. "wrong last sequence" left by a kvStore_Create that succeeded
/// on its retry over a delete marker. So the text is used only when its status is this one.
sy::error nats_error(std::string_view what, natsStatus s,
                     jsErrCode jerr = static_cast<jsErrCode>(0)) {
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  const bool fresh = last == s && text != nullptr && *text != '\0';
  std::string msg = std::string(what) + " failed: " + (fresh ? text : natsStatus_GetText(s));
  if (jerr != 0) msg += " (JetStream error " + std::to_string(static_cast<int>(jerr)) + ")";
  msg += '.';
  return make_error(is_disconnect(s) ? errc::nats_unavailable : errc::nats_error, std::move(msg));
}

bool token_char_kept(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lowercase is never produced, so it is not a valid encoding
}

void on_pub_ack(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
  auto* t = static_cast<detail::batch_tracker*>(closure);
  bool all_resolved = false;
  {
    std::lock_guard lock(t->mu);
    auto it = t->inflight.find(msg);
    // Absent: publish_batch gave up on its batch and already took the message back.
    if (it != t->inflight.end()) {
      if (pa != nullptr && pae == nullptr) t->acked[it->second] = true;
      t->inflight.erase(it);
      ++t->resolved;
      all_resolved = t->resolved == t->expected;
    }
  }
  // Only the last ack wakes the waiter (one wake-up per batch instead of one per message); a
  // batch that can never complete is noticed by the waiter's own periodic check.
  if (all_resolved) t->cv.notify_all();
  natsMsg_Destroy(msg);  // with an AckHandler, the library hands ownership back to us
}

result<natsConnection*> connect_once(natsOptions* opts) {
  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_Connect(&nc, opts);
  if (s != NATS_OK) return nats_error("Connecting to NATS", s);
  return nc;
}

/// nats.c connects in the background (js_client::open) only when it has a callback for that.
void on_late_connect(natsConnection*, void*) {}

result<natsOptions*> make_options(const std::string& url, const std::string& name,
                                  int64_t connect_timeout_ms) {
  natsOptions* o = nullptr;
  natsStatus s = natsOptions_Create(&o);
  if (s != NATS_OK) return nats_error("Configuring the NATS connection", s);
  if (auto servers = set_nats_servers(o, url); !servers) {
    natsOptions_Destroy(o);
    return servers.error();
  }
  s = natsOptions_SetName(o, name.c_str());
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(o, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(o, reconnect_wait_ms);
  if (s == NATS_OK) s = natsOptions_SetReconnectBufSize(o, reconnect_buf_bytes);
  // One attempt's TCP/handshake timeout; connect() retries attempts until its own deadline.
  const int64_t attempt_ms = std::clamp<int64_t>(connect_timeout_ms, 100, 2000);
  if (s == NATS_OK) s = natsOptions_SetTimeout(o, attempt_ms);
  if (s != NATS_OK) {
    natsOptions_Destroy(o);
    return nats_error("Configuring the NATS connection", s);
  }
  return o;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// subject tokens

std::string subject_token(std::string_view model) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(model.size());
  for (char ch : model) {
    auto c = static_cast<unsigned char>(ch);
    if (token_char_kept(c)) {
      out.push_back(ch);
    } else {
      out.push_back('_');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  if (out.size() <= limits::subject_token_max_bytes) return out;
  constexpr size_t hash_chars = 32;
  size_t cut = limits::subject_token_max_bytes - 2 - hash_chars;
  // Do not split an escape: back up to the '_' of one that would straddle the cut.
  for (size_t back = 1; back <= 2 && back <= cut; ++back)
    if (out[cut - back] == '_') {
      cut -= back;
      break;
    }
  out.resize(cut);
  out += "_h";
  out += config::sha256_hex(model).substr(0, hash_chars);
  return out;
}

std::optional<std::string> model_from_token(std::string_view token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    auto c = static_cast<unsigned char>(token[i]);
    if (token_char_kept(c)) {
      out.push_back(token[i]);
      continue;
    }
    if (c != '_' || i + 2 >= token.size()) return std::nullopt;
    int hi = hex_value(token[i + 1]), lo = hex_value(token[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    auto decoded = static_cast<unsigned char>(hi * 16 + lo);
    if (token_char_kept(decoded)) return std::nullopt;  // not canonical: would not round-trip
    out.push_back(static_cast<char>(decoded));
    i += 2;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// js_message

js_message::js_message(natsMsg* msg, std::shared_ptr<detail::js_sub> sub)
    : msg_(msg), sub_(std::move(sub)) {
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg_) == NATS_OK) {
    delivered_ = meta->NumDelivered;
    stream_seq_ = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
  }
}

js_message::js_message(js_message&& other) noexcept
    : msg_(std::exchange(other.msg_, nullptr)),
      sub_(std::move(other.sub_)),
      delivered_(other.delivered_),
      stream_seq_(other.stream_seq_),
      headers_(std::move(other.headers_)) {}

js_message& js_message::operator=(js_message&& other) noexcept {
  if (this != &other) {
    natsMsg_Destroy(msg_);
    msg_ = std::exchange(other.msg_, nullptr);
    sub_ = std::move(other.sub_);
    delivered_ = other.delivered_;
    stream_seq_ = other.stream_seq_;
    headers_ = std::move(other.headers_);
  }
  return *this;
}

js_message::~js_message() { natsMsg_Destroy(msg_); }  // before sub_ is released

std::string_view js_message::data() const {
  if (msg_ == nullptr) return {};
  return {natsMsg_GetData(msg_), static_cast<size_t>(natsMsg_GetDataLength(msg_))};
}

std::optional<std::string> js_message::header(const char* name) const {
  if (!headers_) headers_ = read_nats_headers(msg_);
  for (const auto& [key, value] : *headers_)
    if (same_header(key, name)) return value;
  return std::nullopt;
}

std::string_view js_message::subject() const {
  return msg_ == nullptr ? std::string_view{} : std::string_view{natsMsg_GetSubject(msg_)};
}

status js_message::check(natsStatus s, const char* what) const {
  if (s == NATS_OK) return sy::ok;
  return nats_error(what, s);
}

status js_message::ack() {
  if (msg_ == nullptr) return make_error(errc::nats_error, "Ack of a moved-from message.");
  return check(natsMsg_Ack(msg_, nullptr), "Ack");
}

status js_message::nak_with_delay(int64_t delay_ms) {
  if (msg_ == nullptr) return make_error(errc::nats_error, "Nak of a moved-from message.");
  return check(natsMsg_NakWithDelay(msg_, delay_ms, nullptr), "Nak with delay");
}

status js_message::in_progress() {
  if (msg_ == nullptr) return make_error(errc::nats_error, "Progress of a moved-from message.");
  return check(natsMsg_InProgress(msg_, nullptr), "In-progress ack");
}

status js_message::term() {
  if (msg_ == nullptr) return make_error(errc::nats_error, "Term of a moved-from message.");
  return check(natsMsg_Term(msg_, nullptr), "Term");
}

delivery js_message::to_delivery() const {
  delivery d;
  d.subject = std::string(subject());
  d.data = std::string(data());
  if (msg_ != nullptr && natsMsg_GetReply(msg_) != nullptr) d.reply = natsMsg_GetReply(msg_);
  d.delivered = delivered_;
  d.stream_seq = stream_seq_;
  return d;
}

// ---------------------------------------------------------------------------------------------
// pull_subscription

result<std::vector<js_message>> pull_subscription::fetch(int max, int64_t timeout_ms) {
  natsMsgList list{nullptr, 0};
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = natsSubscription_Fetch(&list, sub_->sub, max, timeout_ms, &jerr);
  std::vector<js_message> out;
  if (s == NATS_TIMEOUT) return out;  // nothing arrived in time: not an error
  if (s != NATS_OK) {
    natsMsgList_Destroy(&list);
    return nats_error("Fetch from consumer " + sub_->consumer, s, jerr);
  }
  out.reserve(static_cast<size_t>(list.Count));
  for (int i = 0; i < list.Count; ++i) {
    out.push_back(js_message(list.Msgs[i], sub_));
    list.Msgs[i] = nullptr;  // now owned by the js_message
  }
  natsMsgList_Destroy(&list);
  return out;
}

const std::string& pull_subscription::consumer() const { return sub_->consumer; }

// ---------------------------------------------------------------------------------------------
// servers

status set_nats_servers(natsOptions* opts, std::string_view urls) {
  auto servers = config::split_nats_urls(urls);
  if (!servers) return servers.error();
  std::vector<const char*> list;
  list.reserve(servers->size());
  for (const auto& url : *servers) list.push_back(url.c_str());
  const natsStatus s = natsOptions_SetServers(opts, list.data(), static_cast<int>(list.size()));
  if (s != NATS_OK) return nats_error("Setting the NATS servers", s);
  return ok;
}

// ---------------------------------------------------------------------------------------------
// js_client

js_client::js_client(std::shared_ptr<detail::js_conn> conn, js_layout layout)
    : conn_(std::move(conn)), layout_(std::move(layout)) {}

js_client::~js_client() = default;

result<std::unique_ptr<js_client>> js_client::connect(const std::string& url,
                                                      const std::string& name, js_layout layout,
                                                      int64_t connect_timeout_ms) {
  auto opts = make_options(url, name, connect_timeout_ms);
  if (!opts) return opts.error();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(connect_timeout_ms);
  auto nc = connect_once(*opts);
  while (!nc && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(reconnect_wait_ms));
    nc = connect_once(*opts);
  }
  natsOptions_Destroy(*opts);
  if (!nc) return nc.error();
  return with_context(*nc, std::move(layout));
}

result<std::unique_ptr<js_client>> js_client::open(const std::string& url, const std::string& name,
                                                   js_layout layout, int64_t first_wait_ms) {
  auto opts = make_options(url, name, first_wait_ms);
  if (!opts) return opts.error();
  natsStatus s = natsOptions_SetRetryOnFailedConnect(*opts, true, on_late_connect, nullptr);
  natsConnection* nc = nullptr;
  if (s == NATS_OK) s = natsConnection_Connect(&nc, *opts);
  natsOptions_Destroy(*opts);
  if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) return nats_error("Connecting to NATS", s);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(first_wait_ms);
  while (natsConnection_Status(nc) != NATS_CONN_STATUS_CONNECTED &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return with_context(nc, std::move(layout));
}

result<std::unique_ptr<js_client>> js_client::with_context(natsConnection* nc, js_layout layout) {
  auto conn = std::make_shared<detail::js_conn>();
  conn->nc = nc;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.PublishAsync.AckHandler = on_pub_ack;
  jo.PublishAsync.AckHandlerClosure = &conn->tracker;
  jo.PublishAsync.MaxPending = 0;  // unlimited: a batch's size is bounded by the caller
  natsStatus s = natsConnection_JetStream(&conn->js, conn->nc, &jo);
  if (s != NATS_OK) return nats_error("Creating the JetStream context", s);
  return std::unique_ptr<js_client>(new js_client(std::move(conn), std::move(layout)));
}

bool js_client::connected() const {
  return natsConnection_Status(conn_->nc) == NATS_CONN_STATUS_CONNECTED;
}

uint64_t js_client::reconnects() const {
  natsStatistics* stats = nullptr;
  uint64_t in_msgs = 0, in_bytes = 0, out_msgs = 0, out_bytes = 0, reconnects = 0;
  if (natsStatistics_Create(&stats) == NATS_OK &&
      natsConnection_GetStats(conn_->nc, stats) == NATS_OK)
    natsStatistics_GetCounts(stats, &in_msgs, &in_bytes, &out_msgs, &out_bytes, &reconnects);
  natsStatistics_Destroy(stats);
  return reconnects;
}

bool js_client::layout_ready() const {
  return connected() && layout_epoch_.load() == reconnects() + 1;
}

std::string js_client::stream_name(std::string_view kind) const {
  return layout_.stream_prefix + "_" + std::string(kind);
}

std::string js_layout::task_subject(std::string_view model) const {
  return subject_prefix + ".tasks." + subject_token(model);
}

std::string js_layout::dlq_subject(std::string_view model) const {
  return subject_prefix + ".dlq." + subject_token(model);
}

status js_client::ensure_stream(const std::string& name, const std::string& subject,
                                bool work_queue, int64_t max_age_ms, int64_t duplicate_window_ms) {
  const char* subjects[] = {subject.c_str()};
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name.c_str();
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Retention = work_queue ? js_WorkQueuePolicy : js_LimitsPolicy;
  cfg.Storage = js_FileStorage;
  cfg.Duplicates = duplicate_window_ms * ns_per_ms;
  cfg.MaxAge = max_age_ms * ns_per_ms;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_AddStream(&si, conn_->js, &cfg, nullptr, &jerr);
  if (s != NATS_OK && jerr == JSStreamNameExistErr) {  // exists with another config
    jerr = static_cast<jsErrCode>(0);
    s = js_UpdateStream(&si, conn_->js, &cfg, nullptr, &jerr);
  }
  jsStreamInfo_Destroy(si);
  if (s != NATS_OK) return nats_error("Creating stream " + name, s, jerr);
  return sy::ok;
}

status js_client::ensure_layout() {
  // Taken first: if the connection drops and comes back meanwhile, the layout is not counted
  // as made on the new connection, and the keeper makes it again.
  const uint64_t epoch = reconnects() + 1;
  const std::string& sp = layout_.subject_prefix;
  const int64_t dup = layout_.duplicate_window_ms;
  auto st = ensure_stream(stream_name("TASKS"), sp + ".tasks.>", true, 0, dup);
  if (st) st = ensure_stream(stream_name("EVENTS"), sp + ".jobs.>", false, day_ms, dup);
  if (st) st = ensure_stream(stream_name("DLQ"), sp + ".dlq.>", false, 0, dup);
  if (st) {
    st = ensure_stream(stream_name("INTAKE"), sp + ".submit.>", true, 0,
                       layout_.intake_duplicate_window_ms);
  }
  if (st) {
    layout_epoch_ = epoch;
    ++layout_generation_;
  }
  return st;
}

std::string js_client::intake_subject(std::string_view kind) const {
  return layout_.subject_prefix + ".submit." + std::string(kind);
}

result<std::unique_ptr<pull_subscription>> js_client::subscribe_tasks(std::string_view model) {
  if (model.empty()) return make_error(errc::invalid_model, "A model name is required.", "model");
  return subscribe_pull(stream_name("TASKS"), task_subject(model), "tasks_" + subject_token(model),
                        -1);
}

result<std::unique_ptr<pull_subscription>> js_client::subscribe_intake() {
  return subscribe_pull(stream_name("INTAKE"), layout_.subject_prefix + ".submit.>", "intake",
                        layout_.intake_max_deliver);
}

result<std::unique_ptr<pull_subscription>> js_client::subscribe_pull(const std::string& stream,
                                                                     const std::string& subject,
                                                                     std::string consumer,
                                                                     int64_t max_deliver) {
  auto sub = std::make_shared<detail::js_sub>();
  sub->conn = conn_;
  sub->consumer = std::move(consumer);

  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = sub->consumer.c_str();
  cc.FilterSubject = subject.c_str();
  cc.AckPolicy = js_AckExplicit;
  cc.AckWait = layout_.ack_wait_ms * ns_per_ms;
  cc.MaxDeliver = max_deliver;
  cc.MaxAckPending = max_ack_pending;
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_AddConsumer(&ci, conn_->js, stream.c_str(), &cc, nullptr, &jerr);
  if (s != NATS_OK && jerr != JSConsumerNotFoundErr && jerr != 0) {
    // It exists with another configuration (e.g. a new ack wait): update it in place.
    jerr = static_cast<jsErrCode>(0);
    s = js_UpdateConsumer(&ci, conn_->js, stream.c_str(), &cc, nullptr, &jerr);
  }
  jsConsumerInfo_Destroy(ci);
  if (s != NATS_OK) return nats_error("Creating consumer " + sub->consumer, s, jerr);

  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Consumer = sub->consumer.c_str();
  jerr = static_cast<jsErrCode>(0);
  s = js_PullSubscribe(&sub->sub, conn_->js, subject.c_str(), sub->consumer.c_str(), nullptr, &so,
                       &jerr);
  if (s != NATS_OK) return nats_error("Binding to consumer " + sub->consumer, s, jerr);
  return std::make_unique<pull_subscription>(std::move(sub));
}

status js_client::publish(const pub_msg& m) {
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, m.subject.c_str(), nullptr, m.payload.data(),
                                static_cast<int>(m.payload.size()));
  if (s == NATS_OK && !m.msg_id.empty()) {
    s = natsMsgHeader_Set(msg, "Nats-Msg-Id", m.msg_id.c_str());
  }
  if (s == NATS_OK) s = natsConnection_PublishMsg(conn_->nc, msg);
  natsMsg_Destroy(msg);
  if (s != NATS_OK) return nats_error("Publishing on " + m.subject, s);
  return sy::ok;
}

namespace {

/// Sends one JetStream acknowledgement: `body` on the delivery's reply subject.
status send_ack(natsConnection* nc, const delivery& d, std::string_view body, const char* what) {
  if (d.reply.empty())
    return make_error(errc::nats_error, std::string(what) + ": no reply subject.");
  natsStatus s =
      natsConnection_Publish(nc, d.reply.c_str(), body.data(), static_cast<int>(body.size()));
  if (s != NATS_OK)
    return nats_error(std::string(what) + " of stream message " + std::to_string(d.stream_seq), s);
  return sy::ok;
}

}  // namespace

status js_client::ack(const delivery& d) { return send_ack(conn_->nc, d, "+ACK", "Ack"); }

status js_client::nak(const delivery& d, int64_t delay_ms) {
  if (delay_ms <= 0) return send_ack(conn_->nc, d, "-NAK", "Nak");
  // The server reads the delay as a Go duration: nanoseconds.
  const std::string body = "-NAK {\"delay\": " + std::to_string(delay_ms * 1'000'000) + "}";
  return send_ack(conn_->nc, d, body, "Nak with delay");
}

status js_client::in_progress(const delivery& d) {
  return send_ack(conn_->nc, d, "+WPI", "In-progress ack");
}

status js_client::term(const delivery& d) { return send_ack(conn_->nc, d, "+TERM", "Term"); }

status js_client::publish_reply(const std::string& subject, std::string_view payload,
                                const std::vector<std::pair<std::string, std::string>>& headers) {
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, payload.data(),
                                static_cast<int>(payload.size()));
  for (const auto& [name, value] : headers) {
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, name.c_str(), value.c_str());
  }
  if (s == NATS_OK) s = natsConnection_PublishMsg(conn_->nc, msg);
  natsMsg_Destroy(msg);
  if (s != NATS_OK) return nats_error("Replying on " + subject, s);
  return sy::ok;
}

namespace {

/// Hands one message to nats.c's async publisher; false when it was not accepted (then we own
/// and destroy it ourselves).
bool publish_async(detail::js_conn& c, const pub_msg& m, size_t index) {
  natsMsg* msg = nullptr;
  if (natsMsg_Create(&msg, m.subject.c_str(), nullptr, m.payload.data(),
                     static_cast<int>(m.payload.size())) != NATS_OK) {
    return false;
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MsgId = m.msg_id.empty() ? nullptr : m.msg_id.c_str();
  natsMsg* const key = msg;
  {
    // Registered before publishing: the ack can arrive before js_PublishMsgAsync returns.
    std::lock_guard lock(c.tracker.mu);
    c.tracker.inflight.emplace(key, index);
  }
  if (js_PublishMsgAsync(c.js, &msg, &po) == NATS_OK) return true;  // msg is now nullptr
  {
    std::lock_guard lock(c.tracker.mu);
    if (c.tracker.inflight.erase(key) > 0) ++c.tracker.resolved;
  }
  natsMsg_Destroy(msg);
  return false;
}

}  // namespace

std::vector<bool> js_client::publish_batch(const std::vector<pub_msg>& msgs, int64_t timeout_ms) {
  auto& t = conn_->tracker;
  if (msgs.empty() || !connected()) return std::vector<bool>(msgs.size(), false);
  {
    std::lock_guard lock(t.mu);
    t.inflight.clear();
    t.acked.assign(msgs.size(), false);
    t.resolved = 0;
    t.expected = msgs.size();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (!publish_async(*conn_, msgs[i], i) && !connected()) break;
  }
  std::vector<bool> out;
  {
    // Wake up every few ms to notice a disconnect: acks cannot arrive then, so waiting for the
    // full timeout would only stall the relay.
    std::unique_lock lock(t.mu);
    while (t.resolved < msgs.size() && std::chrono::steady_clock::now() < deadline && connected()) {
      t.cv.wait_for(lock, std::chrono::milliseconds(10));
    }
    out = t.acked;
    t.inflight.clear();  // late acks for this batch are now ignored
  }
  // Take back what is still unacknowledged so nats.c forgets it; if it reaches the stream
  // anyway, the relay's re-publish with the same Nats-Msg-Id is dropped as a duplicate.
  natsMsgList pending{nullptr, 0};
  if (js_PublishAsyncGetPendingList(&pending, conn_->js) == NATS_OK) {
    natsMsgList_Destroy(&pending);
  }
  return out;
}

result<uint64_t> js_client::stream_message_count(std::string_view stream) {
  std::string name(stream);
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&si, conn_->js, name.c_str(), nullptr, &jerr);
  if (s != NATS_OK) return nats_error("Reading stream " + name, s, jerr);
  uint64_t n = si->State.Msgs;
  jsStreamInfo_Destroy(si);
  return n;
}

result<uint64_t> js_client::task_backlog(std::string_view model) {
  return consumer_backlog(stream_name("TASKS"), "tasks_" + subject_token(model));
}

result<uint64_t> js_client::intake_backlog() {
  return consumer_backlog(stream_name("INTAKE"), "intake");
}

result<uint64_t> js_client::consumer_backlog(const std::string& stream,
                                             const std::string& consumer) {
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s =
      js_GetConsumerInfo(&ci, conn_->js, stream.c_str(), consumer.c_str(), nullptr, &jerr);
  if (s != NATS_OK) return nats_error("Reading consumer " + consumer, s, jerr);
  uint64_t n = ci->NumPending + static_cast<uint64_t>(std::max<int64_t>(ci->NumAckPending, 0));
  jsConsumerInfo_Destroy(ci);
  return n;
}

// ---------------------------------------------------------------------------------------------
// key-value buckets

namespace {

/// A bound kvStore, destroyed with the object (the bucket itself stays on the server).
struct kv_handle {
  kvStore* kv = nullptr;
  kv_handle() = default;
  kv_handle(const kv_handle&) = delete;
  kv_handle& operator=(const kv_handle&) = delete;
  ~kv_handle() { kvStore_Destroy(kv); }
};

/// Binds `bucket` into `h` (a stream-info request: the registry's operations are rare, a claim
/// at start and a renewal every few seconds, so no bound handle is kept across reconnects).
status bind_kv(kv_handle& h, jsCtx* js, const std::string& bucket) {
  if (natsStatus s = js_KeyValue(&h.kv, js, bucket.c_str()); s != NATS_OK)
    return nats_error("Binding key-value bucket " + bucket, s);
  return sy::ok;
}

}  // namespace

status js_client::ensure_kv_bucket(const std::string& bucket) {
  kv_handle h;
  natsStatus s = js_KeyValue(&h.kv, conn_->js, bucket.c_str());
  if (s == NATS_OK) return sy::ok;
  if (s != NATS_NOT_FOUND) return nats_error("Binding key-value bucket " + bucket, s);
  kvConfig cfg;
  kvConfig_Init(&cfg);
  cfg.Bucket = bucket.c_str();
  cfg.History = 1;
  cfg.StorageType = js_FileStorage;
  s = js_CreateKeyValue(&h.kv, conn_->js, &cfg);
  if (s != NATS_OK) return nats_error("Creating key-value bucket " + bucket, s);
  return sy::ok;
}

result<std::optional<kv_entry>> js_client::kv_get(const std::string& bucket,
                                                  const std::string& key) {
  kv_handle h;
  if (auto st = bind_kv(h, conn_->js, bucket); !st) return st.error();
  kvEntry* e = nullptr;
  natsStatus s = kvStore_Get(&e, h.kv, key.c_str());
  if (s == NATS_NOT_FOUND) return std::optional<kv_entry>{};
  if (s != NATS_OK) return nats_error("Reading " + bucket + "." + key, s);
  kv_entry out;
  const int len = kvEntry_ValueLen(e);
  if (len > 0)
    out.value.assign(static_cast<const char*>(kvEntry_Value(e)), static_cast<size_t>(len));
  out.revision = kvEntry_Revision(e);
  kvEntry_Destroy(e);
  return std::optional<kv_entry>{std::move(out)};
}

result<uint64_t> js_client::kv_create(const std::string& bucket, const std::string& key,
                                      std::string_view value) {
  kv_handle h;
  if (auto st = bind_kv(h, conn_->js, bucket); !st) return st.error();
  uint64_t revision = 0;
  natsStatus s =
      kvStore_Create(&revision, h.kv, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return nats_error("Creating " + bucket + "." + key, s);
  return revision;
}

result<uint64_t> js_client::kv_update(const std::string& bucket, const std::string& key,
                                      std::string_view value, uint64_t last) {
  kv_handle h;
  if (auto st = bind_kv(h, conn_->js, bucket); !st) return st.error();
  uint64_t revision = 0;
  natsStatus s = kvStore_Update(&revision, h.kv, key.c_str(), value.data(),
                                static_cast<int>(value.size()), last);
  if (s != NATS_OK) return nats_error("Updating " + bucket + "." + key, s);
  return revision;
}

status js_client::kv_delete(const std::string& bucket, const std::string& key) {
  kv_handle h;
  if (auto st = bind_kv(h, conn_->js, bucket); !st) return st.error();
  natsStatus s = kvStore_Delete(h.kv, key.c_str());
  if (s != NATS_OK) return nats_error("Deleting " + bucket + "." + key, s);
  return sy::ok;
}

}  // namespace sy::runtime
