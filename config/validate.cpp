#include "config/validate.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "config/address.hpp"
#include "config/api_keys.hpp"
#include "config/detail/text.hpp"
#include "config/duration.hpp"
#include "config/http_token.hpp"
#include "config/limits.hpp"
#include "config/networks.hpp"
#include "config/s3_scope.hpp"
#include "config/settings_table.hpp"
#include "config/webhook_url.hpp"

namespace sy::config {
namespace {

sy::error invalid(const std::string& param, const std::string& message) {
  return make_error(errc::invalid_config, param + ": " + message, param);
}

template <class S>
status check_bounds(const S& s, const std::vector<field_def<S>>& table, const std::string& path) {
  for (const auto& def : table) {
    auto value = number_value(s, def);
    if (!value || (*value >= def.min && *value <= def.max)) continue;
    std::string name = path + std::string(def.name);
    return invalid(name, "must be between " + std::to_string(def.min) + " and " +
                             std::to_string(def.max) + ", got " + std::to_string(*value));
  }
  return ok;
}

/// Letters, digits, '_' and '-' (JetStream stream names and NATS subject tokens).
bool is_name_token(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

status check_server(const settings& s) {
  auto listen = parse_host_port(s.listen);
  if (!listen) return invalid("listen", listen.error().message);
  if (s.api_keys.empty() && !is_loopback_host(listen->host)) {
    return invalid("listen", "refusing to listen on " + s.listen +
                                 " without api_keys (configure api_keys, or listen on loopback)");
  }
  if (!s.internal_listen.empty()) {
    auto internal = parse_host_port(s.internal_listen);
    if (!internal) return invalid("internal_listen", internal.error().message);
    if (s.api_keys.empty() && !is_loopback_host(internal->host))
      return invalid("internal_listen", "refusing to listen on " + s.internal_listen +
                                            " without api_keys (configure a worker key, or "
                                            "listen on loopback)");
  }
  if (s.data_dir.empty()) return invalid("data_dir", "must not be empty");
  static const std::set<std::string> levels = {"trace", "debug", "info", "warn", "error"};
  if (!levels.contains(s.log_level)) {
    return invalid("log_level", "must be one of trace, debug, info, warn, error, got " +
                                    detail::quoted(s.log_level));
  }
  if (s.nats_events != "all" && s.nats_events != "terminal" && s.nats_events != "none") {
    return invalid("nats_events",
                   "must be one of all, terminal, none, got " + detail::quoted(s.nats_events));
  }
  return ok;
}

status check_nats(const settings& s) {
  if (s.nats_url.find_first_of(" \t\r\n") != std::string::npos) {
    return invalid("nats_url", "must not contain whitespace (separate URLs with commas)");
  }
  if (!s.nats_url.empty()) {
    auto servers = split_nats_urls(s.nats_url);
    if (!servers) return servers.error();
    for (const auto& url : *servers)
      if (auto st = check_nats_server_url(url); !st) return invalid("nats_url", st.error().message);
  }
  if (s.nats_url.empty() && s.nats_server_bin.empty()) {
    return invalid("nats_server_bin", "must not be empty when nats_url is empty");
  }
  if (!is_name_token(s.stream_prefix)) {
    return invalid("stream_prefix", "may contain only letters, digits, '_' and '-', got " +
                                        detail::quoted(s.stream_prefix));
  }
  std::string_view subject = s.subject_prefix;
  bool tokens_ok = !subject.empty() && subject.front() != '.' && subject.back() != '.';
  for (size_t start = 0; tokens_ok && start <= subject.size();) {
    size_t dot = std::min(subject.find('.', start), subject.size());
    tokens_ok = is_name_token(subject.substr(start, dot - start));
    start = dot + 1;
  }
  if (!tokens_ok) {
    return invalid("subject_prefix",
                   "must be dot-separated tokens of letters, digits, '_' "
                   "and '-', got " +
                       detail::quoted(s.subject_prefix));
  }
  return ok;
}

status check_execution(const settings& s) {
  if (s.per_model_concurrency > s.global_concurrency) {
    return invalid("per_model_concurrency", "must not exceed global_concurrency (" +
                                                std::to_string(s.global_concurrency) + "), got " +
                                                std::to_string(s.per_model_concurrency));
  }
  if (s.requeue_initial_backoff_ms > s.requeue_max_backoff_ms) {
    return invalid("requeue_initial_backoff_ms", "must not exceed requeue_max_backoff_ms (" +
                                                     std::to_string(s.requeue_max_backoff_ms) +
                                                     "), got " +
                                                     std::to_string(s.requeue_initial_backoff_ms));
  }
  return ok;
}

/// Checks the TLS settings of a gateway: only for https, files readable, a client certificate
/// and its key together.
status check_gateway_tls(const gateway_settings& g, bool https, const std::string& path) {
  const std::pair<const char*, const std::string*> files[] = {
      {"tls_ca_cert_file", &g.tls_ca_cert_file},
      {"tls_client_cert_file", &g.tls_client_cert_file},
      {"tls_client_key_file", &g.tls_client_key_file}};
  for (const auto& [name, value] : files) {
    if (value->empty()) continue;
    const std::string where = path + "." + name;
    if (!https) return invalid(where, "is for https:// gateways; the url is http://");
    if (auto content = detail::read_file(*value, where); !content) return content.error();
  }
  if (g.tls_insecure_skip_verify && !https)
    return invalid(path + ".tls_insecure_skip_verify",
                   "is for https:// gateways; the url is http://");
  if (g.tls_client_cert_file.empty() != g.tls_client_key_file.empty())
    return invalid(
        path + (g.tls_client_cert_file.empty() ? ".tls_client_cert_file" : ".tls_client_key_file"),
        "mutual TLS needs both tls_client_cert_file and tls_client_key_file");
  return ok;
}

/// A secret read from a file: trimmed, one line of visible characters (it goes into a header
/// line as it is). Errors name the setting and the file, never the content.
result<std::string> load_secret(const std::string& file, const std::string& where) {
  auto content = detail::read_file(file, where);
  if (!content) return content.error();
  std::string secret(detail::trim(*content));
  if (secret.empty()) return invalid(where, "file " + detail::quoted(file) + " is empty");
  if (detail::find_control(secret) != std::string::npos) {
    return invalid(where, "file " + detail::quoted(file) +
                              " holds a line break or another control character; a secret is one "
                              "line of visible characters");
  }
  return secret;
}

/// A file name in secrets_dir: letters, digits, '.', '_', '-', not "." or ".." (no path).
bool is_secret_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
         });
}

