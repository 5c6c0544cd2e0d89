#pragma once
/// The one parser of a client's JSON (api/admission.cpp for bodies and payloads, and the lines of
/// a staged task file, actors/task_file.cpp): parses without exceptions and without recursion,
/// strictly — what nlohmann would accept silently (a key twice in one object) is refused, and
/// what it would keep apart from its equal (`-0.0` beside `0.0`) is made the same. Pure; any
/// thread.

#include <string_view>

#include <nlohmann/json.hpp>

#include "config/result.hpp"

namespace sy::runtime {

/// The parsed document. Errors, in this order:
/// - `json_too_deep` when objects and arrays nest deeper than limits::json_max_depth (checked
///   before parsing, by a linear scan);
/// - `invalid_json` with the position of the first error: not JSON, an empty text, invalid
///   UTF-8, a raw control character in a string, a number that overflows a double (`1e999999`);
/// - `invalid_request` for a key given twice in one object, at any depth, `param` its path
///   (`body.messages[0].role`).
/// A negative zero is stored as zero. `what` names the text in the invalid_json message.
result<nlohmann::json> parse_strict_json(std::string_view text,
                                         std::string_view what = "the JSON body of your request");

}  // namespace sy::runtime
