#pragma once
/// Clock timers that speak to an actor: a timer of the engine's clock (runtime/clock.hpp) lives
/// on a strand of the execution context; when it fires, the actor gets a message. The timer's
/// methods run on its strand only, so an actor arms and disarms it by posting there.

#include <utility>  // before any Asio header (Boost 1.74)

#include <cstdint>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <caf/send.hpp>

#include "runtime/clock.hpp"

namespace sy::actors::detail {

/// Arms `t`, sending `Atom` to `me` once `delay_ms` of the clock's time has passed.
template <class Atom, class Handle>
void arm(const std::shared_ptr<runtime::timer>& t, int64_t delay_ms, Handle me) {
  boost::asio::post(t->executor(), [t, delay_ms, me = std::move(me)] {
    t->wait(delay_ms, [me](bool fired) {
      if (fired) caf::anon_send(me, Atom::value);
    });
  });
}

/// `arm`, making `t` first when the actor has none yet: a timer of `clock` on a strand of `exec`.
template <class Atom, class Handle>
void arm_on(std::shared_ptr<runtime::timer>& t, const runtime::clock& clock,
            boost::asio::io_context& exec, int64_t delay_ms, Handle me) {
  if (!t) t = clock.make_timer(boost::asio::make_strand(exec));
  arm<Atom>(t, delay_ms, std::move(me));
}

/// Cancels `t` on its strand and lets go of it, so a second disarm posts nothing.
inline void disarm(std::shared_ptr<runtime::timer>& t) {
  if (!t) return;
  boost::asio::post(t->executor(), [t] { t->cancel(); });
  t.reset();
}

}  // namespace sy::actors::detail