/// The secret `name` from `secrets_dir` (a Kubernetes secret mounted as a directory).
result<std::string> read_secret(const std::string& secrets_dir, const std::string& name,
                                const std::string& where) {
  if (secrets_dir.empty()) return invalid(where, "names a secret, but secrets_dir is not set");
  if (!is_secret_name(name)) {
    return invalid(where,
                   "must be the name of a file in secrets_dir (letters, digits, '.', '_', '-'), "
                   "got " +
                       detail::quoted(name));
  }
  return load_secret(secrets_dir + "/" + name, where);
}

/// Checks a gateway's extra headers and loads the ones read from secrets_dir.
status check_headers(gateway_settings& g, const std::string& secrets_dir, const std::string& path) {
  // Set by the engine itself for every request (framing, routing, the body's type).
  static const std::set<std::string> reserved = {
      "host",       "content-type", "content-length", "transfer-encoding",
      "connection", "keep-alive",   "upgrade",        "te",
      "trailer",    "accept"};
  std::set<std::string> seen;
  for (auto& h : g.headers) {
    const std::string where = path + ".headers." + h.name;
    if (!is_header_name(h.name)) {
      return invalid(where, "is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)");
    }
    const std::string name = header_key(h.name);
    if (reserved.contains(name))
      return invalid(where, "is set by the engine and cannot be configured");
    if (name == "authorization" && !g.api_key.empty()) {
      return invalid(where, "conflicts with the gateway's API key (api_key_file / api_key_name)");
    }
    if (!seen.insert(name).second) return invalid(where, "is given twice");
    if (!h.secret_name.empty()) {
      auto secret = read_secret(secrets_dir, h.secret_name, where + ".secret");
      if (!secret) return secret.error();
      h.value = std::move(*secret);
    } else if (header_value_control(h.value) != std::string::npos) {
      // The value is not echoed: it may be a credential.
      return invalid(where, "holds a line break or another control character");
    }
  }
  return ok;
}

/// Loads the gateway's API key from api_key_file or api_key_name (at most one of them).
status load_api_key(gateway_settings& g, const std::string& secrets_dir, const std::string& path) {
  if (!g.api_key_file.empty() && !g.api_key_name.empty()) {
    return invalid(path + ".api_key_name", "give api_key_file or api_key_name, not both");
  }
  result<std::string> key = std::string{};
  if (!g.api_key_file.empty()) key = load_secret(g.api_key_file, path + ".api_key_file");
  if (!g.api_key_name.empty())
    key = read_secret(secrets_dir, g.api_key_name, path + ".api_key_name");
  if (!key) return key.error();
  g.api_key = std::move(*key);
  return ok;
}

