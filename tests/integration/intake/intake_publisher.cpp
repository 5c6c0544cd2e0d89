#include "tests/integration/intake/intake_publisher.hpp"

#include <stdexcept>

namespace sy::test {

intake_publisher::intake_publisher(const std::string& url) {
  if (natsConnection_ConnectTo(&nc_, url.c_str()) != NATS_OK)
    throw std::runtime_error("cannot connect to " + url);
  natsInbox* inbox = nullptr;
  natsStatus s = natsInbox_Create(&inbox);
  if (s == NATS_OK) inbox_ = inbox;
  natsInbox_Destroy(inbox);
  if (s == NATS_OK) s = natsConnection_SubscribeSync(&replies_, nc_, inbox_.c_str());
  if (s == NATS_OK) s = natsConnection_Flush(nc_);
  if (s == NATS_OK) s = natsConnection_JetStream(&js_, nc_, nullptr);
  if (s != NATS_OK) throw std::runtime_error(std::string("nats: ") + natsStatus_GetText(s));
}

intake_publisher::~intake_publisher() {
  natsSubscription_Destroy(replies_);
  jsCtx_Destroy(js_);
  natsConnection_Destroy(nc_);
}

intake_publisher::pub_ack intake_publisher::publish(
    const std::string& subject, const std::string& payload, const std::string& msg_id,
    const std::map<std::string, std::string>& headers, bool with_reply) {
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, payload.data(),
                                static_cast<int>(payload.size()));
  for (const auto& [name, value] : headers)
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, name.c_str(), value.c_str());
  if (s == NATS_OK && with_reply) s = natsMsgHeader_Set(msg, "Sy-Reply-To", inbox_.c_str());
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MsgId = msg_id.empty() ? nullptr : msg_id.c_str();
  jsPubAck* pa = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (s == NATS_OK) s = js_PublishMsg(&pa, js_, msg, &po, &jerr);
  natsMsg_Destroy(msg);
  pub_ack out;
  if (s == NATS_OK && pa != nullptr) {
    out.stored = true;
    out.duplicate = pa->Duplicate;
  } else {
    out.error = std::string(natsStatus_GetText(s)) + " (" + std::to_string(jerr) + ")";
  }
  jsPubAck_Destroy(pa);
  return out;
}

std::optional<intake_publisher::reply> intake_publisher::next_reply(
    std::chrono::milliseconds timeout) {
  natsMsg* msg = nullptr;
  if (natsSubscription_NextMsg(&msg, replies_, timeout.count()) != NATS_OK) return std::nullopt;
  reply r;
  const char* status = nullptr;
  if (natsMsgHeader_Get(msg, "Sy-Status", &status) == NATS_OK && status != nullptr)
    r.status = status;
  r.body = nlohmann::json::parse(
      std::string(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))), nullptr,
      false);
  natsMsg_Destroy(msg);
  return r;
}

}  // namespace sy::test
