// yaml-cpp throws on malformed documents and on conversions; this file is its one adapter. We
// only read node types and scalar text, and parse values ourselves with the settings table.

#include "config/yaml_loader.hpp"

#include <cstdlib>
#include <set>

#include <yaml-cpp/yaml.h>

#include "config/detail/text.hpp"
#include "config/duration.hpp"
#include "config/settings_table.hpp"
#include "config/sha256.hpp"

namespace sy::config {
namespace {

/// `path.key`, the path of a mapping's entry in error messages.
std::string child_path(const std::string& path, const std::string& key) {
  std::string out;
  out.reserve(path.size() + 1 + key.size());
  out.append(path).append(1, '.').append(key);
  return out;
}

sy::error yaml_error(std::string_view origin, const std::string& path, const std::string& what) {
  return make_error(errc::invalid_config, std::string(origin) + ": " + path + ": " + what, path);
}

/// " (did you mean 'x'?)" when a known key is within two edits of `key`.
template <class Table>
std::string suggestion(std::string_view key, const Table& table) {
  std::string best;
  size_t best_distance = 3;
  for (const auto& def : table) {
    size_t distance = detail::edit_distance(key, def.name);
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(def.name);
    }
  }
  return best.empty() ? std::string{} : " (did you mean " + detail::quoted(best) + "?)";
}

/// The text of a scalar node; a null node is "" (e.g. `nats_url:` left empty).
result<std::string> scalar_text(const YAML::Node& node, std::string_view origin,
                                const std::string& path) {
  if (node.IsNull()) return std::string{};
  if (!node.IsScalar()) return yaml_error(origin, path, "expected a single value");
  return node.Scalar();
}

/// Records `def_name` as set; error when two spellings (x and x_ms) name the same setting.
status note_once(std::set<std::string>& seen, std::string_view def_name, std::string_view origin,
                 const std::string& path) {
  if (!seen.insert(std::string(def_name)).second) {
    return yaml_error(origin, path,
                      "given twice (as " + std::string(def_name) + " and without the _ms suffix)");
  }
  return ok;
}

/// A gateway's `headers`: name → value, or name → {secret: NAME}. Checked by validate().
status apply_headers(gateway_settings& g, const YAML::Node& node, std::string_view origin,
                     const std::string& path) {
  g.headers.clear();
  if (node.IsNull()) return ok;
  if (!node.IsMap()) return yaml_error(origin, path, "expected a map header name -> value");
  for (auto it = node.begin(); it != node.end(); ++it) {
    gateway_header h;
    h.name = it->first.Scalar();
    const std::string key_path = child_path(path, h.name);
    const YAML::Node value = it->second;  // a copy: GCC 12 warns on a reference into the proxy
    if (value.IsMap()) {
      // The only map form: {secret: NAME}, the value read from a file in secrets_dir.
      if (value.size() != 1 || !value["secret"])
        return yaml_error(origin, key_path, "expected a value or {secret: NAME}");
      auto name = scalar_text(value["secret"], origin, key_path + ".secret");
      if (!name) return name.error();
      h.secret_name = std::string(detail::trim(*name));
    } else {
      auto text = scalar_text(value, origin, key_path);
      if (!text) return text.error();
      h.value = *text;
    }
    g.headers.push_back(std::move(h));
  }
  return ok;
}

status apply_gateway_fields(gateway_settings& g, const YAML::Node& node, std::string_view origin,
                            const std::string& path) {
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string key_path = child_path(path, key);
    const gateway_field_def* def = find_gateway_field(key);
    if (def == nullptr) {
      return yaml_error(origin, key_path,
                        "unknown gateway setting" + suggestion(key, gateway_table()));
    }
    if (auto st = note_once(seen, def->name, origin, key_path); !st) return st;
    if (def->type == value_type::headers) {
      if (auto st = apply_headers(g, it->second, origin, key_path); !st) return st;
      continue;
    }
    auto text = scalar_text(it->second, origin, key_path);
    if (!text) return text.error();
    std::string where = std::string(origin) + ": " + key_path;
    if (auto st = assign(g, *def, *text, where); !st) return st;
  }
  return ok;
}

