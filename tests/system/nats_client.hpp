#pragma once
/// What the system tests that speak NATS to the engine (as a client would, with nats.c) share:
/// a connection that closes itself, a received message's header and payload, and one request
/// to each of the engine's NATS job surfaces (the micro service and the JetStream intake).

#include <nats/nats.h>

#include <chrono>
#include <map>
#include <string>

#include "tests/support/wait.hpp"

namespace sy::test {

struct nats_conn {
  natsConnection* nc = nullptr;
  nats_conn() = default;
  nats_conn(const nats_conn&) = delete;
  nats_conn& operator=(const nats_conn&) = delete;
  ~nats_conn() { natsConnection_Destroy(nc); }
};

/// The value of header `key` of `m` ("" when it has none).
inline std::string header_of(natsMsg* m, const char* key) {
  const char* v = nullptr;
  return natsMsgHeader_Get(m, key, &v) == NATS_OK && v != nullptr ? v : "";
}

/// The payload of `m`.
inline std::string data_of(natsMsg* m) {
  return {natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m))};
}

/// What a NATS surface answered: the status (the micro service's `Nats-Service-Error-Code`, the
/// intake's `Sy-Status`; 202 for an accepted job; -1: no answer, `body` then says why) and the
/// body.
struct nats_answer {
  int status = -1;
  std::string body;
};

/// A request of the micro service on `subject`, with `headers`.
inline nats_answer micro_request(natsConnection* nc, const std::string& subject,
                                 const std::string& body,
                                 const std::map<std::string, std::string>& headers) {
  natsMsg* req = nullptr;
  if (natsMsg_Create(&req, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size())) !=
      NATS_OK)
    return {-1, "cannot create the request"};
  for (const auto& [k, v] : headers) natsMsgHeader_Set(req, k.c_str(), v.c_str());
  natsMsg* reply = nullptr;
  const natsStatus st = natsConnection_RequestMsg(&reply, nc, req, 10'000);
  natsMsg_Destroy(req);
  if (st != NATS_OK) return {-1, natsStatus_GetText(st)};
  const std::string code = header_of(reply, "Nats-Service-Error-Code");
  nats_answer a{code.empty() ? 202 : std::stoi(code), data_of(reply)};
  natsMsg_Destroy(reply);
  return a;
}

/// An intake message (`sy.submit.job`) with `headers`, answered on `inbox` (its `Sy-Reply-To`).
/// With a `Nats-Msg-Id` it is published through JetStream, and again while the stream's
/// duplicate window (100 ms, docs/nats.md) still drops it as a copy of an earlier message.
inline nats_answer intake_request(natsConnection* nc, const std::string& inbox,
                                  const std::string& body,
                                  const std::map<std::string, std::string>& headers) {
  natsSubscription* sub = nullptr;
  if (natsConnection_SubscribeSync(&sub, nc, inbox.c_str()) != NATS_OK)
    return {-1, "cannot subscribe to the reply subject"};
  natsMsg* m = nullptr;
  natsMsg_Create(&m, "sy.submit.job", nullptr, body.data(), static_cast<int>(body.size()));
  natsMsgHeader_Set(m, "Sy-Reply-To", inbox.c_str());
  for (const auto& [k, v] : headers) natsMsgHeader_Set(m, k.c_str(), v.c_str());
  bool sent = false;
  if (headers.count("Nats-Msg-Id") == 0) {
    sent = natsConnection_PublishMsg(nc, m) == NATS_OK;
  } else {
    jsCtx* js = nullptr;
    if (natsConnection_JetStream(&js, nc, nullptr) == NATS_OK)
      sent = wait_for(
          [&] {
            jsPubAck* ack = nullptr;
            const natsStatus st = js_PublishMsg(&ack, js, m, nullptr, nullptr);
            const bool taken = st == NATS_OK && ack != nullptr && !ack->Duplicate;
            jsPubAck_Destroy(ack);
            return taken;
          },
          std::chrono::seconds(10));
    jsCtx_Destroy(js);
  }
  natsMsg_Destroy(m);
  nats_answer a{-1, sent ? "no reply" : "not published"};
  natsMsg* reply = nullptr;
  if (sent && natsSubscription_NextMsg(&reply, sub, 15'000) == NATS_OK) {
    a = {std::stoi(header_of(reply, "Sy-Status")), data_of(reply)};
    natsMsg_Destroy(reply);
  }
  natsSubscription_Destroy(sub);
  return a;
}

}  // namespace sy::test
