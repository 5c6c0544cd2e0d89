#pragma once
/// Applies a YAML configuration document onto settings (the first layer above the defaults).
/// Every key must be a declared setting (settings_table.hpp); an unknown key is an error naming
/// it, with the closest known key as a hint, so a typo never passes silently.

#include <string_view>

#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::config {

/// Applies `yaml_text` (empty or a null document: no change) onto `s`. `origin` (usually the
/// file name) starts every error message. Structured settings (`model_gateways`, `api_keys`)
/// are replaced, not merged; `gateway` fields are merged into an existing global gateway.
/// API keys given as `key_file` are read, trimmed and hashed here; the plain key is not kept.
status apply_yaml(settings& s, std::string_view yaml_text, std::string_view origin);

}  // namespace sy::config
