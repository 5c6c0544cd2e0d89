#pragma once
/// One attempt of one task, from a JetStream delivery to a fenced result (docs/architecture.md):
/// start (commit a lease) → call the gateway while heartbeating the lease and the JetStream
/// message → commit the outcome under the lease token → ack. Every path acks, naks or terms the
/// message; a stale or duplicate delivery is acked and dropped.

#include <utility>

#include <functional>
#include <memory>

#include <boost/asio/awaitable.hpp>

#include "actors/engine_context.hpp"
#include "runtime/jetstream.hpp"
#include "storage/ops.hpp"

namespace sy::actors {

/// `on_answered`, when given, is called once the gateway exchange is over (answered, failed or
/// aborted) and before the outcome is committed — so the request's slot can serve another while
/// the commit waits for its group — and never when the attempt ends before sending.
boost::asio::awaitable<void> run_attempt(engine_context& ctx, std::string model,
                                         runtime::delivery msg,
                                         std::function<void()> on_answered = {});

/// How a gateway outcome ends an attempt (pure; unit-tested).
struct attempt_verdict {
  storage::attempt_end end;
  std::string error_code;
  std::string error_message;
};
attempt_verdict judge(const runtime::gateway_outcome& o, bool releasing);

}  // namespace sy::actors
