#pragma once
/// The result line of a gateway's answer to one request of a batch (docs/batches.md): OpenAI's
/// batch output format, with the response's token usage read on the way. The other lines and
/// messages of a batch are rendered by runtime/batch_render.hpp; this one lives here because it
/// writes with storage's JSON string escaping and yields a storage::batch_line.
///
/// Threading: none of its own; call from any thread (each thread parses with its own parser).

#include <cstdint>
#include <string>

#include "runtime/gateway_client.hpp"
#include "storage/batch_ops.hpp"

namespace sy::actors {

/// The line for a gateway answer to the request in `slot` (request id `id`): it belongs to the
/// output file (`ok`) when the status is 2xx, and then carries the body's usage, if it has one.
/// A JSON body is spliced in as the gateway sent it (validated, not re-serialized; minified when
/// it spans lines); any other body is kept as a JSON string. The gateway's x-request-id is the
/// response's request_id, else `id`.
storage::batch_line response_line(uint64_t slot, const std::string& id,
                                  const std::string& custom_id,
                                  const runtime::gateway_outcome& out);

}  // namespace sy::actors
