#pragma once
/// A thin RAII layer over nats.c for Switchyard's JetStream layout (docs/jetstream.md): one
/// connection with unlimited reconnects, idempotent creation of the streams, one durable pull
/// consumer per model, batched publishing with deduplication ids, and explicit acks.
///
/// Threads: `js_client` members may be called from any thread, except that publish_batch() is
/// called by one thread only (the outbox relay): it owns the connection's asynchronous-publish
/// state while it runs. `pull_subscription::fetch` is called by one thread per subscription.
/// `js_message` acks may be sent from any thread, one thread per message at a time. A message or
/// subscription keeps the connection alive, so it may outlive the `js_client` that made it.

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/result.hpp"

namespace sy::runtime {

/// A model name made safe as ONE subject token and as a consumer name: `[A-Za-z0-9-]` are kept,
/// every other byte (including '_' itself, '.', '*', '>' and spaces) becomes `_XX` (uppercase
/// hex). The mapping is injective, so distinct models never share a subject or a consumer, and
/// model_from_token() reverses it. An empty model gives an empty (invalid) token.
/// The token is at most limits::subject_token_max_bytes long, so that the consumer name
/// `tasks_<token>` is always one JetStream accepts: a longer encoding is cut (at a whole escape)
/// and ends in `_h` + 32 hex digits of the model's SHA-256 — `_h` never occurs in an encoding,
/// so a shortened token cannot equal a plain one, and two models share one only if their hashes
/// collide in 128 bits.
std::string subject_token(std::string_view model);

/// The inverse of subject_token(); nullopt when `token` is not a valid encoding (a shortened
/// token names its model only through the hash, so it is not reversed either).
std::optional<std::string> model_from_token(std::string_view token);

/// Gives nats.c every server of `urls` — the `nats_url` setting, comma-separated, split by
/// config::split_nats_urls — with natsOptions_SetServers, so that the first connect and every
/// reconnect go across the list (in nats.c's random order). One URL is a list of one. Every
/// NATS connection made from the setting (js_client, the micro service) sets its servers here.
/// Errors: the list names no server (invalid_config, naming `nats_url`), or nats.c refuses it.
status set_nats_servers(natsOptions* opts, std::string_view urls);

/// Names and timings of the JetStream layout. Streams are
/// `<stream_prefix>_TASKS|EVENTS|DLQ|INTAKE`, subjects start with `<subject_prefix>.`.
struct js_layout {
  std::string stream_prefix = "SY";
  std::string subject_prefix = "sy";
  int64_t ack_wait_ms = 30000;           ///< consumer AckWait: the transport lease
  int64_t duplicate_window_ms = 120000;  ///< Nats-Msg-Id deduplication window of the streams
  /// Duplicate window of <prefix>_INTAKE: the server's minimum. Submissions are deduplicated by
  /// the engine (per tenant, durably, with a reply to every copy), not silently by JetStream;
  /// see docs/nats.md, "Deduplication".
  int64_t intake_duplicate_window_ms = 100;
  /// MaxDeliver of the intake consumer: a submission that keeps failing (or crashing the
  /// process) is delivered at most this many times.
  int intake_max_deliver = 5;

  /// `<subject_prefix>.tasks.<subject_token(model)>`: a model's (or a runtime's) task queue.
  std::string task_subject(std::string_view model) const;
  /// `<subject_prefix>.dlq.<subject_token(model)>`: a dead letter of `model`'s tasks (SY_DLQ).
  std::string dlq_subject(std::string_view model) const;
};

/// One message to publish. `msg_id` (may be empty) becomes the `Nats-Msg-Id` header.
struct pub_msg {
  std::string subject, msg_id, payload;
};

namespace detail {
struct js_conn;
struct js_sub;
}  // namespace detail

/// A message delivered by a pull consumer, as a value: its subject, payload and the reply
/// subject JetStream's ack protocol answers on (`$JS.ACK.…`). It is acknowledged through the
/// js_client (ack/nak/in_progress/term publish to `reply`), so it needs no nats.c message
/// alive, can be copied into actor messages and serialized (inspect below).
struct delivery {
  std::string subject;
  std::string data;
  std::string reply;
  uint64_t delivered = 0;   ///< how many times JetStream has delivered it (1 on the first)
  uint64_t stream_seq = 0;  ///< its stream sequence number (logs)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delivery& x) {
  return f(x.subject, x.data, x.reply, x.delivered, x.stream_seq);
}

/// A message delivered by a pull consumer. Move-only owner of the underlying `natsMsg`.
/// Exactly one of ack / nak_with_delay / term ends the delivery; in_progress may come before.
class js_message {
 public:
  js_message(js_message&& other) noexcept;
  js_message& operator=(js_message&& other) noexcept;
  js_message(const js_message&) = delete;
  js_message& operator=(const js_message&) = delete;
  ~js_message();

