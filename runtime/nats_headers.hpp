#pragma once
/// The headers of a received NATS message, as the engine's surfaces read them (the intake's
/// js_message, the micro service's requests). Thread-safe: a pure function of the message.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct __natsMsg;  // nats.c's natsMsg

namespace sy::runtime {

/// Every header of `msg` (name as sent, value), in nats.c's order; none when it has none or
/// nats.c cannot read them.
///
/// nats.c 3.4 reads an empty value wrongly: after `Name:` it skips every space, CR and LF, so
/// `Authorization: \r\nSy-Reply-To: r.1\r\n` reads as one header, Authorization with the value
/// `Sy-Reply-To: r.1`, and Sy-Reply-To is lost. A value that is itself `<name>:<rest>`, where
/// `<name>` is one of the headers the engine reads (Authorization, Idempotency-Key, Nats-Msg-Id,
/// Sy-Reply-To, traceparent, tracestate, X-Switchyard-Task-Capability) and not otherwise present,
/// is taken back apart: the header is empty and `<name>` has `<rest>`. (No value those headers
/// carry legitimately starts so.) An empty value on the last header line makes nats.c refuse
/// the whole block: the message then reads as having no headers.
std::vector<std::pair<std::string, std::string>> read_nats_headers(__natsMsg* msg);

/// Whether `a` and `b` name the same header (ASCII case-insensitively, as HTTP's are).
bool same_header(std::string_view a, std::string_view b);

}  // namespace sy::runtime
