#pragma once
/// Committing through the storage writer from an Asio coroutine:
/// `write_request req{op}; co_await write(writer, std::move(req));` — the request named, not a
/// temporary in the co_await expression (GCC 12 destroys such temporaries twice). The coroutine's
/// completion handler becomes a waiter filed under a ticket in the writer's slot of write_tickets
/// (actors/detail/write_tickets.hpp); the operation travels as a write_call carrying that ticket,
/// and the writer completes the waiter after the commit, posting the outcome back to the
/// coroutine's executor — no actor, no request, no timer per write. If the writer is gone (no
/// slot, or its slot closes with the call still unanswered), the waiter is destroyed uncompleted
/// and the coroutine gets a storage_unavailable error instead of waiting forever.

#include <utility>

#include <memory>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <caf/send.hpp>

#include "actors/detail/write_tickets.hpp"
#include "actors/storage_writer.hpp"
#include "config/result.hpp"

namespace sy::actors {
namespace detail {

/// Completes `handler` exactly once: with the writer's reply, or with an error when destroyed
/// before that.
template <class Handler>
struct reply_once final : write_waiter {
  explicit reply_once(Handler h) : handler(std::move(h)) {}
  reply_once(const reply_once&) = delete;
  reply_once& operator=(const reply_once&) = delete;
  ~reply_once() override {
    if (!called)
      complete(result<write_reply>(make_error(errc::storage_unavailable,
                                              "the storage writer is gone; nothing was written")));
  }

  void complete(result<write_reply> r) override {
    called = true;
    auto ex = boost::asio::get_associated_executor(handler);
    auto resume = [h = std::move(handler), r = std::move(r)]() mutable { h(std::move(r)); };
    if (auto* batch = completion_batch::current()) {
      batch->add(ex, std::move(resume));  // the writer posts it with the commit's other answers
    } else {
      boost::asio::post(ex, std::move(resume));
    }
  }

  Handler handler;
  bool called = false;
};

}  // namespace detail

inline boost::asio::awaitable<result<write_reply>> write(storage_writer_actor writer,
                                                         write_request req) {
  auto initiate = [&](auto handler) {
    auto waiter = std::make_unique<detail::reply_once<decltype(handler)>>(std::move(handler));
    auto key = detail::key_of(writer);
    // Refused (no writer): the waiter is destroyed, which completes it with storage_unavailable.
    if (auto ticket = detail::write_tickets::process().add(key, std::move(waiter)))
      caf::anon_send(writer, write_call{std::move(req.op), *ticket});
  };
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                                 void(result<write_reply>)>(
      initiate, boost::asio::use_awaitable);
}

}  // namespace sy::actors
