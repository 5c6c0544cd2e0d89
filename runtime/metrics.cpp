#include "runtime/metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "config/error_codes.hpp"
#include "runtime/clock.hpp"

namespace sy::metrics {
namespace {

namespace pm = prometheus;

const pm::Histogram::BucketBoundaries request_buckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                         1,     2.5,  5,     10,   30,  60,   120};
const pm::Histogram::BucketBoundaries job_buckets = {0.05, 0.1, 0.5,  1,    5,    10,    30,   60,
                                                     300,  900, 1800, 3600, 7200, 21600, 86400};
const pm::Histogram::BucketBoundaries commit_buckets = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                                        0.05,   0.1,   0.25,  0.5,   1};
const pm::Histogram::BucketBoundaries ops_buckets = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
const pm::Histogram::BucketBoundaries http_buckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30};

/// Wall time (the outbox's age is an operator's measure, not engine time).
int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

/// A model's instruments, made once (Family::Add hashes its labels under the family's lock).
struct model_meters {
  std::string name;
  pm::Gauge& inflight;
  pm::Histogram& duration;
  pm::Counter& errors;
  pm::Counter& retries;
  pm::Counter& prompt_tokens;
  pm::Counter& generation_tokens;
};

namespace {

struct registry {
  pm::Registry r;
  /// Every family's name, help and type, in the order declared: a family with no series yet
  /// (one labelled by model or queue before its first) is still served, as HELP and TYPE lines.
  std::vector<pm::MetricFamily> shapes;

  template <class T>
  pm::Family<T>& family(pm::detail::Builder<T> builder, const char* name, const char* help) {
    auto& f = builder.Name(name).Help(help).Register(r);
    shapes.push_back({name, help, T::metric_type, {}});
    return f;
  }

