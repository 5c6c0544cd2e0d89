#pragma once
/// The validated, immutable settings of one `switchyard serve` process. Each setting is declared
/// once in config/settings_table.cpp (name, type, default, bounds, description); this struct is
/// the result of file → environment → flags, validated once. Units are in the names.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sy::config {

/// An extra header sent with every request to a gateway: a fixed value, or one read from a file
/// in `secrets_dir` (then `value` is loaded at validation time and never logged).
struct gateway_header {
  std::string name;
  std::string value;
  std::string secret_name;  ///< non-empty: `value` comes from <secrets_dir>/<secret_name>
  bool operator==(const gateway_header&) const = default;
};

/// One OpenAI-compatible gateway and how we talk to it. Each entry is complete on its own: a
/// per-model entry inherits nothing from another.
struct gateway_settings {
  std::string url;  ///< http://host[:port][/prefix] or https://…; /v1 is NOT appended
  int64_t request_timeout_ms = 60'000;
  int max_retries = 2;  ///< retries within one attempt (connection errors, timeouts, 429, 5xx)
  int64_t initial_backoff_ms = 200;
  int64_t max_backoff_ms = 10'000;
  std::string api_key_file;  ///< optional; its trimmed content is sent as `Authorization: Bearer`
  std::string api_key_name;  ///< optional; a file in secrets_dir holding the key (instead)
  std::string api_key;  ///< loaded from api_key_file / api_key_name at validation (never logged)
  int max_connections = 64;  ///< keep-alive pool size
  // TLS (https:// URLs only). The server's certificate is verified against the system's CAs
  // (or tls_ca_cert_file), its name against the URL's host.
  std::string tls_ca_cert_file;           ///< PEM CA bundle to trust instead of the system's
  std::string tls_client_cert_file;       ///< PEM client certificate, for mutual TLS (with the key)
  std::string tls_client_key_file;        ///< PEM private key of tls_client_cert_file
  bool tls_insecure_skip_verify = false;  ///< no certificate or name check (logged loudly)
  std::vector<gateway_header> headers;    ///< sent with every request, in this order (YAML only)

  /// Entries equal in every field share one client (one keep-alive pool).
  bool operator==(const gateway_settings&) const = default;
};

/// A configured API key: stored only as the hex SHA-256 of the key, mapped to a tenant.
struct api_key_entry {
  std::string sha256_hex;
  std::string tenant;  ///< a client key's tenant; empty for a worker key
  /// "client" (the public API, as `tenant`), "worker" (the worker protocol on the internal
  /// listener, any runtime; docs/workers.md), "admin" (switchyard keys rotate) or "metrics"
  /// (GET /metrics on either listener; docs/operations.md).
  std::string role = "client";
};

/// A runtime: a named queue of tasks done by external workers (docs/workers.md).
struct runtime_settings {
  int64_t lease_ttl_ms = 30'000;  ///< a leased task returns to the queue this long after the
                                  ///< lease or the last heartbeat
  int max_attempts = 3;           ///< attempts of a task when the job names none
  bool operator==(const runtime_settings&) const = default;
};

struct settings {
  // --- server
  std::string listen = "127.0.0.1:8080";  ///< HOST:PORT; port 0 picks a free port
  /// The worker protocol's listener (never the public one); empty: none
  std::string internal_listen = "127.0.0.1:8081";
  std::string data_dir = "./data";
  int http_threads = 2;
  int64_t max_body_bytes = 1 << 20;
  int64_t http_read_timeout_ms = 30'000;
  int64_t shutdown_timeout_ms = 10'000;
  std::string log_level = "info";
  /// Base URL of an OpenTelemetry collector's OTLP/HTTP receiver (http://host:4318); spans go
  /// to <base>/v1/traces. Empty: spans are not exported (trace context is still propagated).
  std::string otlp_endpoint;

  // --- NATS
  std::string nats_url;  ///< empty: start and supervise a private nats-server
  std::string nats_server_bin = "nats-server";
  std::string stream_prefix = "SY";        ///< streams are <prefix>_TASKS, ...
  std::string subject_prefix = "sy";       ///< subjects are <prefix>.tasks.<model>, ...
  int64_t ack_wait_ms = 30'000;            ///< JetStream transport lease
  int64_t registration_lease_ms = 10'000;  ///< the store's claim on the streams; renewed every 1/3

  // --- gateways: exactly one of `gateway` (global) or `model_gateways` (model → gateway)
  std::optional<gateway_settings> gateway;
  std::map<std::string, gateway_settings> model_gateways;
  std::string
      secrets_dir;  ///< directory of secret files (api_key_name, header secrets); empty: none

