#pragma once
/// What the system tests that speak NATS to the engine (as a client would, with nats.c) share:
/// a connection that closes itself, and a received message's header and payload.

#include <nats/nats.h>

#include <string>

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

}  // namespace sy::test
