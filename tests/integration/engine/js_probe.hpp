#pragma once
/// Reads JetStream's own bookkeeping from outside the engine, over a separate NATS connection, as
/// an operator would with `nats stream info`: how many messages a stream ever stored and how often
/// a consumer delivered. Tests use it to see redeliveries and publishes that the engine's state in
/// LMDB cannot show.

#include <cstdint>
#include <optional>
#include <string>

namespace sy::test {

/// A consumer's delivery counters (nats.c `jsConsumerInfo`).
struct consumer_stats {
  uint64_t delivered = 0;   ///< deliveries in total, redeliveries included (consumer sequence)
  int64_t redelivered = 0;  ///< messages delivered more than once and not yet acked
  int64_t ack_pending = 0;  ///< delivered, not yet acked
};

/// The last sequence of `stream`: how many messages it ever stored (a work-queue stream deletes
/// acked messages, but the sequence stays). nullopt when the server cannot be asked.
std::optional<uint64_t> stream_last_seq(const std::string& url, const std::string& stream);

/// The counters of durable consumer `consumer` on `stream`; nullopt when it cannot be read.
std::optional<consumer_stats> consumer_info(const std::string& url, const std::string& stream,
                                            const std::string& consumer);

}  // namespace sy::test