  // seed 002's set
  pm::Family<pm::Counter>& jobs_processed =
      family(pm::BuildCounter(), "jobs_processed_total",
             "Jobs and batches that ended or were re-queued, by result and reason.");
  pm::Family<pm::Histogram>& job_processing =
      family(pm::BuildHistogram(), "job_processing_duration_seconds",
             "From a job's first start to its end, by its number of requests.");
  pm::Histogram& queue_wait = family(pm::BuildHistogram(), "job_queue_wait_duration_seconds",
                                     "From a job's queueing to its start.")
                                  .Add({}, job_buckets);
  pm::Gauge& total_workers = family(pm::BuildGauge(), "total_workers",
                                    "Jobs that may run requests at once here: global_concurrency.")
                                 .Add({});
  pm::Gauge& active_workers =
      family(pm::BuildGauge(), "active_workers", "Jobs and batches with work in flight here.")
          .Add({});
  pm::Gauge& inflight =
      family(pm::BuildGauge(), "processor_inflight_requests", "Gateway requests in flight.")
          .Add({});
  pm::Gauge& max_inflight = family(pm::BuildGauge(), "processor_max_inflight_concurrency",
                                   "The global limit on requests in flight: global_concurrency.")
                                .Add({});
  pm::Family<pm::Gauge>& model_inflight =
      family(pm::BuildGauge(), "model_inflight_requests", "Gateway requests in flight, by model.");
  pm::Family<pm::Histogram>& plan_build =
      family(pm::BuildHistogram(), "plan_build_duration_seconds",
             "A batch's ingestion (input scan and plans), by its number of requests.");
  pm::Family<pm::Histogram>& request_duration =
      family(pm::BuildHistogram(), "model_request_execution_duration_seconds",
             "Gateway requests from send to answer (retries included), by model.");
  pm::Family<pm::Counter>& request_errors =
      family(pm::BuildCounter(), "request_errors_by_model_total",
             "Gateway requests that ended without a 2xx answer, by model.");
  pm::Family<pm::Counter>& file_ops =
      family(pm::BuildCounter(), "file_storage_operations_total",
             "Operations on the file store, by operation, component and status.");
  pm::Family<pm::Counter>& prompt_tokens =
      family(pm::BuildCounter(), "batch_request_prompt_tokens_total",
             "Prompt tokens of batch requests, from the gateway's usage, by model.");
  pm::Family<pm::Counter>& generation_tokens =
      family(pm::BuildCounter(), "batch_request_generation_tokens_total",
             "Completion tokens of batch requests, from the gateway's usage, by model.");
  pm::Family<pm::Histogram>& batch_e2e =
      family(pm::BuildHistogram(), "batch_job_e2e_latency_seconds",
             "From a batch's creation to its end, by final status.");
  pm::Family<pm::Counter>& batch_cancel = family(pm::BuildCounter(), "batch_cancellation_total",
                                                 "Batches cancelled, by the phase they were in.");
  pm::Family<pm::Counter>& batch_recovery =
      family(pm::BuildCounter(), "batch_startup_recovery_total",
             "Batches found unfinished at start, by status and what was done.");
  // the engine's own
  pm::Family<pm::Counter>& submissions =
      family(pm::BuildCounter(), "switchyard_submissions_total",
             "Submissions, by surface (http, nats, batch) and the HTTP status they got.");
  pm::Family<pm::Gauge>& queue_depth =
      family(pm::BuildGauge(), "switchyard_queue_depth", "Tasks queued and not started, by queue.");
  pm::Family<pm::Gauge>& queue_age = family(pm::BuildGauge(), "switchyard_queue_oldest_age_seconds",
                                            "Age of the oldest queued task, by queue.");
  pm::Family<pm::Gauge>& model_limit =
      family(pm::BuildGauge(), "switchyard_model_concurrency_limit",
             "Requests a model may have in flight (per_model_concurrency), by model.");
  pm::Family<pm::Counter>& attempts =
      family(pm::BuildCounter(), "switchyard_attempts_total",
             "Attempts, by model and how they ended (succeeded, retried, failed, released, "
             "cancelled, expired).");
  pm::Family<pm::Histogram>& attempt_duration =
      family(pm::BuildHistogram(), "switchyard_attempt_duration_seconds",
             "Attempts from their lease to their outcome's commit, by model.");
  pm::Family<pm::Counter>& gateway_responses =
      family(pm::BuildCounter(), "switchyard_gateway_responses_total",
             "Gateway requests by model and outcome class (2xx, 4xx, 5xx, transport, aborted).");
  pm::Family<pm::Counter>& gateway_retries =
      family(pm::BuildCounter(), "switchyard_gateway_retries_total",
             "HTTP exchanges a gateway request needed beyond its first, by model.");
  pm::Histogram& commit_duration =
      family(pm::BuildHistogram(), "switchyard_storage_commit_duration_seconds",
             "The storage writer's group commits, fsync included.")
          .Add({}, commit_buckets);
  pm::Histogram& commit_ops = family(pm::BuildHistogram(), "switchyard_storage_commit_operations",
                                     "Operations per group commit.")
                                  .Add({}, ops_buckets);
  std::atomic<int64_t> outbox_since_ms{0};  ///< made an age at scrape time
  pm::Family<pm::Counter>& outbox_published =
      family(pm::BuildCounter(), "switchyard_outbox_published_total",
             "Messages JetStream stored from the outbox, by kind (task, event, task_event, dlq).");
  pm::Family<pm::Counter>& webhooks =
      family(pm::BuildCounter(), "switchyard_webhook_deliveries_total",
             "Webhook deliveries, by outcome (delivered, retried, dropped).");
  pm::Family<pm::Counter>& http_requests =
      family(pm::BuildCounter(), "switchyard_http_requests_total",
             "HTTP requests, by route pattern and status code.");
  pm::Family<pm::Histogram>& http_duration =
      family(pm::BuildHistogram(), "switchyard_http_request_duration_seconds",
             "HTTP requests from the parsed request to the response, by route pattern.");

  pm::Counter& spans_exported = family(pm::BuildCounter(), "switchyard_trace_spans_exported_total",
                                       "Spans the collector accepted (OTLP/HTTP).")
                                    .Add({});
  pm::Family<pm::Counter>& spans_dropped =
      family(pm::BuildCounter(), "switchyard_trace_spans_dropped_total",
             "Spans dropped, by reason (queue_full, export_failed, shutdown).");

  std::mutex mu;  ///< guards `models` and `queues_seen`
  std::unordered_map<std::string, std::unique_ptr<model_meters>> models;
  std::map<std::string, pm::Gauge*, std::less<>> queues_seen;
  /// Guards `readers` and `next_reader`, and is held while a scrape calls the readers (which may
  /// open LMDB read transactions): nothing else is done under it, so no caller that holds a
  /// read transaction can wait on a scrape's lock.
  std::mutex readers_mu;
  struct scraped {
    std::string name;
    std::string help;
    reader read;
    kind k = kind::gauge;
  };
  std::map<uint64_t, scraped> readers;
  uint64_t next_reader = 1;

