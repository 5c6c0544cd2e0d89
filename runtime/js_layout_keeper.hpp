#pragma once
/// Keeps the JetStream layout (streams) in place for the life of the process: whenever the
/// connection is up and js_client::layout_ready() is false — after a connect that came late
/// (the server was down when the engine started) or after a reconnect (the server may have come
/// back with an empty store) — it runs ensure_layout() on its own thread, retrying every
/// `retry_ms` while it fails. Until the layout is ready the relay's publishes fail and are
/// retried, and the engine reports itself not ready (`/readyz`).

///
/// With a store registration it also keeps the streams claimed for this engine's store: it
/// claims them once the layout is made (while the claim is not held, js_client::consuming() is
/// false and no dispatcher takes tasks), renews the claim every renew_every_ms() and at once
/// after a reconnect, and stops keeping it once another store's engine holds the streams
/// (`lost()` says why; `switchyard serve` then stops).

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/jetstream.hpp"
#include "runtime/store_registration.hpp"

namespace sy::runtime {

class js_layout_keeper {
 public:
  /// Starts the thread `sy-js-layout`; `js` and `registration` must outlive the keeper.
  explicit js_layout_keeper(js_client& js, int64_t poll_ms = 250,
                            store_registration* registration = nullptr);
  js_layout_keeper(const js_layout_keeper&) = delete;
  js_layout_keeper& operator=(const js_layout_keeper&) = delete;
  ~js_layout_keeper();  ///< stops and joins the thread

  /// Why another store's engine holds the streams (empty while this one holds them or claims).
  std::string lost() const;

 private:
  void run();
  /// One step of claiming or renewing the registration (this thread only).
  void keep_registration();

  js_client& js_;
  const int64_t poll_ms_;
  store_registration* registration_;
  bool lost_reported_ = false;  ///< this thread's copy of `!lost_why_.empty()`
  bool waiting_logged_ = false;
  bool renew_failing_ = false;
  int64_t next_renew_ms_ = 0;        ///< steady ms
  int64_t held_at_ms_ = 0;           ///< steady ms of the last claim or renewal that held
  uint64_t renewed_reconnects_ = 0;  ///< js_.reconnects() at the last renewal or claim
  mutable std::mutex mu_;
  std::string lost_why_;  ///< guarded by mu_
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sy::runtime
