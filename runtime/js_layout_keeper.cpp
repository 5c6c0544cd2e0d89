#include "runtime/js_layout_keeper.hpp"

#include <chrono>

#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"

namespace sy::runtime {

js_layout_keeper::js_layout_keeper(js_client& js, int64_t poll_ms)
    : js_(js), poll_ms_(poll_ms), thread_([this] { run(); }) {}

js_layout_keeper::~js_layout_keeper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void js_layout_keeper::run() {
  name_this_thread("sy-js-layout");
  // Polling the connection's state costs nothing at this rate, and unlike nats.c's connection
  // callbacks it needs no pointer into this object from the library's threads.
  bool failing = false;
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    if (js_.connected() && !js_.layout_ready()) {
      if (auto st = js_.ensure_layout(); st) {
        log::info("nats", "JetStream streams are in place", {{"reconnects", js_.reconnects()}});
        failing = false;
      } else if (!failing) {
        log::warn("nats", "cannot create the JetStream streams yet; retrying",
                  {{"error", st.error().message}});
        failing = true;
      }
    }
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(poll_ms_), [this] { return stop_; });
  }
}

}  // namespace sy::runtime