  registry() { add_known_series(); }
  void add_known_series();

  model_meters& model(const std::string& m) {
    std::lock_guard lock(mu);
    auto it = models.find(m);
    if (it != models.end()) return *it->second;
    const pm::Labels l{{"model", m}};
    auto made = std::unique_ptr<model_meters>(new model_meters{
        m, model_inflight.Add(l), request_duration.Add(l, request_buckets), request_errors.Add(l),
        gateway_retries.Add(l), prompt_tokens.Add(l), generation_tokens.Add(l)});
    return *models.emplace(m, std::move(made)).first->second;
  }
};

registry& reg() {
  static auto* r = new registry;  // never destroyed: threads may count while the process exits
  return *r;
}

void add(pm::Family<pm::Counter>& f, const pm::Labels& l, double by = 1) { f.Add(l).Increment(by); }

/// The series whose labels are known in advance are made at start, so that each reads 0 until
/// its first event and an alert on its `increase` sees the first one too. (A family labelled by
/// an open set, a model, a queue or a route, has no series until its first; `scrape` serves its
/// HELP and TYPE lines.) The values are the ones the callers pass: keep them in step.
void registry::add_known_series() {
  // A vector, not an initializer_list: a pair or tuple made from a braced list would keep an
  // initializer_list whose array is gone at the end of the declaration.
  using list = std::vector<std::string_view>;
  auto text = [](std::string_view v) { return std::string(v); };
  // actors/observe_changes.cpp; the reasons are the codes an attempt's end records
  // (actors/attempt.cpp) or the lease reaper's, and the fallbacks.
  const std::pair<std::string_view, list> jobs[] = {
      {"success", {"none"}},
      {"cancelled", {"none"}},
      {"expired", {"expired_dequeue", "expired_execution"}},
      {"failed",
       {"system_error", errc::gateway_rejected.view(), errc::gateway_error.view(),
        errc::gateway_unreachable.view(), errc::http_rejected.view(), errc::http_error.view(),
        errc::http_unreachable.view(), errc::http_task_denied.view(), errc::lease_expired.view()}},
      {"re_enqueued",
       {errc::gateway_error.view(), errc::gateway_unreachable.view(), errc::http_error.view(),
        errc::http_unreachable.view(), errc::lease_expired.view(), errc::shutdown.view()}}};
  for (const auto& [result, reasons] : jobs)
    for (auto reason : reasons)
      jobs_processed.Add({{"result", text(result)}, {"reason", text(reason)}});
  for (int64_t size : {1, 2, 101, 1001, 10001, 100001}) {
    const pm::Labels l{{"size_bucket", text(size_bucket(size))}};
    job_processing.Add(l, job_buckets);
    plan_build.Add(l, job_buckets);
  }
  for (std::string_view s : {"completed", "failed", "expired", "cancelled"})
    batch_e2e.Add({{"status", text(s)}}, job_buckets);
  for (std::string_view p : {"queued", "in_progress", "finalizing"})
    batch_cancel.Add({{"phase", text(p)}});
  // actors/batch_manager.cpp: the statuses of a batch that has not ended.
  for (std::string_view s : {"validating", "in_progress", "finalizing", "cancelling"})
    batch_recovery.Add({{"status", text(s)}, {"action", "resumed"}});
  // actors/batch_manager.cpp (apiserver, garbage-collector), actors/batch_finalize.cpp
  // (processor: the one store that is retried).
  const std::tuple<std::string_view, std::string_view, list> file_kinds[] = {
      {"store", "apiserver", {"success", "exhausted"}},
      {"store", "processor", {"success", "retry", "exhausted"}},
      {"delete", "apiserver", {"success", "exhausted"}},
      {"delete", "garbage-collector", {"success", "exhausted"}}};
  for (const auto& [operation, component, statuses] : file_kinds)
    for (auto st : statuses)
      file_ops.Add(
          {{"operation", text(operation)}, {"component", text(component)}, {"status", text(st)}});
  // The statuses a surface answers a submission it takes with (docs/api.md, docs/nats.md), and
  // the two that say the engine could not: 500 and 503.
  const std::pair<std::string_view, list> surfaces[] = {
      {"http", {"200", "201", "202", "500", "503"}},
      {"batch", {"200", "500", "503"}},
      {"nats", {"200", "202", "500", "503"}}};
  for (const auto& [surface, statuses] : surfaces)
    for (auto st : statuses) submissions.Add({{"surface", text(surface)}, {"status", text(st)}});
  for (std::string_view k : {"task", "event", "task_event", "dlq"})
    outbox_published.Add({{"kind", text(k)}});
  for (std::string_view o : {"delivered", "retried", "dropped"})
    webhooks.Add({{"outcome", text(o)}});
  for (std::string_view why : {"queue_full", "export_failed", "shutdown"})
    spans_dropped.Add({{"reason", text(why)}});
}

struct key_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// A labelled child found once per thread and call site: Family::Add builds a label map, hashes
/// it and takes the family's lock, which the hot paths (every request, every job) should not
/// pay each time. `make` runs on the first use of a key on this thread; the registry is never
/// destroyed, so the children outlive every cache. Each call site (its lambda's type) has a
/// cache of its own, so keys need only tell that site's label values apart.
template <class T, class Make>
T& cached(std::string_view a, std::string_view b, Make&& make) {
  thread_local std::unordered_map<std::string, T*, key_hash, std::equal_to<>> cache;
  thread_local std::string key;
  key.assign(a).push_back('\x1f');
  key.append(b);
  if (auto it = cache.find(std::string_view(key)); it != cache.end()) return *it->second;
  T& made = make();
  cache.emplace(key, &made);
  return made;
}

/// A status code as label text, without allocating.
struct code_text {
  explicit code_text(int status) {
    auto r = std::to_chars(buf, buf + sizeof buf, status);
    len = static_cast<size_t>(r.ptr - buf);
  }
  std::string_view view() const { return {buf, len}; }
  char buf[12];
  size_t len = 0;
};

/// process_* as Prometheus's client libraries name them, from /proc/self.
void process_families(std::vector<pm::MetricFamily>& out) {
  auto one = [&](const char* name, const char* help, pm::MetricType type, double v) {
    pm::MetricFamily f{name, help, type, {}};
    pm::ClientMetric m;
    if (type == pm::MetricType::Counter) {
      m.counter.value = v;
    } else {
      m.gauge.value = v;
    }
    f.metric.push_back(m);
    out.push_back(std::move(f));
  };
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return;
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> f;
  for (std::string w; fields >> w;) f.push_back(w);
  if (f.size() < 22) return;
  // After the name: state(0) ... utime(11) stime(12) ... starttime(19) vsize(20) rss(21).
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  one("process_cpu_seconds_total", "User and system CPU time spent, in seconds.",
      pm::MetricType::Counter, (std::stod(f[11]) + std::stod(f[12])) / tick);
  one("process_resident_memory_bytes", "Resident memory size in bytes.", pm::MetricType::Gauge,
      std::stod(f[21]) * page);
  one("process_virtual_memory_bytes", "Virtual memory size in bytes.", pm::MetricType::Gauge,
      std::stod(f[20]));
  std::ifstream stat("/proc/stat");
  double boot = 0;
  for (std::string key; stat >> key;) {
    if (key == "btime") {
      stat >> boot;
      break;
    }
  }
  one("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.",
      pm::MetricType::Gauge, boot + std::stod(f[19]) / tick);
  int fds = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (auto* e = readdir(d))
      if (e->d_name[0] != '.') ++fds;
    closedir(d);
  }
  one("process_open_fds", "Open file descriptors.", pm::MetricType::Gauge, fds - 1);  // minus d
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  one("process_max_fds", "The limit on open file descriptors.", pm::MetricType::Gauge,
      static_cast<double>(lim.rlim_cur));
}

}  // namespace

