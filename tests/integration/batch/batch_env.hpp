#pragma once
/// What the batch integration tests share: a batch_env (engine_env plus upload, create and wait
/// helpers through the batch_service the HTTP API uses), input-line builders and the
/// exactly-once check.

#include <gtest/gtest.h>

#include <utility>

#include <fstream>
#include <future>
#include <set>
#include <sstream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "storage/batch_ops.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/admit.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {

using nlohmann::json;
using storage::batch_record;
using storage::batch_status;

/// Runs one service call to completion on a private io_context. The context outlives every
/// engine (it is static): the writer's thread posts the call's completion into it and may still
/// be inside that post (Asio unlocks, then signals its condition variable) when run() returns, so
/// destroying the context then would race with the writer (ThreadSanitizer saw it).
template <class F>
auto run(F f) {
  using T = typename decltype(f())::value_type;
  static boost::asio::io_context ioc;
  ioc.restart();
  // Boxed: co_spawn's result must be default-constructible, a result<T> is not.
  auto fut = boost::asio::co_spawn(
      ioc, [&]() -> boost::asio::awaitable<std::optional<T>> { co_return co_await f(); },
      boost::asio::use_future);
  ioc.run();
  return std::move(*fut.get());
}

inline const std::vector<std::string> models = {"model-a", "model-b", "model-c"};

/// Points model-a..c at the fake (per-model mode).
inline void per_model_gateways(engine_env& env) {
  auto gw = *env.settings().gateway;
  env.settings().gateway.reset();
  for (const auto& m : models) env.settings().model_gateways[m] = gw;
}

inline json line(const std::string& custom_id, const std::string& model, json fake = json::object(),
                 const std::string& system = "be brief") {
  fake["key"] = custom_id;
  return {{"custom_id", custom_id},
          {"method", "POST"},
          {"url", "/v1/chat/completions"},
          {"body",
           {{"model", model},
            {"messages", json::array({{{"role", "system"}, {"content", system}},
                                      {{"role", "user"}, {"content", "hello " + custom_id}}})},
            {"fake", fake}}}};
}

/// `n` lines `<prefix>0..n-1` for `model`, each with the same fake-gateway behaviour.
inline std::vector<json> lines_of(int n, const std::string& prefix, const std::string& model,
                                  const json& fake = json::object()) {
  std::vector<json> out;
  for (int i = 0; i < n; ++i) out.push_back(line(prefix + std::to_string(i), model, fake));
  return out;
}

inline std::vector<json> operator+(std::vector<json> a, const std::vector<json>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class batch_env : public engine_env {
 public:
  actors::batch_service& svc() { return engine().batches(); }
  /// The engine's front of the batch manager (retry policy, counters: the knobs its actor and
  /// the batches' actors share).
  actors::batch_front& manager() { return dynamic_cast<actors::batch_front&>(svc()); }

  /// Stores `lines` as a batch input file the way an upload does.
  std::string upload(const std::vector<json>& lines, const std::string& tenant = "default") {
    std::string staged = svc().upload_dir() + "/upload-" + std::to_string(next_++) + ".part";
    std::ofstream out(staged, std::ios::binary);
    int64_t bytes = 0;
    for (const auto& l : lines) {
      auto s = l.dump() + "\n";
      out << s;
      bytes += static_cast<int64_t>(s.size());
    }
    out.close();
    storage::file_record f;
    f.id = "file-test" + std::to_string(next_++);
    f.tenant = tenant;
    f.filename = "input.jsonl";
    f.purpose = "batch";
    f.bytes = bytes;
    f.created_at = std::time(nullptr);
    auto r = run([&] {
      return svc().create_file(admit::as_is(actors::staged_file{f, staged, 0}));
    });
    EXPECT_TRUE(r.ok());
    return f.id;
  }

  batch_record create(const std::string& file_id, int64_t window_ms = 86'400'000,
                      int max_inflight = 0, int max_attempts = 0) {
    actors::batch_request req;
    req.max_inflight = max_inflight;
    req.max_attempts = max_attempts;
    req.tenant = "default";
    req.input_file_id = file_id;
    req.endpoint = "/v1/chat/completions";
    req.completion_window = "24h";
    req.completion_window_ms = window_ms;
    auto r = run([&] { return svc().create_batch(admit::as_is(req)); });
    EXPECT_TRUE(r.ok()) << (r ? "" : r.error().message);
    return *r;
  }

  batch_record get(const std::string& id) { return *svc().get_batch("default", id); }
  /// Read from the store directly (also while the engine is stopped).
  batch_record stored(const std::string& id) {
    auto txn = store().begin_read();
    return *storage::get_batch(txn, id);
  }

  batch_record wait_terminal(const std::string& id,
                             std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    batch_record b;
    wait_for(
        [&] {
          b = get(id);
          return storage::is_terminal(b.status);
        },
        deadline);
    return b;
  }

  /// The lines of a stored file, parsed.
  std::vector<json> read_lines(const std::string& file_id) {
    std::vector<json> out;
    if (file_id.empty()) return out;
    std::ifstream in(svc().file_path(file_id));
    std::string l;
    while (std::getline(in, l)) out.push_back(json::parse(l));
    return out;
  }

 private:
  int next_ = 1;
};

/// Every custom id of `expected` appears exactly once across both files.
inline void expect_exactly_once(batch_env& env, const batch_record& b, size_t expected) {
  std::multiset<std::string> seen;
  for (const auto& l : env.read_lines(b.output_file_id))
    seen.insert(l["custom_id"].get<std::string>());
  for (const auto& l : env.read_lines(b.error_file_id))
    seen.insert(l["custom_id"].get<std::string>());
  EXPECT_EQ(seen.size(), expected);
  std::set<std::string> unique(seen.begin(), seen.end());
  EXPECT_EQ(unique.size(), expected) << "a custom_id appears twice";
  EXPECT_EQ(static_cast<size_t>(b.completed + b.failed), expected);
  EXPECT_EQ(static_cast<int64_t>(env.read_lines(b.output_file_id).size()), b.completed);
  EXPECT_EQ(static_cast<int64_t>(env.read_lines(b.error_file_id).size()), b.failed);
}

}  // namespace sy::test
