#pragma once
/// Validation: run once on the layered settings before the server uses them. Checks every
/// bound declared in settings_table.cpp and the rules between settings, loads gateway API key
/// files, and normalizes API-key hashes to lower case. Messages name the setting at fault and
/// `error::param` holds its name (e.g. "per_model_concurrency", "model_gateways.gpt-4o.url").

#include <cstdint>
#include <string>
#include <vector>

#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::config {

/// The settings, checked and completed (gateway api_key loaded), or the first problem found
/// (code "invalid_config"). Idempotent: validating valid settings again returns them unchanged.
result<settings> validate(settings s);

/// One accepted batch `completion_window`: its text as clients send it ("24h") and its length.
struct completion_window {
  std::string text;
  int64_t ms = 0;
};
/// Parses `batch_completion_windows` ("24h,1h"): each item a duration > 0. Errors:
/// invalid_config naming the bad item.
result<std::vector<completion_window>> parse_completion_windows(const std::string& list);

/// Things worth a log line at start that are not errors, e.g. that no gateway is configured
/// (the server starts, and every job answers model_not_found).
std::vector<std::string> warnings(const settings& s);

}  // namespace sy::config
