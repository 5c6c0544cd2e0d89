#include "runtime/js_layout_keeper.hpp"

#include <chrono>

#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"

namespace sy::runtime {

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

js_layout_keeper::js_layout_keeper(js_client& js, int64_t poll_ms, store_registration* registration)
    : js_(js),
      poll_ms_(poll_ms),
      registration_(registration),
      // A registration given here was claimed by the caller just now.
      next_renew_ms_(registration != nullptr ? steady_ms() + registration->renew_every_ms() : 0),
      held_at_ms_(steady_ms()),
      renewed_reconnects_(js.reconnects()),
      thread_([this] { run(); }) {}

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
    if (registration_ != nullptr && !lost_reported_ && js_.layout_ready()) keep_registration();
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(poll_ms_), [this] { return stop_; });
  }
}

std::string js_layout_keeper::lost() const {
  std::lock_guard lock(mu_);
  return lost_why_;
}

void js_layout_keeper::keep_registration() {
  using state = store_registration::state;
  const int64_t now = steady_ms();
  state st;
  if (!registration_->held()) {
    st = registration_->try_claim(now);
  } else if (now >= next_renew_ms_ || js_.reconnects() != renewed_reconnects_) {
    // At once after a reconnect: the server may be another one, or back without its store.
    st = registration_->renew();
  } else {
    return;
  }
  switch (st) {
    case state::held:
      if (!js_.consuming()) log::info("registry", "the streams are claimed for this store");
      js_.set_consuming(true);
      next_renew_ms_ = now + registration_->renew_every_ms();
      held_at_ms_ = now;
      renewed_reconnects_ = js_.reconnects();
      waiting_logged_ = renew_failing_ = false;
      return;
    case state::waiting:
      js_.set_consuming(false);
      if (!waiting_logged_)
        log::warn("registry",
                  "another store's engine is registered on these streams; waiting "
                  "to see whether it still renews its lease",
                  {{"other", registration_->other()}});
      waiting_logged_ = true;
      return;
    case state::conflict:
      js_.set_consuming(false);
      lost_reported_ = true;
      log::error("registry",
                 "another store's engine holds the streams; this engine stops taking "
                 "tasks",
                 {{"error", registration_->conflict()}});
      {
        std::lock_guard lock(mu_);
        lost_why_ = registration_->conflict();
      }
      return;
    case state::unavailable:
      if (!renew_failing_)
        log::warn("registry", "cannot claim or renew the store's registration; retrying",
                  {{"error", registration_->last_error()}});
      renew_failing_ = true;
      // Not renewed for a whole lease: another store's engine may have taken the streams over.
      if (registration_->held() && now - held_at_ms_ >= registration_->lease_ms())
        js_.set_consuming(false);
      return;
  }
}

}  // namespace sy::runtime
