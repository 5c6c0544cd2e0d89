#pragma once
/// Keeps the JetStream layout (streams) in place for the life of the process: whenever the
/// connection is up and js_client::layout_ready() is false — after a connect that came late
/// (the server was down when the engine started) or after a reconnect (the server may have come
/// back with an empty store) — it runs ensure_layout() on its own thread, retrying every
/// `retry_ms` while it fails. Until the layout is ready the relay's publishes fail and are
/// retried, and the engine reports itself not ready (`/readyz`).

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "runtime/jetstream.hpp"

namespace sy::runtime {

class js_layout_keeper {
 public:
  /// Starts the thread `sy-js-layout`; `js` must outlive the keeper.
  explicit js_layout_keeper(js_client& js, int64_t poll_ms = 250);
  js_layout_keeper(const js_layout_keeper&) = delete;
  js_layout_keeper& operator=(const js_layout_keeper&) = delete;
  ~js_layout_keeper();  ///< stops and joins the thread

 private:
  void run();

  js_client& js_;
  const int64_t poll_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sy::runtime
