#pragma once
/// The `Prefer` request header (RFC 7240). Only the `wait` preference means something to us;
/// every other preference is ignored, as the RFC asks of a server that does not support it.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sy::api::detail {

/// The seconds of `wait=N` in the values of every `Prefer` header of a request, in order.
/// Rules (RFC 7240 §2): preferences are separated by commas; names are case-insensitive;
/// `;`-parameters are skipped; the value may be a quoted-string; when a preference appears
/// more than once only the first counts. A `wait` whose value is not 1..18 decimal digits is
/// ignored (nullopt), as is a header that cannot be parsed.
std::optional<int64_t> prefer_wait_seconds(const std::vector<std::string_view>& header_values);

}  // namespace sy::api::detail