/// A gateway given as a URL string or as a map of gateway fields, merged into `g`.
status apply_gateway(gateway_settings& g, const YAML::Node& node, std::string_view origin,
                     const std::string& path) {
  if (node.IsScalar()) {
    g.url = std::string(detail::trim(node.Scalar()));
    return ok;
  }
  if (!node.IsMap()) {
    return yaml_error(origin, path, "expected a URL or a map with url, request_timeout_ms, ...");
  }
  return apply_gateway_fields(g, node, origin, path);
}

status apply_model_gateways(settings& s, const YAML::Node& node, std::string_view origin) {
  s.model_gateways.clear();
  if (node.IsNull()) return ok;
  if (!node.IsMap()) return yaml_error(origin, "model_gateways", "expected a map model -> gateway");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string model = it->first.Scalar();
    gateway_settings g;
    if (auto st = apply_gateway(g, it->second, origin, "model_gateways." + model); !st) return st;
    s.model_gateways[model] = std::move(g);
  }
  return ok;
}

/// One `runtimes` entry: `{lease_ttl_ms | lease_ttl, max_attempts}` (bounds: validate()).
status apply_runtime(runtime_settings& r, const YAML::Node& node, std::string_view origin,
                     const std::string& path) {
  if (node.IsNull()) return ok;
  if (!node.IsMap()) return yaml_error(origin, path, "expected a map {lease_ttl_ms, max_attempts}");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    auto text = scalar_text(it->second, origin, child_path(path, key));
    if (!text) return text.error();
    if (key == "lease_ttl_ms" || key == "lease_ttl") {
      auto ms = parse_duration_ms(*text);
      if (!ms) return yaml_error(origin, child_path(path, key), ms.error().message);
      r.lease_ttl_ms = *ms;
    } else if (key == "max_attempts") {
      char* end = nullptr;
      const long n = std::strtol(text->c_str(), &end, 10);
      if (text->empty() || *end != '\0' || n < 1 || n > 100)
        return yaml_error(origin, child_path(path, key), "expected an integer from 1 to 100");
      r.max_attempts = static_cast<int>(n);
    } else {
      return yaml_error(origin, child_path(path, key),
                        "unknown key (expected lease_ttl_ms, max_attempts)");
    }
  }
  return ok;
}

status apply_runtimes(settings& s, const YAML::Node& node, std::string_view origin) {
  s.runtimes.clear();
  if (node.IsNull()) return ok;
  if (!node.IsMap()) return yaml_error(origin, "runtimes", "expected a map name -> runtime");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = it->first.Scalar();
    runtime_settings r;
    if (auto st = apply_runtime(r, it->second, origin, "runtimes." + name); !st) return st;
    s.runtimes[name] = r;
  }
  return ok;
}

/// `tenant_storage_prefixes`: a map tenant → list of prefix strings (checked in validate()).
status apply_storage_prefixes(settings& s, const YAML::Node& node, std::string_view origin) {
  s.tenant_storage_prefixes.clear();
  if (node.IsNull()) return ok;
  if (!node.IsMap())
    return yaml_error(origin, "tenant_storage_prefixes", "expected a map tenant -> list");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string path = "tenant_storage_prefixes." + it->first.Scalar();
    if (!it->second.IsSequence())
      return yaml_error(origin, path, "expected a list of s3://bucket/prefix/ strings");
    auto& list = s.tenant_storage_prefixes[it->first.Scalar()];
    for (size_t i = 0; i < it->second.size(); ++i) {
      auto text = scalar_text(it->second[i], origin, path + "[" + std::to_string(i) + "]");
      if (!text) return text.error();
      list.push_back(*text);
    }
  }
  return ok;
}

