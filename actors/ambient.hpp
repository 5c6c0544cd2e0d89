#pragma once
/// What every actor of the engine is given at spawn besides its own dependencies: the actor
/// system it spawns in, the settings, the injected clock (every reading of time and every timer),
/// and the I/O context its timers and coroutines run on. Nothing here is another actor or a
/// hub to call back into: an actor is given, by name, each handle and resource it uses (its
/// `*_deps` struct), not the engine's context (issue 40, item 3; docs/architecture.md).

#include <utility>

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>

#include "config/settings.hpp"
#include "runtime/clock.hpp"

namespace sy::actors {

struct ambient {
  caf::actor_system& sys;
  const config::settings& cfg;
  const runtime::clock& clock;
  boost::asio::io_context& exec;
};

}  // namespace sy::actors
