#pragma once
/// The one adapter between request bodies and nlohmann_json: parses without exceptions and,
/// when the text is not JSON, says where and why (byte offset and nlohmann's description).

#include <string_view>

#include <nlohmann/json.hpp>

#include "config/result.hpp"

namespace sy::api::detail {

/// The parsed document; `json_too_deep` when objects and arrays nest deeper than
/// limits::json_max_depth (checked before parsing), or `invalid_json` with the position of the
/// first error.
result<nlohmann::json> parse_json_body(std::string_view text);

}  // namespace sy::api::detail
