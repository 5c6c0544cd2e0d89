#include "tests/integration/engine/js_probe.hpp"

#include <nats/nats.h>

namespace sy::test {
namespace {

/// One short-lived connection and JetStream context; both destroyed with it.
struct js_session {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;

  explicit js_session(const std::string& url) {
    if (natsConnection_ConnectTo(&nc, url.c_str()) != NATS_OK) return;
    if (natsConnection_JetStream(&js, nc, nullptr) != NATS_OK) js = nullptr;
  }
  ~js_session() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  js_session(const js_session&) = delete;
  js_session& operator=(const js_session&) = delete;
};

}  // namespace

std::optional<uint64_t> stream_last_seq(const std::string& url, const std::string& stream) {
  js_session s(url);
  if (s.js == nullptr) return std::nullopt;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (js_GetStreamInfo(&si, s.js, stream.c_str(), nullptr, &jerr) != NATS_OK) return std::nullopt;
  uint64_t last = si->State.LastSeq;
  jsStreamInfo_Destroy(si);
  return last;
}

std::optional<consumer_stats> consumer_info(const std::string& url, const std::string& stream,
                                            const std::string& consumer) {
  js_session s(url);
  if (s.js == nullptr) return std::nullopt;
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (js_GetConsumerInfo(&ci, s.js, stream.c_str(), consumer.c_str(), nullptr, &jerr) != NATS_OK)
    return std::nullopt;
  consumer_stats out{ci->Delivered.Consumer, ci->NumRedelivered, ci->NumAckPending};
  jsConsumerInfo_Destroy(ci);
  return out;
}

}  // namespace sy::test
