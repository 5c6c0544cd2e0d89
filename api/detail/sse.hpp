#pragma once
/// Server-sent events framing (text/event-stream, WHATWG HTML §9.2) for `GET
/// /v1/jobs/{id}/events`. Pure functions: any thread may call them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sy::api::detail {

/// The comment that breaks every `events_keepalive_ms` (config/settings.hpp) of silence on an
/// event stream, so proxies and clients do not take the stream for dead.
inline constexpr std::string_view sse_keepalive = ": keep-alive\n\n";

/// `id: <seq>\nevent: <event>\ndata: <data>\n\n`. `data` must be one line (compact JSON); any
/// line break in it is split into several `data:` lines, as the format requires.
std::string sse_event(uint64_t seq, std::string_view event, std::string_view data);

/// The `Last-Event-ID` header: absent or empty → 0; otherwise 1..20 decimal digits that fit in
/// 64 bits, else nullopt (the caller answers 400).
std::optional<uint64_t> parse_last_event_id(std::string_view header);

}  // namespace sy::api::detail
