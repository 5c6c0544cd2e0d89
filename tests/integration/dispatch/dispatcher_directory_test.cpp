// The dispatcher directory (actors/dispatcher_directory.hpp) on a real actor system (threads),
// with a real nats-server behind the dispatchers that take their models' queues:
//  - the first ask for a model spawns its dispatcher, later asks get the same one, and asks
//    from many threads at once for a new model get one dispatcher between them;
//  - the max_models bound counts only the models whose queues are taken, refuses the model
//    over it (too_many_models, naming its parameter) and changes nothing when it refuses; a
//    model without a gateway is refused (model_not_found);
//  - the models whose queues are taken are published in `queued_models` (a submission's hot path);
//  - `stop` stops every dispatcher it spawned, and the directory ends with them.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/dispatcher_directory.hpp"
#include "actors/engine_context.hpp"
#include "actors/global_budget.hpp"
#include "runtime/nats_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using actors::dispatchers_found;
using actors::dispatchers_wanted;

class dispatcher_directory : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::nats_server_options o;
    o.store_dir = dir_.sub("nats");
    o.log_file = dir_.sub("nats.log");
    auto n = runtime::nats_server::start(o);
    ASSERT_TRUE(n) << n.error().message;
    nats_ = std::move(n.value());
    auto js = runtime::js_client::connect(nats_->url(), "directory-test", {}, 5'000);
    ASSERT_TRUE(js) << js.error().message;
    js_ = std::move(js.value());
    ASSERT_TRUE(js_->ensure_layout());

    cfg_.data_dir = dir_.path();
    cfg_.max_models = 2;
    caf_cfg_ = std::make_unique<caf::actor_system_config>();
    caf_cfg_->set("logger.console", caf::atom("none"));
    sys_ = std::make_unique<caf::actor_system>(*caf_cfg_);
    ctx_ = std::make_unique<actors::engine_context>(*sys_, cfg_, clock_, *js_, io_);
    config::gateway_settings gw;
    gw.url = "http://127.0.0.1:9";  // never called: no job runs here
    for (const char* m : {"m1", "m2", "m3"}) ctx_->gateways.add(m, gw);
    ctx_->budget = actors::spawn_global_budget(*sys_, cfg_.global_concurrency);
    directory_ = actors::spawn_dispatcher_directory(ctx_->dispatcher(), view_);
  }

  void TearDown() override {
    if (!sys_) return;
    if (directory_) ask_stop();
    caf::anon_send_exit(ctx_->budget, caf::exit_reason::user_shutdown);
    ctx_->budget = nullptr;
    for (int i = 0; i < 500 && sys_->registry().running() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(sys_->registry().running(), 0u) << "actors still running after stop";
    // As engine::shutdown: CAF 0.17's system destructor waits for detached actors' threads (the
    // dispatchers' fetchers) that never see their last reference go; every actor has ended.
    ctx_->gateways.clear();
    (void)sys_.release();
    (void)caf_cfg_.release();
  }

  dispatchers_found ask(dispatchers_wanted w) {
    dispatchers_found out;
    caf::scoped_actor self{*sys_};
    self->request(directory_, std::chrono::seconds(10), std::move(w))
        .receive([&](dispatchers_found& f) { out = std::move(f); },
                 [&](caf::error& e) { ADD_FAILURE() << sys_->render(e); });
    return out;
  }

  int32_t ask_stop() {
    int32_t stopped = -1;
    caf::scoped_actor self{*sys_};
    self->request(directory_, std::chrono::seconds(10), actors::stop_atom::value)
        .receive([&](int32_t n) { stopped = n; },
                 [&](caf::error& e) { ADD_FAILURE() << sys_->render(e); });
    directory_ = nullptr;
    return stopped;
  }

  temp_dir dir_;
  std::unique_ptr<runtime::nats_server> nats_;
  std::unique_ptr<runtime::js_client> js_;
  config::settings cfg_;
  runtime::manual_clock clock_{1'800'000'000'000};
  boost::asio::io_context io_;
  std::unique_ptr<caf::actor_system_config> caf_cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::unique_ptr<actors::engine_context> ctx_;
  std::shared_ptr<actors::queued_models> view_ = std::make_shared<actors::queued_models>();
  actors::dispatcher_directory_actor directory_;
};