  // --- execution
  int per_model_concurrency = 10;
  int global_concurrency = 100;
  int max_models = 1000;  ///< distinct models with a queue (global gateway: clients choose them)
  int exec_threads = 1;   ///< threads running attempts, batch requests and gateway clients
  int default_max_attempts = 3;
  int64_t sync_tasks_max = 1'000;          ///< inline task lists up to this size: 201 at once
  int64_t max_tasks_per_job = 10'000'000;  ///< most tasks of one task-list job
  int64_t task_window = 256;               ///< a list's tasks published and unfinished at once
  int64_t inline_result_bytes = 2048;      ///< larger task-list results go to a segment file
  int64_t lease_ttl_ms = 30'000;
  int64_t requeue_initial_backoff_ms = 1'000;
  int64_t requeue_max_backoff_ms = 60'000;
  int64_t reaper_interval_ms = 1'000;
  int64_t reconcile_after_ms = 60'000;  ///< re-publish queued tasks idle longer than this
  std::map<std::string, runtime_settings> runtimes;           ///< worker queues by name (YAML only)
  int64_t signing_key_rotation_ms = int64_t{24} * 3'600'000;  ///< capability tokens' keys
  std::string signing_key_file;  ///< an operator's P-256 PEM key instead; empty: keys made here

  // --- credential minting for workers (docs/workers.md, "Storage credentials")
  /// tenant → the s3:// prefixes its jobs may grant (YAML only); a tenant not listed may grant
  /// nothing
  std::map<std::string, std::vector<std::string>> tenant_storage_prefixes;
  std::string sts_endpoint;  ///< http(s)://host[:port] of STS; empty: no credential minting
  std::string sts_region = "us-east-1";
  std::string sts_role_arn;                ///< the role AssumeRole assumes, scoped per task
  std::string sts_access_key_id;           ///< the minter's own key id
  std::string sts_secret_access_key_file;  ///< the file holding its secret key
  std::string sts_secret_access_key;       ///< loaded from the file at validation (never logged)
  std::string storage_endpoint;            ///< the S3 endpoint told to workers; empty: sts_endpoint
  int64_t credentials_ttl_ms = 900'000;    ///< lifetime of minted credentials

  // --- clients: waiting and live events
  int64_t max_wait_ms = 60'000;          ///< cap of `Prefer: wait=N` on POST /v1/jobs
  int64_t sync_timeout_ms = 600'000;     ///< how long POST /v1/chat/completions & co. wait
  int64_t events_keepalive_ms = 15'000;  ///< a silent event stream sends a comment this often

  // --- webhooks
  std::string webhook_url;          ///< default target for jobs that name none; empty: none
  std::string webhook_secret_file;  ///< HMAC key file; empty: <data_dir>/webhook_secret
  std::string webhook_secret;       ///< loaded from webhook_secret_file (never logged)
  /// Also send the deprecated X-Switchyard-Signature and X-Switchyard-Delivery headers.
  bool webhook_legacy_signature = true;
  int webhook_max_attempts = 5;
  int64_t webhook_timeout_ms = 10'000;
  int64_t webhook_initial_backoff_ms = 1'000;
  int64_t webhook_max_backoff_ms = 300'000;
  int64_t webhook_inline_result_bytes = 65'536;
  std::string webhook_allow_networks;  ///< comma-separated CIDRs; empty: every network not denied
  std::string webhook_deny_networks =
      "0.0.0.0/8,169.254.0.0/16,fe80::/10,100.100.100.200/32,fd00:ec2::254/128";
  bool webhook_allow_loopback = false;

  // --- http tasks (task lists with endpoint "http": docs/task-lists.md)
  std::string http_task_allow_networks;  ///< comma-separated CIDRs; empty: every network not denied
  std::string http_task_deny_networks =
      "0.0.0.0/8,169.254.0.0/16,fe80::/10,100.100.100.200/32,fd00:ec2::254/128";
  bool http_task_allow_loopback = false;
  int64_t http_task_timeout_ms = 30'000;
  int http_task_host_concurrency = 8;
  int64_t http_task_max_response_bytes = int64_t{1} << 20;

  // --- files and batches (OpenAI Files + Batch API)
  int64_t files_max_bytes = int64_t{200} << 20;    ///< largest upload accepted by POST /v1/files
  int64_t max_task_file_bytes = int64_t{2} << 30;  ///< the same for purpose "tasks" (task lists)
  int64_t batch_max_lines = 50'000;                ///< most requests in one batch input file
  std::string batch_completion_windows = "24h";    ///< accepted completion_window values

  // --- retention
  int64_t retention_completed_ms = int64_t{24} * 3'600'000;
  int64_t retention_failed_ms = int64_t{7} * 24 * 3'600'000;  ///< failed, expired, cancelled
  bool retain_inputs = true;             ///< false: drop request bodies once a job is terminal
  std::string nats_events = "terminal";  ///< job events on NATS: all, terminal or none
  int retention_batch = 100;             ///< jobs deleted per reaper tick at most

  // --- storage
  int64_t lmdb_initial_map_bytes = int64_t{1} << 30;
  int64_t group_commit_max_ops = 4096;

  // --- tenants
  std::vector<api_key_entry> api_keys;  ///< empty: one `default` tenant, no auth, loopback only

  /// The gateway for `model`, or nullptr when no gateway serves it.
  const gateway_settings* gateway_for(const std::string& model) const {
    if (gateway) return &*gateway;
    auto it = model_gateways.find(model);
    return it == model_gateways.end() ? nullptr : &it->second;
  }
};

}  // namespace sy::config
