// The NATS micro service library (api/nats_micro.hpp) against a real nats-server on a random
// port: endpoint replies (returned and asynchronous), discovery (PING, INFO, STATS), error
// headers, load balancing over a queue group, and no answer after the service is gone.

#include "api/nats_micro.hpp"

#include <gtest/gtest.h>
#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/clock.hpp"
#include "runtime/nats_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"

namespace sy::api {
namespace SY_UNITY_ID {

using json = nlohmann::json;
using std::chrono::milliseconds;

/// An owned connection (destroyed, and so closed, with the object).
struct connection {
  natsConnection* nc = nullptr;
  connection() = default;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() { natsConnection_Destroy(nc); }
};

/// An owned message.
struct message {
  natsMsg* msg = nullptr;
  message() = default;
  message(const message&) = delete;
  message& operator=(const message&) = delete;
  ~message() { natsMsg_Destroy(msg); }
  std::string data() const {
    return {natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))};
  }
  std::string header(const char* key) const {
    const char* v = nullptr;
    return natsMsgHeader_Get(msg, key, &v) == NATS_OK && v != nullptr ? v : "";
  }
};

class NatsMicro : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::nats_server_options o;
    o.store_dir = dir_.sub("store");
    o.log_file = dir_.sub("nats.log");
    auto s = runtime::nats_server::start(o);
    ASSERT_TRUE(s) << s.error().message;
    server_ = std::move(*s);
    client_ = connect();
    ASSERT_NE(client_->nc, nullptr);
  }

  std::unique_ptr<connection> connect() {
    auto c = std::make_unique<connection>();
    EXPECT_EQ(natsConnection_ConnectTo(&c->nc, server_->url().c_str()), NATS_OK);
    return c;
  }

  micro_config config(std::string name, std::vector<micro_endpoint> endpoints) {
    micro_config c;
    c.name = std::move(name);
    c.version = "1.2.3";
    c.description = "a test service";
    c.endpoints = std::move(endpoints);
    c.started_ms = clock_.now_ms();
    return c;
  }

  std::unique_ptr<micro_service> start(natsConnection* nc, micro_config c) {
    auto s = micro_service::start(nc, std::move(c));
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? std::move(*s) : nullptr;
  }

  /// A request from the client connection; the status, and the reply when there is one.
  natsStatus request(const std::string& subject, const std::string& data, message& reply,
                     int64_t timeout_ms = 5'000) {
    return natsConnection_RequestString(&reply.msg, client_->nc, subject.c_str(), data.c_str(),
                                        timeout_ms);
  }

  /// Publishes an empty request on `subject` and collects the JSON replies (discovery subjects
  /// may have several responders) until `want` arrived or `window` passed.
  std::vector<json> gather(const std::string& subject, size_t want, milliseconds window) {
    natsInbox* inbox = nullptr;
    natsSubscription* sub = nullptr;
    EXPECT_EQ(natsInbox_Create(&inbox), NATS_OK);
    EXPECT_EQ(natsConnection_SubscribeSync(&sub, client_->nc, inbox), NATS_OK);
    EXPECT_EQ(natsConnection_PublishRequestString(client_->nc, subject.c_str(), inbox, ""),
              NATS_OK);
    std::vector<json> out;
    const auto deadline = std::chrono::steady_clock::now() + window;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || out.size() >= want) break;
      message m;
      if (natsSubscription_NextMsg(&m.msg, sub, left.count()) != NATS_OK) break;
      out.push_back(json::parse(m.data()));
    }
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    return out;
  }

  /// The first JSON reply on `subject` (one responder expected).
  json ask(const std::string& subject) {
    message m;
    EXPECT_EQ(request(subject, "", m), NATS_OK) << subject;
    return m.msg == nullptr ? json() : json::parse(m.data());
  }

  test::temp_dir dir_;
  runtime::system_clock_source clock_;
  std::unique_ptr<runtime::nats_server> server_;
  std::unique_ptr<connection> client_;
};

micro_endpoint echo(std::string name, std::string subject) {
  return {std::move(name),
          std::move(subject),
          sync_handler([](const micro_request& r) {
            if (r.data == "fail") return micro_reply::failure(400, "bad input", "no");
            micro_reply out{"echo:" + r.data, {{"X-Seen", r.header("x-trace").value_or("")}}, {}};
            return out;
          }),
          {{"kind", "echo"}}};
}