std::string scrape() {
  auto& r = reg();
  // The registry leaves out a family with no series yet; its shape stands in for it, so every
  // family is served from start, in the order declared.
  std::vector<pm::MetricFamily> families;
  {
    auto collected = r.r.Collect();
    std::unordered_map<std::string_view, pm::MetricFamily*> by_name;
    for (auto& f : collected) by_name.emplace(f.name, &f);
    families.reserve(r.shapes.size());
    for (const auto& shape : r.shapes) {
      if (auto it = by_name.find(shape.name); it != by_name.end()) {
        families.push_back(std::move(*it->second));
      } else {
        families.push_back(shape);
      }
    }
  }
  {  // the outbox's age, from when the relay found it could not empty it
    const int64_t since = r.outbox_since_ms.load();
    pm::MetricFamily f{"switchyard_outbox_oldest_age_seconds",
                       "How long the relay has been unable to empty the outbox (0: it is not).",
                       pm::MetricType::Gauge,
                       {}};
    f.metric.emplace_back().gauge.value =
        since > 0 ? static_cast<double>(wall_ms() - since) / 1000 : 0;
    families.push_back(std::move(f));
  }
  // Read under the lock: a handle's owner waits for a scrape in progress before the state the
  // reader reads goes away.
  std::lock_guard lock(r.readers_mu);
  for (const auto& [id, rd] : r.readers) {
    const bool counter = rd.k == kind::counter;
    pm::MetricFamily f{
        rd.name, rd.help, counter ? pm::MetricType::Counter : pm::MetricType::Gauge, {}};
    for (const auto& s : rd.read()) {
      pm::ClientMetric m;
      for (const auto& [k, v] : s.labels) m.label.push_back({k, v});
      (counter ? m.counter.value : m.gauge.value) = s.value;
      f.metric.push_back(std::move(m));
    }
    families.push_back(std::move(f));
  }
  process_families(families);
  return pm::TextSerializer().Serialize(families);
}

