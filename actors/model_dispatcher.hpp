#pragma once
/// The model dispatcher: one actor per model. It owns the model's concurrency budget and takes
/// from the model's JetStream pull consumer only as many tasks as it has free slots (and the
/// global budget allows), then runs each as an attempt on the engine's Asio executor. An attempt
/// that ends sends `done`, which frees its slot. Runs detached because a fetch blocks.

#include <utility>

#include <memory>
#include <string>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/engine_context.hpp"

namespace sy::actors {

using model_dispatcher_actor =
    caf::typed_actor<caf::reacts_to<fetch_atom>, caf::reacts_to<answered_atom>,
                     caf::reacts_to<done_atom, bool>>;

/// Spawns the dispatcher for `model` over its pull subscription, bound while the JetStream
/// layout was at `generation` (js_client::layout_generation()). When the layout is made again
/// (after a reconnect) the dispatcher binds its consumer again before its next fetch: a server
/// that came back without its store has lost the consumer, and a fetch from it would never
/// return a message.
model_dispatcher_actor spawn_model_dispatcher(engine_context& ctx, std::string model,
                                              std::unique_ptr<runtime::pull_subscription> sub,
                                              uint64_t generation);

}  // namespace sy::actors
