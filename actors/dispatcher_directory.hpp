#pragma once
/// The dispatcher directory: one actor owns the map from a model to its dispatcher
/// (actors/model_dispatcher.hpp). Whoever needs a model's dispatcher asks it by message — the
/// engine when a submission, an append or a list's chunk names models (from an Asio coroutine,
/// actors/ask.hpp, or from the list's ingest actor), a batch's actor for the dispatcher of each
/// of its lanes (which owns the model's budget). It spawns a model's dispatcher on first use and
/// keeps it until shutdown, so every ask for one model gets the same handle.
///
/// A dispatcher first only hands out its model's budget (batch lanes); asked with `queue`, it
/// also takes the model's JetStream queue (`wake`). The directory bounds the models whose queues
/// it takes by `max_models` (each has a JetStream consumer and a fetcher thread, and with one
/// global gateway the client chooses the names). At shutdown the engine asks it to `stop`: it
/// stops every dispatcher, answers, and ends (engine::stop_actors, before the budgets, the
/// writer and the registry go).
///
/// Who touches what: the map lives in the actor's state only. What the HTTP threads see of it is
/// `queued_models`, an immutable snapshot of the models whose queues are taken, which only the
/// directory publishes: a submission for such a model needs no message (the hot path), and only
/// a model not in it is asked for (docs/architecture.md, "The dispatcher directory").

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/dispatch_deps.hpp"
#include "actors/slots.hpp"
#include "config/result.hpp"

namespace sy::actors {

/// What to ask the directory for: the dispatchers of `models`, in order. With `queue` they also
/// take their models' queues — each model must have a gateway (model_not_found) and together
/// they stay within max_models (too_many_models); `params[i]` names model i in an error (empty
/// entries, or none at all, name no parameter). A refused ask changes nothing. `known`: the
/// models this store queued before or the configured ones, taken at start without the checks
/// (their jobs may wait in the queues already).
struct dispatchers_wanted {
  std::vector<std::string> models;
  std::vector<std::string> params;
  bool queue = false;
  bool known = false;

  bool operator==(const dispatchers_wanted&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dispatchers_wanted& x) {
  return f(x.models, x.params, x.queue, x.known);
}

/// The directory's answer: the dispatcher of each model asked for, in order (as the owner of the
/// model's budget, actors/slots.hpp), and how many models' queues it takes now; or why it
/// refused (`refusal.code` set, `owners` empty).
struct dispatchers_found {
  std::vector<slot_owner_actor> owners;
  int32_t queued_models = 0;
  sy::error refusal;

  bool operator==(const dispatchers_found&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dispatchers_found& x) {
  return f(x.owners, x.queued_models, x.refusal);
}

/// The models whose queues the directory has taken: it publishes a new snapshot after each change;
/// any thread reads the current one. A snapshot is immutable; only the pointer to the current one
/// is copied under a short lock (libstdc++ 12's `atomic<shared_ptr>` takes a lock as well, one
/// ThreadSanitizer cannot see).
class queued_models {
 public:
  /// Every one of `models` is in the snapshot.
  bool has_all(const std::vector<std::string>& models) const {
    auto now = current();
    if (!now) return models.empty();
    for (const auto& m : models)
      if (!now->contains(m)) return false;
    return true;
  }
  /// The directory's, after it took a queue.
  void publish(std::set<std::string> models) {
    auto next = std::make_shared<const std::set<std::string>>(std::move(models));
    std::lock_guard lock{mu_};
    set_.swap(next);
  }

 private:
  std::shared_ptr<const std::set<std::string>> current() const {
    std::lock_guard lock{mu_};
    return set_;
  }
  mutable std::mutex mu_;
  std::shared_ptr<const std::set<std::string>> set_;  ///< guarded by mu_
};

/// OK when a gateway serves each of `models` (an http task's queue needs none); else
/// model_not_found, naming `params[i]` (when given) for model i. The directory checks it before
/// it takes a queue; a submission whose models are queued already checks it alone.
status have_gateways(const gateway_table& gateways, const std::vector<std::string>& models,
                     const std::vector<std::string>& params);

/// Answers `dispatchers_wanted` with `dispatchers_found`, and (`stop`) with the number of
/// dispatchers it stopped; after `stop` it has ended.
using dispatcher_directory_actor =
    caf::typed_actor<caf::replies_to<dispatchers_wanted>::with<dispatchers_found>,
                     caf::replies_to<stop_atom>::with<int32_t>>;

/// Spawns the directory; `d` is what every dispatcher it spawns gets (and its settings,
/// max_models, and gateways are the directory's). It publishes the queued models in `view`.
dispatcher_directory_actor spawn_dispatcher_directory(dispatcher_deps d,
                                                      std::shared_ptr<queued_models> view);

}  // namespace sy::actors
