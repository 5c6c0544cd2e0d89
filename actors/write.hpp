#pragma once
/// Committing through the storage writer from an Asio coroutine:
/// `co_await write(writer, write_request{op})`. The operation travels as a write_call whose
/// callback posts the outcome back to the coroutine's executor — no actor, no request, no timer
/// per write. If the writer is gone and drops the message, the callback is destroyed uncalled and
/// the coroutine gets a storage_unavailable error instead of waiting forever.

#include <utility>

#include <memory>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <caf/send.hpp>

#include "actors/storage_writer.hpp"
#include "config/result.hpp"

namespace sy::actors {
namespace detail {

/// Completes `handler` exactly once: with the writer's reply, or with an error when destroyed
/// before that.
template <class Handler>
struct reply_once {
  explicit reply_once(Handler h) : handler(std::move(h)) {}
  reply_once(const reply_once&) = delete;
  reply_once& operator=(const reply_once&) = delete;
  ~reply_once() {
    if (!called)
      complete(result<write_reply>(
          make_error("storage_unavailable", "the storage writer is gone; nothing was written")));
  }

  void complete(result<write_reply> r) {
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
    auto once = std::make_shared<detail::reply_once<decltype(handler)>>(std::move(handler));
    caf::anon_send(writer, write_call{std::move(req.op), [once](write_reply r) {
                                        once->complete(result<write_reply>(std::move(r)));
                                      }});
  };
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                                 void(result<write_reply>)>(
      initiate, boost::asio::use_awaitable);
}

}  // namespace sy::actors
