#pragma once
/// A NATS publisher as a client of the intake would write it, straight on nats.c: JetStream
/// publish with headers, and a private inbox (named in `Sy-Reply-To`) for the engine's replies.
/// One thread uses it at a time.

#include <nats/nats.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sy::test {

class intake_publisher {
 public:
  /// Connects to `url` and subscribes to a fresh inbox. Throws when NATS is unreachable.
  explicit intake_publisher(const std::string& url);
  ~intake_publisher();
  intake_publisher(const intake_publisher&) = delete;
  intake_publisher& operator=(const intake_publisher&) = delete;

  /// What JetStream answered to a publish.
  struct pub_ack {
    bool stored = false;     ///< the stream acknowledged it
    bool duplicate = false;  ///< dropped as a duplicate inside the stream's window
    std::string error;
  };
  /// JetStream publish of `payload` on `subject` with `headers`; `msg_id` (when not empty) as
  /// Nats-Msg-Id; `Sy-Reply-To: <inbox>` unless `with_reply` is false.
  pub_ack publish(const std::string& subject, const std::string& payload,
                  const std::string& msg_id = {},
                  const std::map<std::string, std::string>& headers = {}, bool with_reply = true);

  /// One reply from the engine.
  struct reply {
    std::string status;  ///< header Sy-Status
    nlohmann::json body;
  };
  /// The next reply on the inbox, waiting up to `timeout`; nullopt when none came.
  std::optional<reply> next_reply(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  const std::string& inbox() const { return inbox_; }

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  natsSubscription* replies_ = nullptr;
  std::string inbox_;
};

}  // namespace sy::test