TEST_F(dispatcher_directory, the_first_ask_spawns_a_models_dispatcher_and_later_asks_get_it) {
  auto first = ask({{"m1", "m2"}, {}, false, false});
  ASSERT_TRUE(first.refusal.code.empty()) << first.refusal.message;
  ASSERT_EQ(first.owners.size(), 2u);
  EXPECT_NE(first.owners[0], first.owners[1]) << "one dispatcher per model";
  EXPECT_EQ(first.queued_models, 0) << "a budget-only ask takes no queue";
  EXPECT_FALSE(view_->has_all({"m1"}));
  auto again = ask({{"m2", "m1"}, {"p2", "p1"}, true, false});
  ASSERT_TRUE(again.refusal.code.empty()) << again.refusal.message;
  ASSERT_EQ(again.owners.size(), 2u);
  EXPECT_EQ(again.owners[0], first.owners[1]);
  EXPECT_EQ(again.owners[1], first.owners[0]);
  EXPECT_EQ(again.queued_models, 2);
  EXPECT_TRUE(view_->has_all({"m1", "m2"})) << "the queued models are published";
  EXPECT_FALSE(view_->has_all({"m1", "m3"}));
}

TEST_F(dispatcher_directory, asks_from_many_threads_for_a_new_model_get_one_dispatcher) {
  constexpr int threads = 8;
  std::vector<actors::slot_owner_actor> got(threads);
  std::atomic<int> go{0};
  std::vector<std::thread> askers;
  for (int i = 0; i < threads; ++i)
    askers.emplace_back([&, i] {
      ++go;
      while (go.load() < threads) std::this_thread::yield();  // all ask at about the same time
      auto f = ask({{"m3"}, {"body.model"}, i % 2 == 0, false});
      if (f.owners.size() == 1) got[i] = f.owners[0];
    });
  for (auto& t : askers) t.join();
  std::set<caf::actor_addr> distinct;
  for (const auto& h : got) {
    ASSERT_TRUE(h) << "an ask got no dispatcher";
    distinct.insert(h.address());
  }
  EXPECT_EQ(distinct.size(), 1u);
  EXPECT_EQ(ask({{"m3"}, {}, false, false}).queued_models, 1);
}

TEST_F(dispatcher_directory, max_models_bounds_the_queued_models_and_a_refusal_changes_nothing) {
  ASSERT_TRUE(ask({{"m1"}, {"body.model"}, true, false}).refusal.code.empty());
  // Budget only: it does not count toward the bound.
  ASSERT_TRUE(ask({{"m3"}, {}, false, false}).refusal.code.empty());
  // Two new models with one place left: the second is refused, and the first is not taken.
  auto over = ask({{"m2", "m3"}, {"tasks[0].model", "tasks[1].model"}, true, false});
  EXPECT_EQ(over.refusal.code, errc::too_many_models);
  EXPECT_EQ(over.refusal.param, "tasks[1].model");
  EXPECT_NE(over.refusal.message.find("already queues jobs for 1 distinct models"),
            std::string::npos)
      << over.refusal.message;
  EXPECT_TRUE(over.owners.empty());
  EXPECT_FALSE(view_->has_all({"m2"})) << "a refused ask took a queue";
  auto one = ask({{"m2"}, {"body.model"}, true, false});
  ASSERT_TRUE(one.refusal.code.empty()) << one.refusal.message;
  EXPECT_EQ(one.queued_models, 2);
  auto full = ask({{"m3"}, {"body.model"}, true, false});
  EXPECT_EQ(full.refusal.code, errc::too_many_models);
  EXPECT_EQ(full.refusal.param, "body.model");
  // A model already queued is never refused; a model known to this store is taken at start
  // whatever the bound.
  EXPECT_TRUE(ask({{"m1", "m2"}, {}, true, false}).refusal.code.empty());
  EXPECT_EQ(ask({{"m3"}, {}, true, true}).queued_models, 3);
  // A model no gateway serves.
  auto unknown = ask({{"m1", "nobody"}, {"a", "b"}, true, false});
  EXPECT_EQ(unknown.refusal.code, errc::model_not_found);
  EXPECT_EQ(unknown.refusal.param, "b");
}

TEST_F(dispatcher_directory, stop_stops_every_dispatcher_and_the_directory) {
  auto found = ask({{"m1", "m2", "m3"}, {}, false, false});
  ASSERT_EQ(found.owners.size(), 3u);
  ASSERT_TRUE(ask({{"m1"}, {}, true, false}).refusal.code.empty());  // one with a fetcher
  caf::scoped_actor watcher{*sys_};
  for (const auto& h : found.owners) watcher->monitor(h);
  auto directory = directory_;
  watcher->monitor(directory);
  EXPECT_EQ(ask_stop(), 3);
  EXPECT_FALSE(view_->has_all({"m1"})) << "a stopped directory still shows a queue";
  std::set<caf::actor_addr> down;
  for (int i = 0; i < 4; ++i)
    watcher->receive([&](caf::down_msg& m) { down.insert(m.source); },
                     caf::after(std::chrono::seconds(10)) >> [] { ADD_FAILURE() << "no down"; });
  EXPECT_EQ(down.size(), 4u);
  EXPECT_EQ(down.count(directory.address()), 1u);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
