#pragma once
/// Private to runtime/batch_*.cpp: the per-line check of a batch input line with simdjson's
/// on-demand parser.

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "config/endpoints.hpp"
#include "runtime/batch_plan.hpp"

namespace sy::runtime::batch::detail {

/// The endpoint-specific rule (config/endpoints.hpp): which body field a request must have;
/// empty for an endpoint that is not one of ours (only the common rules apply).
using endpoint_kind = std::optional<endpoints::info>;
endpoint_kind classify_endpoint(std::string_view endpoint);

/// What a line yields for the plan. The views point into the parser's buffers and are valid until
/// the parser's next document.
struct line_facts {
  std::string_view custom_id;  ///< set whenever custom_id is a non-empty string, even on error
  std::string_view model;
  uint32_t prefix_hash = 0;
};

/// Checks one line (without its terminator) up to, not including, the duplicate and model checks
/// that need the scan's state. `capacity` is the readable bytes from `data` (at least
/// `size + simdjson::SIMDJSON_PADDING`). Returns the line's first problem, if any.
std::optional<line_error> check_line(simdjson::ondemand::parser& parser, const char* data,
                                     size_t size, size_t capacity, std::string_view endpoint,
                                     endpoint_kind kind, int64_t line_no, line_facts& out);

/// "Line N: " + text.
line_error make_line_error(int64_t line_no, error_code code, std::string param,
                           std::string_view text);

}  // namespace sy::runtime::batch::detail
