#include "config/settings_table.hpp"

#include <cctype>

#include "config/detail/text.hpp"
#include "config/duration.hpp"

namespace sy::config {
namespace {

constexpr int64_t k_second = 1'000;
constexpr int64_t k_minute = 60 * k_second;
constexpr int64_t k_hour = 3'600'000;
constexpr int64_t k_day = 24 * k_hour;

using vt = value_type;
using sd = setting_def;

std::vector<setting_def> build_settings_table() {
  return {
      // --- server
      sd{.name = "listen",
         .flag = "--listen",
         .type = vt::text,
         .description = "Address of the HTTP API, HOST:PORT (port 0 picks a free port). A "
                        "non-loopback host requires api_keys.",
         .field = &settings::listen},
      sd{.name = "internal_listen",
         .flag = "--internal-listen",
         .type = vt::text,
         .description = "Address of the worker protocol (docs/workers.md), HOST:PORT; never the "
                        "public listener. Empty: none. A non-loopback host requires api_keys.",
         .field = &settings::internal_listen},
      sd{.name = "data_dir",
         .flag = "--data-dir",
         .type = vt::text,
         .description = "Directory holding the LMDB environment and the private nats-server's "
                        "store.",
         .field = &settings::data_dir},
      sd{.name = "http_threads",
         .flag = "--http-threads",
         .type = vt::integer,
         .min = 1,
         .max = 64,
         .description = "Threads running the HTTP server.",
         .field = &settings::http_threads},
      sd{.name = "max_body_bytes",
         .flag = "--max-body-bytes",
         .type = vt::integer,
         .min = 1024,
         .max = int64_t{1} << 32,
         .description = "Largest accepted request body, in bytes; a larger body is answered 413.",
         .field = &settings::max_body_bytes},
      sd{.name = "http_read_timeout_ms",
         .flag = "--http-read-timeout-ms",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_hour,
         .description = "Time allowed to read one request (headers and body) before the "
                        "connection is closed, in ms.",
         .field = &settings::http_read_timeout_ms},
      sd{.name = "shutdown_timeout_ms",
         .flag = "--shutdown-timeout-ms",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_hour,
         .description = "On SIGTERM/SIGINT, how long in-flight requests may finish before their "
                        "tasks go back to the queue, in ms.",
         .field = &settings::shutdown_timeout_ms},
      sd{.name = "log_level",
         .flag = "--log-level",
         .type = vt::text,
         .description = "One of trace, debug, info, warn, error.",
         .field = &settings::log_level},
      sd{.name = "otlp_endpoint",
         .flag = "--otlp-endpoint",
         .type = vt::text,
         .description = "Base URL of an OpenTelemetry collector's OTLP/HTTP receiver, "
                        "http://host:port[/path]; spans are POSTed as JSON to <base>/v1/traces. "
                        "Empty: spans are not exported.",
         .field = &settings::otlp_endpoint},
      // --- NATS
      sd{.name = "nats_url",
         .flag = "--nats",
         .type = vt::text,
         .description = "NATS server URL(s) (`nats://` or `tls://`), comma-separated: all are "
                        "used, to connect and to reconnect. Empty: start and supervise a private "
                        "`nats-server -js` on loopback, store under data_dir.",
         .field = &settings::nats_url},
      sd{.name = "nats_server_bin",
         .flag = "--nats-server-bin",
         .type = vt::text,
         .description = "nats-server executable for the private server (searched in PATH).",
         .field = &settings::nats_server_bin},
      sd{.name = "stream_prefix",
         .flag = "--stream-prefix",
         .type = vt::text,
         .description = "Prefix of JetStream stream names: <prefix>_TASKS, <prefix>_DLQ, ...",
         .field = &settings::stream_prefix},
      sd{.name = "subject_prefix",
         .flag = "--subject-prefix",
         .type = vt::text,
         .description = "Prefix of NATS subjects: <prefix>.tasks.<model>, ...",
         .field = &settings::subject_prefix},
      sd{.name = "ack_wait_ms",
         .flag = "--ack-wait-ms",
         .type = vt::duration_ms,
         .min = k_second,
         .max = k_hour,
         .description = "JetStream AckWait: the transport lease of a delivered task message, "
                        "in ms.",
         .field = &settings::ack_wait_ms},
      sd{.name = "registration_lease_ms",
         .flag = "--registration-lease-ms",
         .type = vt::duration_ms,
         .min = k_second,
         .max = k_hour,
         .description = "Lease of this engine's registration on its streams (JetStream key-value "
                        "bucket <prefix>_REGISTRY), renewed every third of it. Another store's "
                        "engine on the same streams refuses to start while it is renewed and "
                        "takes the streams over once it lapses, in ms.",
         .field = &settings::registration_lease_ms},
      // --- gateways
      sd{.name = "gateway",
         .flag = "--gateway",
         .type = vt::gateway,
         .description = "The one global OpenAI-compatible gateway, http(s)://host[:port][/prefix], "
                        "used for every model. Exclusive with model_gateways."},
      sd{.name = "model_gateways",
         .flag = "",
         .type = vt::gateway_map,
         .description = "Map model name -> gateway (URL or gateway map), YAML only. Exclusive "
                        "with gateway."},
      sd{.name = "secrets_dir",
         .flag = "--secrets-dir",
         .type = vt::text,
         .description = "Directory of secret files, one secret per file (e.g. a mounted "
                        "Kubernetes secret): a gateway's api_key_name and header secrets name "
                        "files here. Empty: none.",
         .field = &settings::secrets_dir},
      // --- execution
      sd{.name = "per_model_concurrency",
         .flag = "--per-model-concurrency",
         .type = vt::integer,
         .min = 1,
         .max = 10'000,
         .description = "Most requests in flight to one model at a time (at most "
                        "global_concurrency).",
         .field = &settings::per_model_concurrency},
      sd{.name = "exec_threads",
         .flag = "--exec-threads",
         .type = vt::integer,
         .min = 1,
         .max = 64,
         .description = "Threads that run attempts, batch requests and the gateway clients (all "
                        "asynchronous). One avoids cross-thread hand-offs, which on a 2-core "
                        "machine cost more than a second thread brings.",
         .field = &settings::exec_threads},
      sd{.name = "global_concurrency",
         .flag = "--global-concurrency",
         .type = vt::integer,
         .min = 1,
         .max = 10'000,
         .description = "Most requests in flight across all models together.",
         .field = &settings::global_concurrency},
      sd{.name = "max_models",
         .flag = "--max-models",
         .type = vt::integer,
         .min = 1,
         .max = 100'000,
         .description = "Most distinct models with a queue (each has a JetStream consumer and a "
                        "dispatcher); a job for one more model is answered 400 too_many_models.",
         .field = &settings::max_models},
      sd{.name = "default_max_attempts",
         .flag = "--default-max-attempts",
         .type = vt::integer,
         .min = 1,
         .max = 100,
         .description = "Attempts per task when the job does not set max_attempts.",
         .field = &settings::default_max_attempts},
      sd{.name = "sync_tasks_max",
         .flag = "--sync-tasks-max",
         .type = vt::integer,
         .min = 1,
         .max = 100'000,
         .description = "Most tasks of a list given inline that is committed at once and "
                        "answered 201 with its tasks queryable; a longer one is staged and "
                        "ingested (202), and an append or an open job's first tasks hold at "
                        "most this many.",
         .field = &settings::sync_tasks_max},
      sd{.name = "max_tasks_per_job",
         .flag = "--max-tasks-per-job",
         .type = vt::integer,
         .min = 1,
         .max = 1'000'000'000,
         .description = "Most tasks one task-list job may hold; more is answered 400 "
                        "too_many_tasks.",
         .field = &settings::max_tasks_per_job},
      sd{.name = "task_window",
         .flag = "--task-window",
         .type = vt::integer,
         .min = 1,
         .max = 10'000,
         .description = "Most tasks of one task-list job published to its model's queue and "
                        "unfinished at once, when the job sets no max_inflight: a large list "
                        "never floods the queue, and a small job behind it waits for at most "
                        "this many of its tasks.",
         .field = &settings::task_window},
      sd{.name = "inline_result_bytes",
         .flag = "--inline-result-bytes",
         .type = vt::integer,
         .min = 0,
         .max = 64 << 20,
         .description = "Largest result body of a task-list task kept in its LMDB record; a "
                        "larger one goes to the job's result segment file under "
                        "<data_dir>/task-results.",
         .field = &settings::inline_result_bytes},
      sd{.name = "lease_ttl_ms",
         .flag = "--lease-ttl-ms",
         .type = vt::duration_ms,
         .min = k_second,
         .max = k_day,
         .description = "How long an attempt's lease lasts unless extended; long requests "
                        "extend it, in ms.",
         .field = &settings::lease_ttl_ms},
      sd{.name = "requeue_initial_backoff_ms",
         .flag = "--requeue-initial-backoff-ms",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_day,
         .description = "Delay before a failed attempt's task is retried; doubles per attempt, "
                        "in ms.",
         .field = &settings::requeue_initial_backoff_ms},
      sd{.name = "requeue_max_backoff_ms",
         .flag = "--requeue-max-backoff-ms",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_day,
         .description = "Upper bound of the requeue delay, in ms.",
         .field = &settings::requeue_max_backoff_ms},
      sd{.name = "reaper_interval_ms",
         .flag = "--reaper-interval-ms",
         .type = vt::duration_ms,
         .min = 10,
         .max = k_hour,
         .description = "How often the lease reaper looks for expired leases, in ms.",
         .field = &settings::reaper_interval_ms},
      sd{.name = "reconcile_after_ms",
         .flag = "--reconcile-after-ms",
         .type = vt::duration_ms,
         .min = k_second,
         .max = 7 * k_day,
         .description = "Re-publish a task queued this long (in ms) when its model's JetStream "
                        "consumer holds no message (the message was lost).",
         .field = &settings::reconcile_after_ms},
      sd{.name = "signing_key_rotation_ms",
         .flag = "--signing-key-rotation-ms",
         .type = vt::duration_ms,
         .min = k_minute,
         .max = 365 * k_day,
         .description = "How often the credential minter makes a new signing key for capability "
                        "tokens, in ms (published a minute before it signs; docs/workers.md).",
         .field = &settings::signing_key_rotation_ms},
      sd{.name = "signing_key_file",
         .flag = "--signing-key-file",
         .description = "PEM file (PKCS#8, P-256) of the one key that signs capability tokens, "
                        "managed by the operator: nothing rotates (replace the file and "
                        "restart). Empty: keys are made under <data_dir>/signing-keys and rotate.",
         .field = &settings::signing_key_file},
      sd{.name = "runtimes",
         .flag = "",
         .type = vt::runtime_map,
         .description = "Map runtime name -> {lease_ttl_ms, max_attempts}: queues of tasks done "
                        "by external workers (docs/workers.md), YAML only."},
      // --- credential minting
      sd{.name = "tenant_storage_prefixes",
         .flag = "",
         .type = vt::prefix_map,
         .description = "Map tenant -> list of s3://bucket/prefix/ directories its jobs may "
                        "grant to workers; a tenant not listed may grant nothing. YAML only."},
      sd{.name = "sts_endpoint",
         .flag = "--sts-endpoint",
         .description = "http(s)://host[:port] of the STS the credential minter calls "
                        "(AssumeRole); empty: POST /v1/task/credentials answers "
                        "credentials_unavailable.",
         .field = &settings::sts_endpoint},
      sd{.name = "sts_region",
         .flag = "--sts-region",
         .description = "The region SigV4 signs the STS call for, and told to workers.",
         .field = &settings::sts_region},
      sd{.name = "sts_role_arn",
         .flag = "--sts-role-arn",
         .description = "The role the minter assumes for each task, narrowed by a session "
                        "policy of the task's grants.",
         .field = &settings::sts_role_arn},
      sd{.name = "sts_access_key_id",
         .flag = "--sts-access-key-id",
         .description = "The minter's own access key id for STS.",
         .field = &settings::sts_access_key_id},
      sd{.name = "sts_secret_access_key_file",
         .flag = "--sts-secret-access-key-file",
         .description = "File holding the minter's secret access key (read at start, never "
                        "logged).",
         .field = &settings::sts_secret_access_key_file},
      sd{.name = "storage_endpoint",
         .flag = "--storage-endpoint",
         .description = "The S3 endpoint URL told to workers with their credentials; empty: "
                        "sts_endpoint.",
         .field = &settings::storage_endpoint},
      sd{.name = "credentials_ttl_ms",
         .flag = "--credentials-ttl-ms",
         .type = vt::duration_ms,
         .min = 15 * k_minute,
         .max = 12 * k_hour,
         .description = "Lifetime of minted storage credentials, in ms (STS's own bounds: 15m "
                        ".. 12h).",
         .field = &settings::credentials_ttl_ms},
      // --- clients
      sd{.name = "max_wait_ms",
         .flag = "--max-wait-ms",
         .type = vt::duration_ms,
         .min = 0,
         .max = k_hour,
         .description = "Cap of `Prefer: wait=N` on POST /v1/jobs, in ms; a longer wait is cut "
                        "to this.",
         .field = &settings::max_wait_ms},
      sd{.name = "sync_timeout_ms",
         .flag = "--sync-timeout-ms",
         .type = vt::duration_ms,
         .min = k_second,
         .max = k_day,
         .description = "How long POST /v1/chat/completions, /v1/embeddings and /v1/completions "
                        "wait for their job, in ms; then 504 with the job id to poll.",
         .field = &settings::sync_timeout_ms},
      sd{.name = "events_keepalive_ms",
         .flag = "--events-keepalive-ms",
         .type = vt::duration_ms,
         .min = 100,
         .max = 30 * k_second,
         .description = "After this long without an event, a job's event stream sends the "
                        "comment `: keep-alive`, in ms (for proxies that close idle "
                        "connections; the CLI's watch gives up after 60 s without a byte).",
         .field = &settings::events_keepalive_ms},
      // --- webhooks
      sd{.name = "webhook_url",
         .flag = "--webhook-url",
         .type = vt::text,
         .description = "Default webhook for jobs that name none (http:// or https://). Empty: "
                        "none.",
         .field = &settings::webhook_url},
      sd{.name = "webhook_secret_file",
         .flag = "--webhook-secret-file",
         .type = vt::text,
         .description = "File holding the secret that signs webhooks: `whsec_<base64>` (the "
                        "key is the decoded bytes) or any other text (the key is its bytes). "
                        "Empty: <data_dir>/webhook_secret, created with a random whsec_ secret "
                        "on first start.",
         .field = &settings::webhook_secret_file},
      sd{.name = "webhook_legacy_signature",
         .flag = "--webhook-legacy-signature",
         .type = vt::boolean,
         .min = 0,
         .max = 1,
         .description = "Also send the deprecated X-Switchyard-Signature and "
                        "X-Switchyard-Delivery headers beside the Standard Webhooks ones "
                        "(webhook-id, webhook-timestamp, webhook-signature).",
         .field = &settings::webhook_legacy_signature},
      sd{.name = "webhook_max_attempts",
         .flag = "--webhook-max-attempts",
         .type = vt::integer,
         .min = 1,
         .max = 100,
         .description = "Delivery attempts per webhook before it is dropped (and counted).",
         .field = &settings::webhook_max_attempts},
      sd{.name = "webhook_timeout_ms",
         .flag = "--webhook-timeout-ms",
         .type = vt::duration_ms,
         .min = 1,
         .max = 10 * k_minute,
         .description = "Time allowed for one webhook delivery (connect, send, answer), in ms.",
         .field = &settings::webhook_timeout_ms},
      sd{.name = "webhook_initial_backoff_ms",
         .flag = "--webhook-initial-backoff-ms",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_day,
         .description = "Delay before the second delivery attempt (exponential with jitter), "
                        "in ms.",
         .field = &settings::webhook_initial_backoff_ms},
      sd{.name = "webhook_max_backoff_ms",
         .flag = "--webhook-max-backoff-ms",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_day,
         .description = "Upper bound of the delay between delivery attempts, in ms.",
         .field = &settings::webhook_max_backoff_ms},
      sd{.name = "webhook_inline_result_bytes",
         .flag = "--webhook-inline-result-bytes",
         .type = vt::integer,
         .min = 0,
         .max = 64 << 20,
         .description = "Largest gateway answer sent inline in a webhook or event; a larger one "
                        "is replaced by `result_url`.",
         .field = &settings::webhook_inline_result_bytes},
      sd{.name = "webhook_allow_networks",
         .flag = "--webhook-allow-networks",
         .type = vt::text,
         .description = "Comma-separated CIDRs a webhook target must resolve into. Empty: "
                        "every network that is not denied.",
         .field = &settings::webhook_allow_networks},
      sd{.name = "webhook_deny_networks",
         .flag = "--webhook-deny-networks",
         .type = vt::text,
         .description = "Comma-separated CIDRs a webhook target must never resolve into "
                        "(link-local and cloud-metadata addresses by default).",
         .field = &settings::webhook_deny_networks},
      sd{.name = "webhook_allow_loopback",
         .flag = "--webhook-allow-loopback",
         .type = vt::boolean,
         .min = 0,
         .max = 1,
         .description = "Allow webhook targets on loopback (127.0.0.0/8, ::1).",
         .field = &settings::webhook_allow_loopback},
      // --- http tasks
      sd{.name = "http_task_allow_networks",
         .flag = "--http-task-allow-networks",
         .type = vt::text,
         .description = "Comma-separated CIDRs the URL of an http task must resolve into. "
                        "Empty: every network that is not denied.",
         .field = &settings::http_task_allow_networks},
      sd{.name = "http_task_deny_networks",
         .flag = "--http-task-deny-networks",
         .type = vt::text,
         .description = "Comma-separated CIDRs the URL of an http task must never resolve into "
                        "(link-local and cloud-metadata addresses by default).",
         .field = &settings::http_task_deny_networks},
      sd{.name = "http_task_allow_loopback",
         .flag = "--http-task-allow-loopback",
         .type = vt::boolean,
         .min = 0,
         .max = 1,
         .description = "Allow http tasks to loopback addresses (127.0.0.0/8, ::1).",
         .field = &settings::http_task_allow_loopback},
      sd{.name = "http_task_timeout_ms",
         .flag = "--http-task-timeout-ms",
         .type = vt::duration_ms,
         .min = 100,
         .max = k_day,
         .description = "Bounds one attempt of an http task: resolve, connect, TLS, send and "
                        "the whole answer, in ms.",
         .field = &settings::http_task_timeout_ms},
      sd{.name = "http_task_host_concurrency",
         .flag = "--http-task-host-concurrency",
         .type = vt::integer,
         .min = 1,
         .max = 10'000,
         .description = "Most requests of http tasks in flight to one host at once (each host "
                        "has a queue of its own).",
         .field = &settings::http_task_host_concurrency},
      sd{.name = "http_task_max_response_bytes",
         .flag = "--http-task-max-response-bytes",
         .type = vt::integer,
         .min = 1024,
         .max = 64 << 20,
         .description = "Largest answer body an http task keeps; a longer one fails the "
                        "attempt for good.",
         .field = &settings::http_task_max_response_bytes},
      // --- files and batches
      sd{.name = "files_max_bytes",
         .flag = "--files-max-bytes",
         .type = vt::integer,
         .min = 1024,
         .max = int64_t{1} << 40,
         .description = "Largest file POST /v1/files accepts, in bytes; larger uploads get 413.",
         .field = &settings::files_max_bytes},
      sd{.name = "max_task_file_bytes",
         .flag = "--max-task-file-bytes",
         .type = vt::integer,
         .min = 1024,
         .max = int64_t{1} << 40,
         .description = "Largest file of purpose 'tasks' (a staged task list) POST /v1/files "
                        "accepts, in bytes, in place of files_max_bytes; larger uploads get 413.",
         .field = &settings::max_task_file_bytes},
      sd{.name = "batch_max_lines",
         .flag = "--batch-max-lines",
         .type = vt::integer,
         .min = 1,
         .max = 10'000'000,
         .description = "Most requests one batch input file may hold; more fail the batch.",
         .field = &settings::batch_max_lines},
      sd{.name = "batch_completion_windows",
         .flag = "--batch-completion-windows",
         .type = vt::text,
         .description = "Comma-separated completion_window values POST /v1/batches accepts "
                        "(durations such as 24h, 1h, 90s). OpenAI accepts only 24h.",
         .field = &settings::batch_completion_windows},
      // --- retention
      sd{.name = "retention_completed_ms",
         .flag = "--retention-completed-ms",
         .type = vt::duration_ms,
         .min = k_second,
         .max = 3650 * k_day,
         .description = "How long a completed job (and its idempotency key) is kept, in ms.",
         .field = &settings::retention_completed_ms},
      sd{.name = "retention_failed_ms",
         .flag = "--retention-failed-ms",
         .type = vt::duration_ms,
         .min = k_second,
         .max = 3650 * k_day,
         .description = "How long a failed, expired or cancelled job is kept, in ms.",
         .field = &settings::retention_failed_ms},
      sd{.name = "retain_inputs",
         .flag = "--retain-inputs",
         .type = vt::boolean,
         .min = 0,
         .max = 1,
         .description = "Keep request bodies after a job is terminal; false drops them at once.",
         .field = &settings::retain_inputs},
      sd{.name = "nats_events",
         .flag = "--nats-events",
         .type = vt::text,
         .description = "Which job state changes are published on NATS (sy.jobs.<id>.<state>, "
                        "stream SY_EVENTS): all, terminal (the last one only) or none. Server-sent "
                        "events and webhooks see every change whatever this says.",
         .field = &settings::nats_events},
      sd{.name = "retention_batch",
         .flag = "--retention-batch",
         .type = vt::integer,
         .min = 1,
         .max = 100'000,
         .description = "Most jobs the lease reaper deletes per tick (small batches never stall "
                        "the writer).",
         .field = &settings::retention_batch},
      // --- storage
      sd{.name = "lmdb_initial_map_bytes",
         .flag = "--lmdb-initial-map-bytes",
         .type = vt::integer,
         .min = int64_t{1} << 20,
         .max = int64_t{1} << 40,
         .description = "Initial LMDB map size in bytes; the map grows when full.",
         .field = &settings::lmdb_initial_map_bytes},
      sd{.name = "group_commit_max_ops",
         .flag = "--group-commit-max-ops",
         .type = vt::integer,
         .min = 1,
         .max = 1'000'000,
         .description = "Most write requests the storage writer commits in one transaction.",
         .field = &settings::group_commit_max_ops},
      // --- tenants
      sd{.name = "api_keys",
         .flag = "",
         .type = vt::api_keys,
         .description = "List of {sha256: <64 hex>, tenant: name} or {key_file: path, tenant: "
                        "name}, YAML only; `role: worker`, `admin` or `metrics` (no tenant) makes "
                        "a worker, admin or metrics key. Empty: one `default` tenant, no auth, "
                        "loopback only."},
  };
}

using gd = gateway_field_def;

std::vector<gateway_field_def> build_gateway_table() {
  return {
      gd{.name = "url",
         .flag = "",
         .type = vt::text,
         .description = "http(s)://host[:port][/prefix]; the OpenAI path (/v1/chat/completions) "
                        "is appended to the prefix. https verifies the server's certificate "
                        "against the system's CAs and its name against the host.",
         .field = &gateway_settings::url},
      gd{.name = "request_timeout_ms",
         .flag = "",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_hour,
         .description = "Time allowed for one HTTP request to the gateway, in ms.",
         .field = &gateway_settings::request_timeout_ms},
      gd{.name = "max_retries",
         .flag = "",
         .type = vt::integer,
         .min = 0,
         .max = 100,
         .description = "Retries within one attempt on connection errors, timeouts, 429, 5xx.",
         .field = &gateway_settings::max_retries},
      gd{.name = "initial_backoff_ms",
         .flag = "",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_hour,
         .description = "First retry delay (exponential with jitter), in ms.",
         .field = &gateway_settings::initial_backoff_ms},
      gd{.name = "max_backoff_ms",
         .flag = "",
         .type = vt::duration_ms,
         .min = 1,
         .max = k_hour,
         .description = "Upper bound of the retry delay, in ms.",
         .field = &gateway_settings::max_backoff_ms},
      gd{.name = "api_key_file",
         .flag = "",
         .type = vt::text,
         .description = "File whose trimmed content is sent as `Authorization: Bearer`. "
                        "Empty: no header.",
         .field = &gateway_settings::api_key_file},
      gd{.name = "api_key_name",
         .flag = "",
         .type = vt::text,
         .description = "Name of a file in secrets_dir whose trimmed content is sent as "
                        "`Authorization: Bearer` (instead of api_key_file). Empty: none.",
         .field = &gateway_settings::api_key_name},
      gd{.name = "max_connections",
         .flag = "",
         .type = vt::integer,
         .min = 1,
         .max = 10'000,
         .description = "Keep-alive connection pool size for this gateway.",
         .field = &gateway_settings::max_connections},
      gd{.name = "tls_ca_cert_file",
         .flag = "",
         .type = vt::text,
         .description = "https only: PEM file of the CA certificates to trust instead of the "
                        "system's (a private CA). Empty: the system's.",
         .field = &gateway_settings::tls_ca_cert_file},
      gd{.name = "tls_client_cert_file",
         .flag = "",
         .type = vt::text,
         .description = "https only: PEM client certificate for mutual TLS (with "
                        "tls_client_key_file). Empty: none.",
         .field = &gateway_settings::tls_client_cert_file},
      gd{.name = "tls_client_key_file",
         .flag = "",
         .type = vt::text,
         .description = "https only: PEM private key of tls_client_cert_file.",
         .field = &gateway_settings::tls_client_key_file},
      gd{.name = "tls_insecure_skip_verify",
         .flag = "",
         .type = vt::boolean,
         .description = "https only: accept any certificate and name (testing only; logged as "
                        "a warning at start).",
         .field = &gateway_settings::tls_insecure_skip_verify},
      gd{.name = "headers",
         .flag = "",
         .type = vt::headers,
         .description = "Map header name -> value, or -> {secret: NAME} (a file in "
                        "secrets_dir), sent with every request (e.g. an organisation or project "
                        "header). YAML only."},
  };
}

template <class Def>
const Def* find_in(const std::vector<Def>& table, std::string_view key) {
  for (const auto& def : table) {
    if (def.name == key) return &def;
  }
  // The issue spells durations without the unit (request_timeout: 30s); accept that spelling.
  for (const auto& def : table) {
    if (def.type == vt::duration_ms && def.name.size() == key.size() + 3 &&
        def.name.substr(0, key.size()) == key) {
      return &def;
    }
  }
  return nullptr;
}

sy::error type_error(std::string_view where, std::string_view name, std::string_view what,
                     std::string_view text) {
  return make_error(
      errc::invalid_config,
      std::string(where) + ": expected " + std::string(what) + ", got " + detail::quoted(text),
      std::string(name));
}

}  // namespace

std::string_view type_name(value_type type) {
  switch (type) {
    case vt::text:
      return "TEXT";
    case vt::integer:
      return "INT";
    case vt::duration_ms:
      return "DURATION";
    case vt::gateway:
      return "URL";
    case vt::gateway_map:
    case vt::runtime_map:
    case vt::prefix_map:
      return "MAP";
    case vt::api_keys:
      return "LIST";
    case vt::headers:
      return "MAP";
    case vt::boolean:
      return "BOOL";
  }
  return "TEXT";
}

const std::vector<setting_def>& settings_table() {
  static const std::vector<setting_def> table = build_settings_table();
  return table;
}

const std::vector<gateway_field_def>& gateway_table() {
  static const std::vector<gateway_field_def> table = build_gateway_table();
  return table;
}

const setting_def* find_setting(std::string_view key) { return find_in(settings_table(), key); }

const gateway_field_def* find_gateway_field(std::string_view key) {
  return find_in(gateway_table(), key);
}

std::string env_name(std::string_view name) {
  std::string out = "SWITCHYARD_";
  for (char c : name) {
    out.push_back(c == '.' || c == '-'
                      ? '_'
                      : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

template <class S>
status assign(S& target, const field_def<S>& def, std::string_view text, std::string_view where) {
  std::string name(def.name);
  if (auto* text_member = std::get_if<std::string S::*>(&def.field)) {
    target.*(*text_member) = std::string(detail::trim(text));
    return ok;
  }
  if (auto* bool_member = std::get_if<bool S::*>(&def.field)) {
    auto value = detail::trim(text);
    for (std::string_view yes : {"true", "yes", "on", "1"})
      if (value == yes) return (target.*(*bool_member) = true, ok);
    for (std::string_view no : {"false", "no", "off", "0"})
      if (value == no) return (target.*(*bool_member) = false, ok);
    return type_error(where, name, "true or false", text);
  }
  int64_t number = 0;
  if (def.type == vt::duration_ms) {
    auto parsed = parse_duration_ms(text);
    if (!parsed) {
      return make_error(errc::invalid_config, std::string(where) + ": " + parsed.error().message,
                        name);
    }
    number = *parsed;
  } else if (!detail::parse_int64(detail::trim(text), number)) {
    return type_error(where, name, "an integer", text);
  }
  if (auto* int_member = std::get_if<int S::*>(&def.field)) {
    if (number < INT32_MIN || number > INT32_MAX) {
      return type_error(where, name, "a 32-bit integer", text);
    }
    target.*(*int_member) = static_cast<int>(number);
    return ok;
  }
  if (auto* long_member = std::get_if<int64_t S::*>(&def.field)) {
    target.*(*long_member) = number;
    return ok;
  }
  return make_error(errc::invalid_config, std::string(where) + ": cannot be set from text", name);
}

template <class S>
std::optional<int64_t> number_value(const S& source, const field_def<S>& def) {
  if (auto* int_member = std::get_if<int S::*>(&def.field)) return source.*(*int_member);
  if (auto* long_member = std::get_if<int64_t S::*>(&def.field)) return source.*(*long_member);
  return std::nullopt;
}

template <class S>
std::string format_value(const S& source, const field_def<S>& def) {
  if (auto* text_member = std::get_if<std::string S::*>(&def.field)) {
    return source.*(*text_member);
  }
  if (auto* bool_member = std::get_if<bool S::*>(&def.field))
    return source.*(*bool_member) ? "true" : "false";
  auto number = number_value(source, def);
  if (!number) return {};
  return def.type == vt::duration_ms ? format_duration_ms(*number) : std::to_string(*number);
}

template status assign(settings&, const setting_def&, std::string_view, std::string_view);
template status assign(gateway_settings&, const gateway_field_def&, std::string_view,
                       std::string_view);
template std::string format_value(const settings&, const setting_def&);
template std::string format_value(const gateway_settings&, const gateway_field_def&);
template std::optional<int64_t> number_value(const settings&, const setting_def&);
template std::optional<int64_t> number_value(const gateway_settings&, const gateway_field_def&);

}  // namespace sy::config