/// One `{sha256: ..., tenant: ...}` or `{key_file: ..., tenant: ...}` entry.
result<api_key_entry> parse_api_key(const YAML::Node& node, std::string_view origin,
                                    const std::string& path) {
  if (!node.IsMap()) {
    return yaml_error(origin, path,
                      "expected {sha256: <64 hex>, tenant: name} or "
                      "{key_file: path, tenant: name}");
  }
  std::string sha256, key_file;
  api_key_entry entry;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    auto text = scalar_text(it->second, origin, child_path(path, key));
    if (!text) return text.error();
    if (key == "sha256")
      sha256 = *text;
    else if (key == "key_file")
      key_file = *text;
    else if (key == "tenant")
      entry.tenant = *text;
    else if (key == "role")
      entry.role = *text;
    else if (key == "key") {
      return yaml_error(origin, path + ".key",
                        "plain keys are not accepted in the file; "
                        "store its hash (switchyard hash-key KEY) as sha256, or use key_file");
    } else {
      return yaml_error(origin, child_path(path, key),
                        "unknown key (expected sha256, key_file, tenant, role)");
    }
  }
  if (sha256.empty() == key_file.empty()) {
    return yaml_error(origin, path, "give exactly one of sha256 and key_file");
  }
  if (!key_file.empty()) {
    auto content = detail::read_file(key_file, path + ".key_file");
    if (!content) return content.error();
    auto key = detail::trim(*content);
    if (key.empty())
      return yaml_error(origin, path + ".key_file", "file " + key_file + " is empty");
    sha256 = sha256_hex(key);
  }
  entry.sha256_hex = sha256;
  return entry;
}

status apply_api_keys(settings& s, const YAML::Node& node, std::string_view origin) {
  s.api_keys.clear();
  if (node.IsNull()) return ok;
  if (!node.IsSequence()) return yaml_error(origin, "api_keys", "expected a list");
  for (size_t i = 0; i < node.size(); ++i) {
    auto entry = parse_api_key(node[i], origin, "api_keys[" + std::to_string(i) + "]");
    if (!entry) return entry.error();
    s.api_keys.push_back(std::move(*entry));
  }
  return ok;
}

status apply_setting(settings& s, const setting_def& def, const YAML::Node& value,
                     std::string_view origin, const std::string& key) {
  switch (def.type) {
    case value_type::gateway:
      if (value.IsNull()) {
        s.gateway.reset();
        return ok;
      }
      if (!s.gateway) s.gateway.emplace();
      return apply_gateway(*s.gateway, value, origin, key);
    case value_type::gateway_map:
      return apply_model_gateways(s, value, origin);
    case value_type::api_keys:
      return apply_api_keys(s, value, origin);
    case value_type::runtime_map:
      return apply_runtimes(s, value, origin);
    case value_type::prefix_map:
      return apply_storage_prefixes(s, value, origin);
    default: {
      auto text = scalar_text(value, origin, key);
      if (!text) return text.error();
      return assign(s, def, *text, std::string(origin) + ": " + key);
    }
  }
}

status apply_root(settings& s, const YAML::Node& root, std::string_view origin) {
  if (!root.IsDefined() || root.IsNull()) return ok;
  if (!root.IsMap()) {
    return make_error(errc::invalid_config, std::string(origin) + ": expected a map of settings");
  }
  std::set<std::string> seen;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.Scalar();
    const setting_def* def = find_setting(key);
    if (def == nullptr) {
      return yaml_error(origin, key, "unknown setting" + suggestion(key, settings_table()));
    }
    if (auto st = note_once(seen, def->name, origin, key); !st) return st;
    if (auto st = apply_setting(s, *def, it->second, origin, key); !st) return st;
  }
  return ok;
}

}  // namespace

status apply_yaml(settings& s, std::string_view yaml_text, std::string_view origin) {
  if (detail::trim(yaml_text).empty()) return ok;
  try {
    return apply_root(s, YAML::Load(std::string(yaml_text)), origin);
  } catch (const YAML::Exception& e) {
    return make_error(errc::invalid_config, std::string(origin) + ": not valid YAML: " + e.what());
  }
}

}  // namespace sy::config
