#pragma once
/// Asking an actor from an Asio coroutine: `co_await ask<R>(sys, target, timeout, xs...)` sends
/// (xs...) as a request from a short-lived helper actor and resumes the coroutine on its own
/// executor with the reply, or with an error when the target fails, is gone or does not answer
/// within `timeout`. One helper actor per call: for calls off the hot path (the worker protocol,
/// actors/worker_service.hpp; the batch manager's requests, actors/batch_front.hpp). Commits have
/// their own ticketed path (actors/write.hpp).

#include <utility>  // before any Asio header

#include <chrono>
#include <memory>
#include <optional>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include "config/result.hpp"

namespace sy::actors {
namespace detail {

/// Completes its handler exactly once: with the reply, or — destroyed unanswered (the helper
/// actor stopped with the system) — with an error.
template <class R, class Handler>
class ask_once {
 public:
  explicit ask_once(Handler h) : handler_(std::move(h)) {}
  ask_once(const ask_once&) = delete;
  ask_once& operator=(const ask_once&) = delete;
  ~ask_once() {
    if (handler_)
      complete(make_error(errc::shutting_down, "the engine stopped before it answered"));
  }
  void complete(result<R> r) {
    if (!handler_) return;
    auto ex = boost::asio::get_associated_executor(*handler_);
    boost::asio::post(ex,
                      [h = std::move(*handler_), r = std::move(r)]() mutable { h(std::move(r)); });
    handler_.reset();
  }

 private:
  std::optional<Handler> handler_;
};

}  // namespace detail

template <class R, class Handle, class... Ts>
boost::asio::awaitable<result<R>> ask(caf::actor_system& sys, Handle target,
                                      std::chrono::milliseconds timeout, Ts... xs) {
  auto initiate = [&](auto handler) {
    using once_ptr = std::shared_ptr<detail::ask_once<R, decltype(handler)>>;
    auto once = std::make_shared<detail::ask_once<R, decltype(handler)>>(std::move(handler));
    // `once` travels as a spawn argument, not only a capture: CAF 0.17 dereferences the null
    // tuple of a function spawned without arguments (UBSan reports it).
    sys.spawn(
        [target, timeout, xs...](caf::event_based_actor* self, once_ptr o) {
          self->request(target, timeout, xs...)
              .then([o](R& r) { o->complete(std::move(r)); },
                    [o, self](caf::error& e) {
                      o->complete(make_error(
                          errc::internal_error,
                          "an engine actor did not answer: " + self->system().render(e)));
                    });
        },
        std::move(once));
  };
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                                 void(result<R>)>(initiate,
                                                                  boost::asio::use_awaitable);
}

}  // namespace sy::actors
