#pragma once
/// A core NATS subscriber, as an outside client would be (tests of the engine's NATS events).

#include <nats/nats.h>

#include <optional>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace sy::test {

/// A core NATS subscriber, as an outside client would be.
class nats_subscriber {
 public:
  nats_subscriber(const std::string& url, const std::string& subject) {
    EXPECT_EQ(natsConnection_ConnectTo(&nc_, url.c_str()), NATS_OK);
    EXPECT_EQ(natsConnection_SubscribeSync(&sub_, nc_, subject.c_str()), NATS_OK);
    EXPECT_EQ(natsConnection_Flush(nc_), NATS_OK);
  }
  ~nats_subscriber() {
    natsSubscription_Destroy(sub_);
    natsConnection_Destroy(nc_);
  }
  /// The next message (subject, payload), or empty on timeout.
  std::optional<std::pair<std::string, std::string>> next(int64_t timeout_ms) {
    natsMsg* m = nullptr;
    if (natsSubscription_NextMsg(&m, sub_, timeout_ms) != NATS_OK) return std::nullopt;
    std::pair<std::string, std::string> out{
        natsMsg_GetSubject(m),
        std::string(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)))};
    natsMsg_Destroy(m);
    return out;
  }

 private:
  natsConnection* nc_ = nullptr;
  natsSubscription* sub_ = nullptr;
};

}  // namespace sy::test
