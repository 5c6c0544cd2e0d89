#include "tests/integration/nats/nats_env.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <thread>

namespace sy::test {

nats_env::nats_env(runtime::js_layout layout) {
  char tmpl[] = "/tmp/sy-nats-test-XXXXXX";
  const char* made = ::mkdtemp(tmpl);
  if (made == nullptr) throw std::runtime_error("mkdtemp failed");
  dir = made;
  runtime::nats_server_options opts;
  opts.store_dir = dir + "/store";
  opts.log_file = dir + "/nats.log";
  auto started = runtime::nats_server::start(opts);
  if (!started) throw std::runtime_error("nats-server: " + started.error().message);
  server = std::move(*started);
  client = connect(std::move(layout));
  auto st = client->ensure_layout();
  if (!st) throw std::runtime_error("ensure_layout: " + st.error().message);
}

nats_env::~nats_env() {
  client.reset();
  server.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

std::unique_ptr<runtime::js_client> nats_env::connect(runtime::js_layout layout) {
  auto c = runtime::js_client::connect(server->url(), "sy-test", std::move(layout), 5000);
  if (!c) throw std::runtime_error("connect: " + c.error().message);
  return std::move(*c);
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::optional<runtime::js_message> fetch_one(runtime::pull_subscription& sub,
                                             std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto got = sub.fetch(1, left.count());
    if (got && !got->empty()) return std::move(got->front());
    // A fetch error (e.g. while reconnecting) is retried until the deadline.
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int64_t ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace sy::test