  /// The payload; valid while this object lives.
  std::string_view data() const;
  /// The subject it was published on, e.g. `sy.tasks.gpt-4o`.
  std::string_view subject() const;
  /// The first value of header `name`, matched case-insensitively as HTTP headers are (NATS
  /// clients keep the case the publisher wrote); nullopt when the message has no such header.
  /// The headers are read (runtime/nats_headers.hpp) at the first call, and kept.
  std::optional<std::string> header(const char* name) const;
  /// How many times JetStream has delivered this message (1 on the first delivery).
  uint64_t delivered() const { return delivered_; }
  /// The stream sequence number (unique per stream; useful in logs).
  uint64_t stream_sequence() const { return stream_seq_; }

  /// Done: the work-queue stream removes the message.
  status ack();
  /// Redeliver after `delay_ms` (a scheduled retry).
  status nak_with_delay(int64_t delay_ms);
  /// Still working: restarts the AckWait timer (JetStream "+WPI").
  status in_progress();
  /// Never redeliver (a poisoned message).
  status term();
  /// The message as a value (copies payload and reply subject); acknowledge it through
  /// js_client from then on, not through this object.
  delivery to_delivery() const;

 private:
  friend class pull_subscription;
  js_message(natsMsg* msg, std::shared_ptr<detail::js_sub> sub);
  status check(natsStatus s, const char* what) const;

  natsMsg* msg_ = nullptr;
  std::shared_ptr<detail::js_sub> sub_;
  uint64_t delivered_ = 0;
  uint64_t stream_seq_ = 0;
  /// The headers, once `header` has read them (a task message's never are).
  mutable std::optional<std::vector<std::pair<std::string, std::string>>> headers_;
};

/// One durable pull consumer bound by this process (several processes may bind the same one:
/// that is how the cluster shares a model's queue).
class pull_subscription {
 public:
  explicit pull_subscription(std::shared_ptr<detail::js_sub> sub) : sub_(std::move(sub)) {}
  /// Blocks up to timeout_ms; returns 0..max messages (timeout → empty, not an error). Errors
  /// mean the connection or consumer is unusable right now; the caller backs off and retries.
  result<std::vector<js_message>> fetch(int max, int64_t timeout_ms);
  /// The durable consumer's name, `tasks_<token>` or `intake`.
  const std::string& consumer() const;

 private:
  std::shared_ptr<detail::js_sub> sub_;
};

/// One value of a JetStream key-value bucket.
struct kv_entry {
  std::string value;
  uint64_t revision = 0;  ///< the bucket stream's sequence of this value
};

/// The process's JetStream connection.
class js_client {
 public:
  /// Connects with unlimited reconnects (reconnect wait ~250 ms, an 8 MiB reconnect buffer so
  /// publishes and acks during a blip are sent after reconnect), `name` set as the client name;
  /// fails only if the first connect still fails after retrying for `connect_timeout_ms`.
  static result<std::unique_ptr<js_client>> connect(const std::string& url, const std::string& name,
                                                    js_layout layout, int64_t connect_timeout_ms);
  /// Like connect(), but an unreachable server is not a failure: after waiting up to
  /// `first_wait_ms` for the first connect it returns a client that keeps connecting in the
  /// background (connected() is false until then; publishes fail and fetches error, and their
  /// callers retry). Fails only on options nats.c refuses (e.g. a malformed URL). This is how
  /// `switchyard serve --nats URL` starts while that server is down: submissions are committed
  /// to LMDB and published once it is up.
  static result<std::unique_ptr<js_client>> open(const std::string& url, const std::string& name,
                                                 js_layout layout, int64_t first_wait_ms);
  js_client(const js_client&) = delete;
  js_client& operator=(const js_client&) = delete;
  ~js_client();

  /// True while the connection is established (false while reconnecting).
  bool connected() const;
  /// How many times the connection was re-established since it was opened.
  uint64_t reconnects() const;
  /// True when ensure_layout() succeeded on the connection as it is now (not before the last
  /// reconnect: a server restarted with an empty store has lost the streams).
  bool layout_ready() const;
  /// How many times ensure_layout() has succeeded. A consumer bound before the latest success
  /// may be gone (the server came back without its store): bind it again (subscribe_*).
  uint64_t layout_generation() const { return layout_generation_.load(); }
  /// The layout this client was made with.
  const js_layout& layout() const { return layout_; }

  /// Creates or updates (idempotent): <prefix>_TASKS (subjects <sp>.tasks.>, WorkQueue
  /// retention, file storage, duplicate window), <prefix>_EVENTS (<sp>.jobs.>, limits retention,
  /// max age 24 h), <prefix>_DLQ (<sp>.dlq.>, limits retention), <prefix>_INTAKE
  /// (<sp>.submit.>, WorkQueue retention, file storage, intake_duplicate_window_ms). Safe to
  /// call on every start and after reconnect.
  status ensure_layout();

  /// `<stream_prefix>_<kind>`, e.g. stream_name("TASKS") == "SY_TASKS".
  std::string stream_name(std::string_view kind) const;
  /// layout().task_subject(model), layout().dlq_subject(model).
  std::string task_subject(std::string_view model) const { return layout_.task_subject(model); }
  std::string dlq_subject(std::string_view model) const { return layout_.dlq_subject(model); }
  /// `<sp>.submit.<kind>`, e.g. intake_subject("job") == "sy.submit.job".
  std::string intake_subject(std::string_view kind) const;