/// Checks one gateway (`path` is "gateway" or "model_gateways.<model>") and loads its secrets.
status check_gateway(gateway_settings& g, const std::string& secrets_dir, const std::string& path) {
  if (g.url.empty()) {
    return invalid(path + ".url", "is required (e.g. http://127.0.0.1:8000)");
  }
  auto url = parse_gateway_url(g.url);
  if (!url) return invalid(path + ".url", url.error().message);
  if (auto st = check_gateway_tls(g, url->tls, path); !st) return st;
  if (auto st = check_bounds(g, gateway_table(), path + "."); !st) return st;
  if (g.initial_backoff_ms > g.max_backoff_ms) {
    return invalid(path + ".initial_backoff_ms", "must not exceed max_backoff_ms (" +
                                                     std::to_string(g.max_backoff_ms) + "), got " +
                                                     std::to_string(g.initial_backoff_ms));
  }
  if (auto st = load_api_key(g, secrets_dir, path); !st) return st;
  return check_headers(g, secrets_dir, path);
}

status check_gateways(settings& s) {
  if (s.gateway && !s.model_gateways.empty()) {
    return invalid("gateway",
                   "both gateway and model_gateways are set; configure exactly one "
                   "(a global gateway, or a gateway per model)");
  }
  if (s.gateway) return check_gateway(*s.gateway, s.secrets_dir, "gateway");
  for (auto& [model, g] : s.model_gateways) {
    if (model.empty()) return invalid("model_gateways", "a model name is empty");
    if (model.size() > limits::model_max_bytes) {
      return invalid("model_gateways", "a model name is longer than " +
                                           std::to_string(limits::model_max_bytes) +
                                           " bytes (model_max_bytes, docs/limits.md)");
    }
    if (auto st = check_gateway(g, s.secrets_dir, "model_gateways." + model); !st) return st;
  }
  return ok;
}

bool is_tenant_name(std::string_view name) {
  return name.size() <= limits::tenant_max_bytes &&
         std::all_of(name.begin(), name.end(),
                     [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                              c == '.';
                     }) &&
         !name.empty();
}

status check_api_keys(settings& s) {
  std::set<std::string> hashes;
  for (size_t i = 0; i < s.api_keys.size(); ++i) {
    auto& entry = s.api_keys[i];
    std::string path = "api_keys[" + std::to_string(i) + "]";
    if (!is_sha256_hex(entry.sha256_hex)) {
      return invalid(path + ".sha256", "must be 64 hex characters (switchyard hash-key KEY)");
    }
    std::transform(entry.sha256_hex.begin(), entry.sha256_hex.end(), entry.sha256_hex.begin(),
                   [](char c) { return static_cast<char>(std::tolower(c)); });
    if (entry.role != "client" && entry.role != "worker" && entry.role != "admin" &&
        entry.role != "metrics")
      return invalid(path + ".role",
                     "must be client, worker, admin or metrics, got " + detail::quoted(entry.role));
    if (entry.role != "client" && !entry.tenant.empty())
      return invalid(path + ".tenant", (entry.role == "admin" ? "an " : "a ") + entry.role +
                                           " key has no tenant (it serves every tenant's work)");
    if (entry.role == "client" && !is_tenant_name(entry.tenant)) {
      return invalid(path + ".tenant", "must be 1 to 64 letters, digits, '_', '-' or '.', got " +
                                           detail::quoted(entry.tenant));
    }
    if (!hashes.insert(entry.sha256_hex).second) {
      return invalid(path, "the same key is configured twice");
    }
  }
  return ok;
}

/// The credential minter's settings: canonical tenant prefixes, and, with an STS endpoint, the
/// role and the minter's keys (its secret loaded from its file).
status check_credentials(settings& s) {
  for (const auto& [tenant, list] : s.tenant_storage_prefixes) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (auto p = parse_s3_prefix(list[i]); !p)
        return invalid("tenant_storage_prefixes." + tenant + "[" + std::to_string(i) + "]",
                       p.error().message);
    }
  }
  if (s.sts_endpoint.empty()) return ok;
  auto url = parse_webhook_url(s.sts_endpoint);
  if (!url || url->target != "/" || s.sts_endpoint.back() == '/')
    return invalid("sts_endpoint", "must be http(s)://host[:port] with no path, got " +
                                       detail::quoted(s.sts_endpoint));
  if (s.sts_role_arn.empty() || s.sts_access_key_id.empty() || s.sts_secret_access_key_file.empty())
    return invalid("sts_endpoint",
                   "needs sts_role_arn, sts_access_key_id and sts_secret_access_key_file");
  auto secret = load_secret(s.sts_secret_access_key_file, "sts_secret_access_key_file");
  if (!secret) return secret.error();
  s.sts_secret_access_key = std::move(*secret);
  return ok;
}