reader_handle& reader_handle::operator=(reader_handle&& o) noexcept {
  if (this != &o) {
    reader_handle gone(id_);
    id_ = std::exchange(o.id_, 0);
  }
  return *this;
}

reader_handle::~reader_handle() {
  if (id_ == 0) return;
  std::lock_guard lock(reg().readers_mu);
  reg().readers.erase(id_);
}

reader_handle add_reader(std::string name, std::string help, reader read, kind k) {
  auto& r = reg();
  std::lock_guard lock(r.readers_mu);
  const uint64_t id = r.next_reader++;
  r.readers.emplace(id, registry::scraped{std::move(name), std::move(help), std::move(read), k});
  return reader_handle(id);
}

std::string_view size_bucket(int64_t size) {
  if (size <= 1) return "1";
  if (size <= 100) return "2-100";
  if (size <= 1000) return "101-1000";
  if (size <= 10000) return "1001-10000";
  if (size <= 100000) return "10001-100000";
  return "100001+";
}

void job_processed(std::string_view result, std::string_view reason) {
  cached<pm::Counter>(result, reason, [&]() -> pm::Counter& {
    return reg().jobs_processed.Add(
        {{"result", std::string(result)}, {"reason", std::string(reason)}});
  }).Increment();
}

void job_processing(double seconds, int64_t size) {
  const auto bucket = size_bucket(size);
  cached<pm::Histogram>(bucket, "", [&]() -> pm::Histogram& {
    return reg().job_processing.Add({{"size_bucket", std::string(bucket)}}, job_buckets);
  }).Observe(seconds);
}

void job_queue_wait(double seconds) { reg().queue_wait.Observe(seconds); }

void batch_ended(std::string_view status, double seconds) {
  reg().batch_e2e.Add({{"status", std::string(status)}}, job_buckets).Observe(seconds);
}

void batch_cancelled(std::string_view phase) {
  add(reg().batch_cancel, {{"phase", std::string(phase)}});
}

void batch_recovered(std::string_view status, std::string_view action) {
  add(reg().batch_recovery, {{"status", std::string(status)}, {"action", std::string(action)}});
}

void plan_built(double seconds, int64_t size) {
  reg()
      .plan_build.Add({{"size_bucket", std::string(size_bucket(size))}}, job_buckets)
      .Observe(seconds);
}

void file_operation(std::string_view operation, std::string_view component,
                    std::string_view status) {
  add(reg().file_ops, {{"operation", std::string(operation)},
                       {"component", std::string(component)},
                       {"status", std::string(status)}});
}

void batch_tokens(const std::string& model, int64_t prompt, int64_t generation) {
  auto& m = cached<model_meters>(model, "", [&]() -> model_meters& { return reg().model(model); });
  if (prompt > 0) m.prompt_tokens.Increment(static_cast<double>(prompt));
  if (generation > 0) m.generation_tokens.Increment(static_cast<double>(generation));
}

void commit(double seconds, size_t operations) {
  reg().commit_duration.Observe(seconds);
  reg().commit_ops.Observe(static_cast<double>(operations));
}