TEST_F(NatsMicro, EndpointAnswersWithTheHandlersReply) {
  auto svc = start(client_->nc, config("echo", {echo("echo", "svc.echo")}));
  ASSERT_NE(svc, nullptr);
  natsMsg* req = nullptr;
  ASSERT_EQ(natsMsg_Create(&req, "svc.echo", nullptr, "hi", 2), NATS_OK);
  ASSERT_EQ(natsMsgHeader_Set(req, "X-Trace", "t-1"), NATS_OK);
  message reply;
  ASSERT_EQ(natsConnection_RequestMsg(&reply.msg, client_->nc, req, 5'000), NATS_OK);
  natsMsg_Destroy(req);
  EXPECT_EQ(reply.data(), "echo:hi");
  EXPECT_EQ(reply.header("X-Seen"), "t-1");
  EXPECT_EQ(reply.header("Nats-Service-Error-Code"), "");
}

TEST_F(NatsMicro, AsyncResponderAnswersFromAnotherThread) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::string, micro_responder>> queue;
  bool done = false;
  micro_endpoint ep{"later",
                    "svc.later",
                    [&](const micro_request& r, micro_responder responder) {
                      std::lock_guard lock(mu);
                      queue.emplace_back(r.data, std::move(responder));
                      cv.notify_one();
                    },
                    {}};
  std::thread worker([&] {  // answers after the handler returned, as after a durable commit
    std::unique_lock lock(mu);
    while (!done) {
      cv.wait(lock, [&] { return done || !queue.empty(); });
      while (!queue.empty()) {
        auto [data, responder] = std::move(queue.front());
        queue.pop_front();
        EXPECT_TRUE(responder.respond({"committed:" + data, {}, std::nullopt}));
        EXPECT_TRUE(responder.answered());
        EXPECT_FALSE(responder.respond({"twice", {}, std::nullopt}));  // only once
      }
    }
  });
  auto svc = start(client_->nc, config("later", {ep}));
  message reply;
  EXPECT_EQ(request("svc.later", "job-1", reply), NATS_OK);
  if (reply.msg != nullptr) {
    EXPECT_EQ(reply.data(), "committed:job-1");
  }
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_one();
  worker.join();
}

TEST_F(NatsMicro, DroppedResponderAnswersWithAnError) {
  micro_endpoint ep{"drop", "svc.drop", [](const micro_request&, micro_responder) {}, {}};
  auto svc = start(client_->nc, config("drop", {ep}));
  message reply;
  ASSERT_EQ(request("svc.drop", "x", reply), NATS_OK);
  EXPECT_EQ(reply.header("Nats-Service-Error-Code"), "500");
  EXPECT_EQ(svc->stats().at(0).num_errors, 1u);
}

TEST_F(NatsMicro, PingAndInfoDescribeTheService) {
  auto svc = start(client_->nc, config("calc", {echo("add", "calc.add"), echo("sub", "calc.sub")}));
  ASSERT_NE(svc, nullptr);
  EXPECT_EQ(svc->id().size(), 22u);
  json ping = ask("$SRV.PING");
  EXPECT_EQ(ping["type"], "io.nats.micro.v1.ping_response");
  EXPECT_EQ(ping["name"], "calc");
  EXPECT_EQ(ping["id"], svc->id());
  EXPECT_EQ(ping["version"], "1.2.3");
  EXPECT_EQ(ask("$SRV.PING.calc")["id"], svc->id());
  EXPECT_EQ(ask("$SRV.PING.calc." + svc->id())["id"], svc->id());
  for (const std::string& subject :
       std::vector<std::string>{"$SRV.INFO.calc", "$SRV.INFO.calc." + svc->id()}) {
    json info = ask(subject);
    EXPECT_EQ(info["type"], "io.nats.micro.v1.info_response") << subject;
    EXPECT_EQ(info["name"], "calc");
    EXPECT_EQ(info["id"], svc->id());
    EXPECT_EQ(info["description"], "a test service");
    ASSERT_EQ(info["endpoints"].size(), 2u);
    EXPECT_EQ(info["endpoints"][0]["name"], "add");
    EXPECT_EQ(info["endpoints"][0]["subject"], "calc.add");
    EXPECT_EQ(info["endpoints"][0]["queue_group"], "q");
    EXPECT_EQ(info["endpoints"][0]["metadata"]["kind"], "echo");
    EXPECT_EQ(info["endpoints"][1]["subject"], "calc.sub");
  }
}

TEST_F(NatsMicro, StatsCountRequestsAndErrors) {
  auto svc = start(client_->nc, config("stats", {echo("echo", "stats.echo")}));
  ASSERT_NE(svc, nullptr);
  for (int i = 0; i < 3; ++i) {
    message ok;
    ASSERT_EQ(request("stats.echo", "ok", ok), NATS_OK);
  }
  for (int i = 0; i < 2; ++i) {
    message bad;
    ASSERT_EQ(request("stats.echo", "fail", bad), NATS_OK);
    EXPECT_EQ(bad.data(), "no");
    EXPECT_EQ(bad.header("Nats-Service-Error"), "bad input");
    EXPECT_EQ(bad.header("Nats-Service-Error-Code"), "400");
  }
  json stats = ask("$SRV.STATS.stats." + svc->id());
  EXPECT_EQ(stats["type"], "io.nats.micro.v1.stats_response");
  EXPECT_EQ(stats["name"], "stats");
  EXPECT_TRUE(stats["started"].get<std::string>().ends_with("Z"));
  ASSERT_EQ(stats["endpoints"].size(), 1u);
  const json& ep = stats["endpoints"][0];
  EXPECT_EQ(ep["name"], "echo");
  EXPECT_EQ(ep["num_requests"], 5);
  EXPECT_EQ(ep["num_errors"], 2);
  EXPECT_EQ(ep["last_error"], "400:bad input");
  EXPECT_GT(ep["processing_time"].get<int64_t>(), 0);
  EXPECT_EQ(ep["average_processing_time"].get<int64_t>(), ep["processing_time"].get<int64_t>() / 5);
}

TEST_F(NatsMicro, QueueGroupSharesRequestsAndPingReachesEveryInstance) {
  auto second = connect();
  std::atomic<int> a_count{0}, b_count{0};
  auto counting = [](std::atomic<int>& n) {
    return micro_endpoint{"work",
                          "lb.work",
                          sync_handler([&n](const micro_request&) {
                            ++n;
                            return micro_reply{"ok", {}, std::nullopt};
                          }),
                          {}};
  };
  auto a = start(client_->nc, config("lb", {counting(a_count)}));
  auto b = start(second->nc, config("lb", {counting(b_count)}));
  ASSERT_TRUE(a && b);
  ASSERT_EQ(natsConnection_Flush(second->nc), NATS_OK);  // b's subscriptions reached the server
  for (int i = 0; i < 20; ++i) {
    message reply;
    ASSERT_EQ(request("lb.work", std::to_string(i), reply), NATS_OK);
  }
  EXPECT_EQ(a_count + b_count, 20);
  EXPECT_GT(a_count, 0);
  EXPECT_GT(b_count, 0);
  std::set<std::string> ids;
  for (const json& pong : gather("$SRV.PING.lb", 2, milliseconds(5'000))) {
    EXPECT_EQ(pong["type"], "io.nats.micro.v1.ping_response");
    ids.insert(pong["id"].get<std::string>());
  }
  EXPECT_EQ(ids, (std::set<std::string>{a->id(), b->id()}));
}

TEST_F(NatsMicro, NoAnswerAfterTheServiceIsDestroyed) {
  auto svc = start(client_->nc, config("gone", {echo("echo", "gone.echo")}));
  ASSERT_NE(svc, nullptr);
  message before;
  ASSERT_EQ(request("gone.echo", "x", before), NATS_OK);
  const std::string id = svc->id();
  svc.reset();  // stop(): drains the subscriptions and waits for their callbacks
  message after;
  const natsStatus s = request("gone.echo", "x", after, 500);
  // The server answers "no responders" when nobody listens; older servers let the request time out.
  EXPECT_TRUE(s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT) << natsStatus_GetText(s);
  EXPECT_TRUE(gather("$SRV.PING.gone." + id, 1, milliseconds(300)).empty());
}

TEST_F(NatsMicro, ResponderOutlivesItsService) {
  std::mutex mu;
  std::optional<micro_responder> kept;
  micro_endpoint ep{"keep",
                    "keep.it",
                    [&](const micro_request&, micro_responder r) {
                      std::lock_guard lock(mu);
                      kept.emplace(std::move(r));
                    },
                    {}};
  auto svc = start(client_->nc, config("keep", {ep}));
  ASSERT_NE(svc, nullptr);
  natsInbox* inbox = nullptr;
  natsSubscription* sub = nullptr;
  ASSERT_EQ(natsInbox_Create(&inbox), NATS_OK);
  ASSERT_EQ(natsConnection_SubscribeSync(&sub, client_->nc, inbox), NATS_OK);
  ASSERT_EQ(natsConnection_PublishRequestString(client_->nc, "keep.it", inbox, "x"), NATS_OK);
  ASSERT_TRUE(test::wait_for([&] {
    std::lock_guard lock(mu);
    return kept.has_value();
  }));
  svc.reset();  // the request was received before: its responder still answers
  EXPECT_TRUE(kept->respond({"late", {}, std::nullopt}));
  message reply;
  EXPECT_EQ(natsSubscription_NextMsg(&reply.msg, sub, 5'000), NATS_OK);
  if (reply.msg != nullptr) {
    EXPECT_EQ(reply.data(), "late");
  }
  natsSubscription_Destroy(sub);
  natsInbox_Destroy(inbox);
}

TEST_F(NatsMicro, StopsAfterItsConnectionClosed) {
  auto own = connect();
  auto c = config("closed", {echo("echo", "closed.echo")});
  c.stop_timeout_ms = 2'000;
  auto svc = start(own->nc, std::move(c));
  ASSERT_NE(svc, nullptr);
  natsConnection_Close(own->nc);
  // Closing the connection closed the subscriptions: nothing is left to wait for.
  auto st = svc->stop();
  EXPECT_TRUE(st) << (st ? "" : st.error().message);
}

TEST_F(NatsMicro, InvalidConfigurationIsRefused) {
  auto bad_name = micro_service::start(client_->nc, config("no spaces", {echo("e", "x.e")}));
  ASSERT_FALSE(bad_name);
  EXPECT_EQ(bad_name.error().code, "invalid_config");
  auto c = config("ok", {echo("e", "x.e")});
  c.version = "1.0";
  EXPECT_FALSE(micro_service::start(client_->nc, c));
  EXPECT_FALSE(micro_service::start(client_->nc, config("ok", {echo("e", "a..b")})));
  EXPECT_FALSE(micro_service::start(client_->nc, config("ok", {})));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
