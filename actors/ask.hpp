#pragma once
/// Asking an actor from an Asio coroutine: `co_await ask<Reply>(sys, actor, request, timeout)`.
/// The HTTP handlers and the attempt runners live on Asio threads and must never block them, so a
/// short-lived CAF actor makes the request and posts the answer back to the coroutine's executor.

#include <utility>

#include <chrono>
#include <memory>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include "config/result.hpp"

namespace sy::actors {

template <class Reply, class Handle, class Request>
boost::asio::awaitable<result<Reply>> ask(caf::actor_system& sys, Handle target, Request req,
                                          std::chrono::milliseconds timeout) {
  auto initiate = [&](auto handler) {
    using handler_t = decltype(handler);
    auto shared = std::make_shared<handler_t>(std::move(handler));
    auto ex = boost::asio::get_associated_executor(*shared);
    auto complete = [shared, ex](result<Reply> r) {
      boost::asio::post(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
    };
    auto shared_req = std::make_shared<Request>(std::move(req));
    caf::actor_system* system = &sys;
    // The request travels as a spawn argument, not a capture: CAF 0.17 dereferences a null
    // argument tuple for argument-less function actors (UBSan reports it).
    sys.spawn(
        [target, complete, timeout, system](caf::event_based_actor* self,
                                            std::shared_ptr<Request> request) {
          self->request(target, timeout, std::move(*request))
              .then([complete](Reply& reply) { complete(result<Reply>(std::move(reply))); },
                    [complete, system](caf::error& e) {
                      complete(result<Reply>(make_error(
                          "storage_unavailable",
                          "the engine did not answer: " + system->render(e))));
                    });
        },
        std::move(shared_req));
  };
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                                 void(result<Reply>)>(initiate,
                                                                      boost::asio::use_awaitable);
}

}  // namespace sy::actors