void attempt_ended(const std::string& model, std::string_view outcome, double seconds) {
  cached<pm::Histogram>(model, "", [&]() -> pm::Histogram& {
    return reg().attempt_duration.Add({{"model", model}}, request_buckets);
  }).Observe(seconds);
  cached<pm::Counter>(model, outcome, [&]() -> pm::Counter& {
    return reg().attempts.Add({{"model", model}, {"outcome", std::string(outcome)}});
  }).Increment();
}

void set_global_limit(int64_t slots) {
  reg().total_workers.Set(static_cast<double>(slots));
  reg().max_inflight.Set(static_cast<double>(slots));
}

void set_model_limit(const std::string& model, int64_t slots) {
  reg().model_limit.Add({{"model", model}}).Set(static_cast<double>(slots));
}

void set_active_jobs(int64_t n) { reg().active_workers.Set(static_cast<double>(n)); }

void set_queues(const std::map<std::string, queue_state>& queues) {
  auto& r = reg();
  std::lock_guard lock(r.mu);
  for (auto& [name, depth] : r.queues_seen) {  // queues that emptied read zero
    if (queues.count(name) != 0) continue;
    depth->Set(0);
    r.queue_age.Add({{"queue", name}}).Set(0);
  }
  for (const auto& [name, q] : queues) {
    auto& depth = r.queue_depth.Add({{"queue", name}});
    depth.Set(static_cast<double>(q.depth));
    r.queue_age.Add({{"queue", name}}).Set(q.oldest_age_seconds);
    r.queues_seen.emplace(name, &depth);
  }
}

void set_outbox_blocked(bool blocked) {
  auto& since = reg().outbox_since_ms;
  if (!blocked) {
    since.store(0);
    return;
  }
  int64_t none = 0;
  since.compare_exchange_strong(none, wall_ms());  // keeps the first failure's time
}

request_meter::request_meter(const std::string& model, const runtime::clock& clock)
    : m_(&cached<model_meters>(model, "", [&]() -> model_meters& { return reg().model(model); })),
      clock_(clock),
      start_us_(clock.monotonic_us()) {
  reg().inflight.Increment();
  m_->inflight.Increment();
}

request_meter::~request_meter() {
  reg().inflight.Decrement();
  m_->inflight.Decrement();
}

void request_meter::finish(bool got_response, int status, int tries, bool aborted) {
  if (std::exchange(finished_, true)) return;
  m_->duration.Observe(static_cast<double>(clock_.monotonic_us() - start_us_) / 1e6);
  if (tries > 1) m_->retries.Increment(tries - 1);
  std::string_view cls = aborted         ? "aborted"
                         : !got_response ? "transport"
                         : status < 300  ? "2xx"
                         : status < 400  ? "3xx"
                         : status < 500  ? "4xx"
                                         : "5xx";
  if (cls != "2xx" && cls != "aborted") m_->errors.Increment();
  cached<pm::Counter>(m_->name, cls, [&]() -> pm::Counter& {
    return reg().gateway_responses.Add({{"model", m_->name}, {"class", std::string(cls)}});
  }).Increment();
}

void submission(std::string_view surface, int status) {
  const code_text code(status);
  cached<pm::Counter>(surface, code.view(), [&]() -> pm::Counter& {
    return reg().submissions.Add(
        {{"surface", std::string(surface)}, {"status", std::string(code.view())}});
  }).Increment();
}

void http_request(std::string_view route, int status, double seconds) {
  const code_text code(status);
  cached<pm::Counter>(route, code.view(), [&]() -> pm::Counter& {
    return reg().http_requests.Add(
        {{"route", std::string(route)}, {"code", std::string(code.view())}});
  }).Increment();
  cached<pm::Histogram>(route, "", [&]() -> pm::Histogram& {
    return reg().http_duration.Add({{"route", std::string(route)}}, http_buckets);
  }).Observe(seconds);
}

void spans_exported(size_t n) { reg().spans_exported.Increment(static_cast<double>(n)); }

void spans_dropped(std::string_view reason, size_t n) {
  add(reg().spans_dropped, {{"reason", std::string(reason)}}, static_cast<double>(n));
}

void outbox_published(std::string_view kind, int64_t n) {
  if (n <= 0) return;
  cached<pm::Counter>(kind, "", [&]() -> pm::Counter& {
    return reg().outbox_published.Add({{"kind", std::string(kind)}});
  }).Increment(static_cast<double>(n));
}

void webhook_delivery(std::string_view outcome) {
  add(reg().webhooks, {{"outcome", std::string(outcome)}});
}

}  // namespace sy::metrics
