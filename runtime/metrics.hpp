#pragma once
/// The engine's metrics (docs/operations.md lists each one): one registry per process, like the
/// log, served by `GET /metrics` in the Prometheus text format. Each value is counted where its
/// state has its owner: job and batch outcomes by the storage writer once their commit is
/// durable, gateway requests by the gateway client, queue depths by the lease reaper's sweep,
/// HTTP requests by the request handler. Values that are cheap to read where they live (the
/// LMDB map, the NATS connection, the process) are read at scrape time by a `reader`.
///
/// Every family is served from start: the series whose labels are known in advance (outcomes,
/// statuses, kinds, reasons) read 0 until their first event, so an alert on their `increase`
/// sees the first one; a family labelled by an open set (a model, a queue, a route) shows its
/// HELP and TYPE lines until its first series.
///
/// Thread-safe: counters and gauges are atomics, a histogram observation takes its own short
/// lock, and per-model instruments are made once per model and then found under a short lock.
/// Several engines in one process (tests) share the registry and add up.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sy::runtime {
class clock;
}  // namespace sy::runtime

namespace sy::metrics {

inline constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

/// Every metric, in the Prometheus text exposition format 0.0.4.
std::string scrape();

// --- values read at scrape time --------------------------------------------------------------

struct sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};
/// Reads the current samples of one metric (called on an HTTP thread: keep it short).
using reader = std::function<std::vector<sample>()>;
enum class kind { gauge, counter };

/// Serves a metric read at each scrape until the handle is destroyed (the owner of the state it
/// reads keeps the handle, so the reader never outlives that state).
class reader_handle {
 public:
  reader_handle() = default;
  explicit reader_handle(uint64_t id) : id_(id) {}
  reader_handle(reader_handle&& o) noexcept : id_(o.id_) { o.id_ = 0; }
  reader_handle& operator=(reader_handle&& o) noexcept;
  reader_handle(const reader_handle&) = delete;
  reader_handle& operator=(const reader_handle&) = delete;
  ~reader_handle();

 private:
  uint64_t id_ = 0;
};
[[nodiscard]] reader_handle add_reader(std::string name, std::string help, reader read,
                                       kind k = kind::gauge);

// --- jobs and batches (the storage writer, after the commit) ---------------------------------

/// `jobs_processed_total{result,reason}`.
void job_processed(std::string_view result, std::string_view reason);
/// `job_processing_duration_seconds{size_bucket}`: from the first start to the end.
void job_processing(double seconds, int64_t size);
/// `job_queue_wait_duration_seconds`: from queued to started.
void job_queue_wait(double seconds);
/// `batch_job_e2e_latency_seconds{status}`: from creation to the end.
void batch_ended(std::string_view status, double seconds);
/// `batch_cancellation_total{phase}`.
void batch_cancelled(std::string_view phase);
/// `batch_startup_recovery_total{status,action}`.
void batch_recovered(std::string_view status, std::string_view action);
/// `plan_build_duration_seconds{size_bucket}`: a batch's ingestion (input scan and plans).
void plan_built(double seconds, int64_t size);
/// `file_storage_operations_total{operation,component,status}`: status success, retry (it
/// failed and will be tried again) or exhausted (it failed for good).
void file_operation(std::string_view operation, std::string_view component,
                    std::string_view status);
/// The status of an operation that is not retried: success or exhausted.
inline std::string_view once(bool ok) { return ok ? "success" : "exhausted"; }
/// `batch_request_prompt_tokens_total{model}`, `batch_request_generation_tokens_total{model}`.
void batch_tokens(const std::string& model, int64_t prompt, int64_t generation);
/// `switchyard_storage_commit_duration_seconds`, `switchyard_storage_commit_operations`.
void commit(double seconds, size_t operations);
/// `switchyard_attempts_total{model,outcome}`: how attempts ended, as committed; and
/// `switchyard_attempt_duration_seconds{model}`: from the lease to the outcome's commit.
void attempt_ended(const std::string& model, std::string_view outcome, double seconds);

// --- capacity ---------------------------------------------------------------------------------

/// `total_workers` and `processor_max_inflight_concurrency` (global_concurrency).
void set_global_limit(int64_t slots);
/// `switchyard_model_concurrency_limit{model}`.
void set_model_limit(const std::string& model, int64_t slots);
/// `active_workers`: jobs with work in flight here (the job registry's count).
void set_active_jobs(int64_t n);
/// `switchyard_queue_depth{queue}` and `switchyard_queue_oldest_age_seconds{queue}` for every
/// queue (model or worker runtime) with queued tasks; queues left out drop to zero.
struct queue_state {
  int64_t depth = 0;
  double oldest_age_seconds = 0;
};
void set_queues(const std::map<std::string, queue_state>& queues);
/// `switchyard_outbox_oldest_age_seconds`: how long ago the relay first failed to empty the
/// outbox (blocked), until it empties it again (not blocked: zero).
void set_outbox_blocked(bool blocked);
/// `switchyard_outbox_published_total{kind}`: messages JetStream stored from the outbox, by kind
/// (task, event, task_event, dlq): what a job costs in JetStream messages.
void outbox_published(std::string_view kind, int64_t n);

// --- gateway requests (the gateway client) ----------------------------------------------------

/// One request in flight to a gateway for `model`: counted in `processor_inflight_requests`
/// and `model_inflight_requests{model}` while it lives; `finish` records its duration and
/// outcome (a meter destroyed unfinished records nothing more), timed by `clock` (the gateway
/// client's), which must outlive the meter.
class request_meter {
 public:
  request_meter(const std::string& model, const runtime::clock& clock);
  ~request_meter();
  request_meter(const request_meter&) = delete;
  request_meter& operator=(const request_meter&) = delete;
  /// `got_response`: an HTTP answer with `status`; else a transport failure or an abort.
  void finish(bool got_response, int status, int tries, bool aborted);

 private:
  struct model_meters* m_;
  const runtime::clock& clock_;
  int64_t start_us_;
  bool finished_ = false;
};

// --- the API ------------------------------------------------------------------------------------

/// `switchyard_submissions_total{surface,status}`: surface http, nats or batch; status the HTTP
/// status the submission got (for NATS, the status its error has in the catalogue).
void submission(std::string_view surface, int status);
/// `switchyard_http_requests_total{route,code}`, `switchyard_http_request_duration_seconds{route}`.
void http_request(std::string_view route, int status, double seconds);
/// `switchyard_webhook_deliveries_total{outcome}`: delivered, retried or dropped.
void webhook_delivery(std::string_view outcome);

/// `switchyard_trace_spans_exported_total` and `switchyard_trace_spans_dropped_total{reason}`
/// (queue_full, export_failed, shutdown).
void spans_exported(size_t n);
void spans_dropped(std::string_view reason, size_t n);

/// The label value of a size: "1", "2-100", "101-1000", "1001-10000", "10001-100000" or
/// "100001+".
std::string_view size_bucket(int64_t size);

}  // namespace sy::metrics
