#pragma once
/// One attempt of one task, from a JetStream delivery to a fenced result (docs/architecture.md):
/// start (commit a lease) → call the gateway while heartbeating the lease and the JetStream
/// message → commit the outcome under the lease token → ack. Every path acks, naks or terms the
/// message; a stale or duplicate delivery is acked and dropped.

#include <utility>

#include <memory>

#include <boost/asio/awaitable.hpp>

#include "actors/engine_context.hpp"
#include "runtime/jetstream.hpp"
#include "storage/ops.hpp"

namespace sy::actors {

boost::asio::awaitable<void> run_attempt(engine_context& ctx, std::string model,
                                         std::shared_ptr<runtime::js_message> msg);

/// How a gateway outcome ends an attempt (pure; unit-tested).
struct attempt_verdict {
  storage::attempt_end end;
  std::string error_code;
  std::string error_message;
};
attempt_verdict judge(const runtime::gateway_outcome& o, bool releasing);

}  // namespace sy::actors
