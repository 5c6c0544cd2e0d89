#pragma once
/// The gateway clients of an engine, by model ("*": the one gateway that serves every model when
/// the `gateway` setting is given). Filled once at start, read-only after: every actor that sends
/// to a gateway is given a pointer to it (its `*_deps`), and the clients' own strands serialize
/// their requests.

#include <utility>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "config/settings.hpp"
#include "runtime/clock.hpp"
#include "runtime/gateway_client.hpp"

namespace sy::actors {

class gateway_table {
 public:
  /// `one_for_all`: every model goes to the "*" entry (the `gateway` setting). The clients time
  /// their retry pauses (and their request durations) with `clock`.
  gateway_table(boost::asio::io_context& exec, const runtime::clock& clock, bool one_for_all)
      : exec_(exec), clock_(clock), one_for_all_(one_for_all) {}

  /// Serves `key` (a model, or "*") by the client made for settings equal to `g` — entries that
  /// are equal share one client and its keep-alive pool — or by a new client on the context.
  void add(const std::string& key, const config::gateway_settings& g) {
    for (const auto& client : clients_) {
      if (client->settings() == g) {
        by_key_[key] = client.get();
        return;
      }
    }
    by_key_[key] = clients_
                       .emplace_back(std::make_unique<runtime::gateway_client>(exec_.get_executor(),
                                                                               g, clock_))
                       .get();
  }

  /// The client for `model`, or nullptr when no gateway serves it.
  runtime::gateway_client* for_model(const std::string& model) const {
    auto it = by_key_.find(one_for_all_ ? std::string("*") : model);
    return it == by_key_.end() ? nullptr : it->second;
  }

  /// Drops every client (before the context they run on goes).
  void clear() {
    by_key_.clear();
    clients_.clear();
  }
  /// Lets go of every client without destroying it (a test whose request is stuck mid-flight).
  void leak() {
    by_key_.clear();
    for (auto& client : clients_) (void)client.release();
    clients_.clear();
  }

 private:
  boost::asio::io_context& exec_;
  const runtime::clock& clock_;
  bool one_for_all_;
  std::vector<std::unique_ptr<runtime::gateway_client>> clients_;
  std::map<std::string, runtime::gateway_client*> by_key_;
};

}  // namespace sy::actors