  /// Durable pull consumer "tasks_<token>" filtered on task_subject(model), AckExplicit,
  /// AckWait = layout.ack_wait_ms, MaxDeliver unlimited, MaxAckPending 20000. Idempotent:
  /// creates it, or updates and binds to the existing one.
  result<std::unique_ptr<pull_subscription>> subscribe_tasks(std::string_view model);

  /// Durable pull consumer "intake" on <prefix>_INTAKE filtered on `<sp>.submit.>`,
  /// AckExplicit, AckWait = layout.ack_wait_ms, MaxDeliver = layout.intake_max_deliver.
  /// Idempotent like subscribe_tasks.
  result<std::unique_ptr<pull_subscription>> subscribe_intake();

  /// Publishes all messages asynchronously with Nats-Msg-Id = msg_id and waits for every ack up
  /// to timeout_ms; result[i] is true iff message i was acked (a duplicate-window drop counts as
  /// acked). Never throws; when disconnected (before or during the wait) it returns quickly with
  /// false for every message not yet acked. Call from ONE thread only (the outbox relay).
  std::vector<bool> publish_batch(const std::vector<pub_msg>& msgs, int64_t timeout_ms);

  /// The acknowledgements of a `delivery` (JetStream's ack protocol on its reply subject; any
  /// thread): done, redeliver after `delay_ms`, still working (restarts AckWait), never again.
  status ack(const delivery& d);
  status nak(const delivery& d, int64_t delay_ms);
  status in_progress(const delivery& d);
  status term(const delivery& d);

  /// Core NATS publish without a JetStream ack (events); msg_id, when set, is still sent as
  /// Nats-Msg-Id so a stream capturing the subject deduplicates it.
  status publish(const pub_msg& msg);

  /// Core NATS publish of `payload` on `subject` with extra `headers` (name, value): the answer
  /// to a request (e.g. the intake's reply). Fails on an invalid subject or when the message
  /// cannot be buffered; never waits for the server.
  status publish_reply(const std::string& subject, std::string_view payload,
                       const std::vector<std::pair<std::string, std::string>>& headers);

  /// Number of messages currently stored in `stream` (a full stream name): for tests, metrics
  /// and readiness checks.
  result<uint64_t> stream_message_count(std::string_view stream);
  /// Messages of `model`'s task consumer not yet acked: waiting (NumPending) plus delivered and
  /// unacked (NumAckPending). Zero while LMDB still holds queued tasks means messages were lost.
  result<uint64_t> task_backlog(std::string_view model);
  /// The same for the intake consumer: submissions not yet acked or terminated.
  result<uint64_t> intake_backlog();

  // --- key-value buckets (JetStream KV): the store registry (runtime/store_registration.hpp)

  /// Binds the bucket, creating it (history 1, file storage, no TTL) when it does not exist.
  status ensure_kv_bucket(const std::string& bucket);
  /// The key's latest value and revision; nullopt when it has none (never set, or deleted).
  result<std::optional<kv_entry>> kv_get(const std::string& bucket, const std::string& key);
  /// Sets the key only if it has no value; the new revision. Fails if it has one.
  result<uint64_t> kv_create(const std::string& bucket, const std::string& key,
                             std::string_view value);
  /// Sets the key only if its latest revision is `last`; the new revision.
  result<uint64_t> kv_update(const std::string& bucket, const std::string& key,
                             std::string_view value, uint64_t last);
  /// Deletes the key's value (a delete marker).
  status kv_delete(const std::string& bucket, const std::string& key);

  /// Whether this process may take tasks from the task streams now: false while its store's
  /// registration is not held (runtime/store_registration.hpp). Model dispatchers do not fetch
  /// while it is false. True unless set otherwise.
  bool consuming() const { return consuming_.load(); }
  void set_consuming(bool on) { consuming_ = on; }

 private:
  js_client(std::shared_ptr<detail::js_conn> conn, js_layout layout);
  status ensure_stream(const std::string& name, const std::string& subject, bool work_queue,
                       int64_t max_age_ms, int64_t duplicate_window_ms);
  result<std::unique_ptr<pull_subscription>> subscribe_pull(const std::string& stream,
                                                            const std::string& subject,
                                                            std::string consumer,
                                                            int64_t max_deliver);
  result<uint64_t> consumer_backlog(const std::string& stream, const std::string& consumer);

  static result<std::unique_ptr<js_client>> with_context(natsConnection* nc, js_layout layout);

  std::shared_ptr<detail::js_conn> conn_;
  js_layout layout_;
  /// reconnects() + 1 at the start of the last ensure_layout() that succeeded; 0: none did.
  std::atomic<uint64_t> layout_epoch_{0};
  std::atomic<uint64_t> layout_generation_{0};
  std::atomic<bool> consuming_{true};
};

}  // namespace sy::runtime
