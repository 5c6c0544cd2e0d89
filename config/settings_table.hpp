#pragma once
/// The one declaration of every setting: YAML name, flag, type, bounds and description. The
/// environment name is derived (`SWITCHYARD_` + the upper-cased name) and the default is read
/// from a default-constructed struct, so neither can drift. Everything that lists settings —
/// YAML loading, environment, flags, `serve --help`, validation bounds, docs/configuration.md —
/// works from these tables.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::config {

/// How a setting's value is written (YAML scalar, environment value or flag argument).
enum class value_type {
  text,         ///< any string
  integer,      ///< a decimal integer
  duration_ms,  ///< integer milliseconds or a duration: 250ms, 30s, 2m, 1h, 1m30s
  gateway,      ///< the global gateway: a URL (flag, env, YAML) or a map of gateway fields (YAML)
  gateway_map,  ///< model_gateways: model name → gateway (YAML only)
  api_keys,     ///< api_keys: list of {sha256|key_file, tenant} (YAML only)
  runtime_map,  ///< runtimes: name → {lease_ttl_ms, max_attempts} (YAML only)
  prefix_map,   ///< tenant_storage_prefixes: tenant → list of s3:// prefixes (YAML only)
  headers,      ///< a gateway's headers: name → value or {secret: NAME} (YAML only)
  boolean,      ///< true/false (also yes/no, on/off, 1/0)
};

/// "TEXT", "INT", "DURATION", "URL", "MAP", "LIST", "BOOL": the placeholder shown in help.
std::string_view type_name(value_type type);

/// One declared field of `S` (`settings` or `gateway_settings`).
template <class S>
struct field_def {
  using member = std::variant<std::monostate, std::string S::*, int S::*, int64_t S::*, bool S::*>;
  std::string_view name;  ///< YAML key, snake_case, unit in the name
  std::string_view flag;  ///< e.g. "--per-model-concurrency"; empty: YAML only
  value_type type = value_type::text;
  int64_t min = 0;  ///< inclusive bounds, for integer and duration fields
  int64_t max = 0;
  std::string_view description;  ///< what it does and why, with units
  member field{};                ///< the struct member; monostate for structured settings
};
using setting_def = field_def<settings>;
using gateway_field_def = field_def<gateway_settings>;

/// Every field of `settings`, in the order of settings.hpp.
const std::vector<setting_def>& settings_table();
/// Every configurable field of `gateway_settings` (`api_key` is derived from `api_key_file` or
/// `api_key_name`).
const std::vector<gateway_field_def>& gateway_table();

/// The table entry for a YAML key. A duration `x_ms` is also found as `x` (the issue's
/// `request_timeout`, `initial_backoff`, `max_backoff`); nullptr when unknown.
const setting_def* find_setting(std::string_view yaml_key);
const gateway_field_def* find_gateway_field(std::string_view yaml_key);

/// `SWITCHYARD_` + upper-cased name with '.' and '-' as '_': `SWITCHYARD_PER_MODEL_CONCURRENCY`.
std::string env_name(std::string_view name);

/// Parses `text` by the field's type and stores it; bounds are checked later by validate().
/// `where` names the source in the error (e.g. "SWITCHYARD_LEASE_TTL_MS", "--listen").
template <class S>
status assign(S& target, const field_def<S>& def, std::string_view text, std::string_view where);

/// The field's value as text (durations rendered as "30s"); "" for structured settings.
template <class S>
std::string format_value(const S& source, const field_def<S>& def);

/// The field's value when it is an integer or a duration.
template <class S>
std::optional<int64_t> number_value(const S& source, const field_def<S>& def);

/// A setting that can be given as text in the environment or as a flag: every scalar setting,
/// `gateway` (the global gateway's URL) and `gateway.<field>` (the global gateway's fields).
struct text_option {
  std::string name;  ///< "per_model_concurrency", "gateway", "gateway.max_retries"
  std::string env;   ///< "SWITCHYARD_PER_MODEL_CONCURRENCY"
  std::string flag;  ///< "--per-model-concurrency"
  value_type type = value_type::text;
  std::string default_text;  ///< from a default-constructed struct; "(none)" when unset
  int64_t min = 0;
  int64_t max = 0;
  std::string description;
  /// Parses and stores the value; `where` names the source in errors.
  std::function<status(settings&, std::string_view text, std::string_view where)> set;
};

/// All text options, built once from the two tables.
const std::vector<text_option>& text_options();

/// The option with this name (see text_option::name), or nullptr.
const text_option* find_text_option(std::string_view name);

}  // namespace sy::config
