#pragma once
/// Tracing (docs/operations.md, "Tracing"): W3C trace context in and out, and spans exported over
/// OTLP/HTTP with the JSON encoding. One exporter per process, like the log and the metrics:
/// `record` hands a finished span to it from any thread without blocking — into a bounded queue
/// that its own thread sends to the collector in batches. A full queue or a collector that is
/// slow or down drops spans (counted in `switchyard_trace_spans_dropped_total`); it never holds
/// up the engine. Without `otlp_endpoint` nothing is queued, and trace context is still kept and
/// propagated (a client's trace goes on to the gateways and webhook receivers).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sy::trace {

/// One position in a trace: a `traceparent` header's parts, and the `tracestate` beside it.
struct context {
  std::string trace_id;  ///< 32 lower-case hex digits, not all zero
  std::string span_id;   ///< 16 lower-case hex digits, not all zero
  uint8_t flags = 1;     ///< bit 0: sampled
  std::string state;     ///< tracestate, passed on as received (empty: none)

  bool valid() const { return trace_id.size() == 32 && span_id.size() == 16; }
  bool operator==(const context&) const = default;
  /// "00-<trace_id>-<span_id>-<flags>"; empty when not valid.
  std::string traceparent() const;
  /// The same trace, at a new span of its own (a child of this one).
  context child() const;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, context& x) {
  return f(x.trace_id, x.span_id, x.flags, x.state);
}

/// Reads a `traceparent` header value (W3C Trace Context, version 00; a later version is read by
/// its first four fields). Invalid — wrong lengths, upper-case or non-hex digits, an all-zero
/// trace or span id, version ff — gives nullopt: the caller starts a new trace, as the standard
/// asks. `state` is kept as `tracestate` when at most 512 bytes, else dropped.
std::optional<context> parse(std::string_view traceparent, std::string_view state = {});

/// A new trace: random ids, sampled.
context start();

/// What a job or a batch keeps of its trace (its record's `trace` and `trace_state`): its own
/// span, which its children (queue waits, attempts, gateway calls, webhooks, batch phases) take
/// as parent, and that span's parent, the client's span (empty: the job's span is the trace's
/// root).
struct stored {
  context self;
  std::string parent_span_id;
};
/// A new job's or batch's: a span of its own under `client` (not valid: the root of a new trace).
stored begin(const context& client);
/// "00-<trace>-<span>-<flags>[-<parent span>]".
std::string store(const stored& s);
/// The record's fields back (nullopt: empty or not of store's making).
std::optional<stored> load(std::string_view text, std::string_view state = {});
/// What a new job or batch keeps in its record's `trace`: its span under the client's, or
/// nothing when the client sent no context — then `of` derives the trace from the id, so the
/// common case stores nothing and copies nothing.
std::string to_keep(const context& client);
/// The trace of the job or batch `id` whose record keeps `kept` (to_keep's) and `state`: what
/// `kept` says, else a root span whose trace and span ids are derived from `id` (stable, so every
/// part of the engine and every restart finds the same ones).
stored of(std::string_view id, std::string_view kept, std::string_view state = {});

/// Random span and trace ids (16 and 32 hex digits).
std::string new_span_id();
std::string new_trace_id();

/// Kinds as OTLP numbers them.
enum class span_kind : int { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 };

/// A finished span.
struct span {
  std::string trace_id;
  std::string span_id;
  std::string parent_span_id;  ///< empty: a root span
  std::string name;
  span_kind kind = span_kind::internal;
  int64_t start_ms = 0;  ///< Unix milliseconds (the engine's clock)
  int64_t end_ms = 0;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<std::pair<std::string, int64_t>> int_attributes;
  bool error = false;
  std::string status_message;  ///< why, when `error`
};

/// A span of `name` in `parent`'s trace, its child; `at` is itself (its span id becomes the
/// span's), for a span whose id was handed out before it ended (a header already sent).
span make_span(const context& at, std::string_view parent_span_id, std::string name, span_kind kind,
               int64_t start_ms, int64_t end_ms);

/// Records a span `name` under the job or batch `id` whose record keeps `kept` (nothing when
/// spans are not exported).
void record_child(std::string_view id, std::string_view kept, std::string name, span_kind kind,
                  int64_t start_ms, int64_t end_ms);

/// Queues `s` for export; dropped (and counted) when the queue is full. A no-op without an
/// exporter.
void record(span s);
/// Whether spans are exported (an exporter runs): callers skip building spans otherwise.
bool enabled();

/// The process's exporter: started once at start with `otlp_endpoint` (http://host:port[/base];
/// spans go to <base>/v1/traces), stopped at shutdown after a last flush (bounded by
/// `flush_ms`). Tests may start and stop it more than once.
struct exporter_options {
  std::string endpoint;
  std::string service_name = "switchyard";
  size_t max_queue = 4096;     ///< spans waiting; more are dropped
  size_t max_batch = 512;      ///< spans per request
  int64_t interval_ms = 1000;  ///< the longest a span waits for its batch
  int64_t timeout_ms = 2000;   ///< one export request, connect to answer
};
/// Errors: invalid_config when the endpoint is not an http:// URL.
bool start_exporter(const exporter_options& o, std::string* why);
void stop_exporter(int64_t flush_ms = 2000);

/// The OTLP/HTTP JSON body of `spans` (exposed for the unit tests).
std::string otlp_json(const std::vector<span>& spans, std::string_view service_name);

}  // namespace sy::trace