status check_runtimes(const settings& s) {
  for (const auto& [name, r] : s.runtimes) {
    const std::string path = "runtimes." + name;
    if (!is_name_token(name) || name.size() > limits::runtime_name_max_bytes)
      return invalid(path, "a runtime name is 1 to " +
                               std::to_string(limits::runtime_name_max_bytes) +
                               " letters, digits, '_' or '-'");
    if (r.lease_ttl_ms < 100 || r.lease_ttl_ms > 3'600'000)
      return invalid(path + ".lease_ttl_ms",
                     "must be between 100ms and 1h, got " + std::to_string(r.lease_ttl_ms));
  }
  return ok;
}

status check_webhooks(settings& s) {
  if (s.webhook_initial_backoff_ms > s.webhook_max_backoff_ms) {
    return invalid("webhook_initial_backoff_ms", "must not exceed webhook_max_backoff_ms (" +
                                                     std::to_string(s.webhook_max_backoff_ms) +
                                                     "), got " +
                                                     std::to_string(s.webhook_initial_backoff_ms));
  }
  if (!s.otlp_endpoint.empty()) {
    auto url = parse_webhook_url(s.otlp_endpoint);
    if (!url || url->tls || url->target.find('?') != std::string::npos)
      return invalid("otlp_endpoint", "must be http://host[:port][/path] (no TLS, no query), got " +
                                          detail::quoted(s.otlp_endpoint));
  }
  // The parser every job's webhook_url goes through: a default it refuses would make every job
  // that names no webhook_url fail at submission.
  if (!s.webhook_url.empty()) {
    if (auto url = parse_webhook_url(s.webhook_url); !url)
      return invalid("webhook_url", url.error().message);
  }
  if (auto allow = parse_network_list(s.webhook_allow_networks); !allow) {
    return invalid("webhook_allow_networks", allow.error().message);
  }
  if (auto allow = parse_network_list(s.http_task_allow_networks); !allow) {
    return invalid("http_task_allow_networks", allow.error().message);
  }
  if (auto deny = parse_network_list(s.http_task_deny_networks); !deny) {
    return invalid("http_task_deny_networks", deny.error().message);
  }
  if (auto deny = parse_network_list(s.webhook_deny_networks); !deny) {
    return invalid("webhook_deny_networks", deny.error().message);
  }
  if (!s.webhook_secret_file.empty()) {
    auto content = detail::read_file(s.webhook_secret_file, "webhook_secret_file");
    if (!content) return content.error();
    s.webhook_secret = std::string(detail::trim(*content));
    if (s.webhook_secret.empty()) {
      return invalid("webhook_secret_file",
                     "file " + detail::quoted(s.webhook_secret_file) + " is empty");
    }
  }
  return ok;
}

}  // namespace

result<std::vector<completion_window>> parse_completion_windows(const std::string& list) {
  std::vector<completion_window> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    pos = comma + 1;
    if (item.empty()) continue;
    auto ms = parse_duration_ms(item);
    if (!ms || *ms <= 0)
      return invalid(
          "batch_completion_windows",
          "each item must be a duration greater than 0 (e.g. 24h), got " + detail::quoted(item));
    out.push_back(completion_window{item, *ms});
  }
  if (out.empty())
    return invalid("batch_completion_windows", "must name at least one duration, e.g. 24h");
  return out;
}

result<settings> validate(settings s) {
  if (auto st = check_bounds(s, settings_table(), ""); !st) return st.error();
  if (auto st = check_api_keys(s); !st) return st.error();
  if (auto st = check_server(s); !st) return st.error();
  if (auto st = check_nats(s); !st) return st.error();
  if (auto st = check_execution(s); !st) return st.error();
  if (auto st = check_gateways(s); !st) return st.error();
  if (auto st = check_webhooks(s); !st) return st.error();
  if (auto st = check_runtimes(s); !st) return st.error();
  if (auto st = check_credentials(s); !st) return st.error();
  if (auto w = parse_completion_windows(s.batch_completion_windows); !w) return w.error();
  return s;
}

std::vector<std::string> warnings(const settings& s) {
  std::vector<std::string> out;
  if (!s.gateway && s.model_gateways.empty()) {
    out.push_back(
        "no gateway is configured (set --gateway URL or model_gateways); every submission "
        "is refused with 404 model_not_found and nothing is stored");
  }
  return out;
}

}  // namespace sy::config
