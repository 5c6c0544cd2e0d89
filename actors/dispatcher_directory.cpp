#include "actors/dispatcher_directory.hpp"

#include <map>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/http_task.hpp"
#include "actors/model_dispatcher.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"

namespace sy::actors {
namespace {

struct directory_state {
  struct entry {
    model_dispatcher_actor handle;
    bool queue = false;  ///< it takes the model's JetStream queue (counts toward max_models)
  };
  dispatcher_deps d;                    ///< what each dispatcher it spawns gets
  std::shared_ptr<queued_models> view;  ///< published after each queue taken
  std::map<std::string, entry> dispatchers;
  size_t queued = 0;  ///< entries with `queue`
  static inline const char* name = "dispatcher_directory";
};

using directory_ptr = dispatcher_directory_actor::stateful_pointer<directory_state>;

/// Why `w` may not take its models' queues, or ok: every model has a gateway (an http task's
/// queue needs none), and the models not queued yet keep the count within max_models.
status check(const directory_state& st, const dispatchers_wanted& w) {
  auto param = [&](size_t i) { return i < w.params.size() ? w.params[i] : std::string(); };
  if (auto gateways = have_gateways(*st.d.job->gateways, w.models, w.params); !gateways)
    return gateways;
  // Each model has a JetStream consumer and a dispatcher of its own, and with one global
  // gateway the client chooses the name: without a bound, distinct names would exhaust them.
  size_t added = 0;
  const auto limit = static_cast<size_t>(st.d.fetch.at->cfg.max_models);
  for (size_t i = 0; i < w.models.size(); ++i) {
    auto known = st.dispatchers.find(w.models[i]);
    if (known != st.dispatchers.end() && known->second.queue) continue;
    if (st.queued + ++added > limit)
      return make_error(errc::too_many_models,
                        "This engine already queues jobs for " + std::to_string(st.queued) +
                            " distinct models, its limit (max_models, see docs/limits.md); "
                            "a job for another model is refused.",
                        param(i));
  }
  return ok;
}

/// The dispatcher of `model`, spawned on first use; `queue`: it takes the model's queue from now
/// on (its fetcher binds the model's pull consumer).
model_dispatcher_actor dispatcher(directory_ptr self, const std::string& model, bool queue) {
  auto& st = self->state;
  auto& d = st.dispatchers[model];
  if (!d.handle) {
    d.handle = spawn_model_dispatcher(st.d, model, nullptr, 0);
    metrics::set_model_limit(model, concurrency_for(st.d.fetch.at->cfg, model));
    log::info("engine", "dispatcher started", {{"model", model}});
  }
  if (queue && !d.queue) {
    d.queue = true;
    ++st.queued;
    self->send(d.handle, wake_atom::value);
  }
  return d.handle;
}

dispatchers_found find(directory_ptr self, const dispatchers_wanted& w) {
  auto& st = self->state;
  dispatchers_found found;
  // After shutdown began no queue is taken (a batch's lanes may still find their dispatchers).
  if (w.queue && *st.d.fetch.stopping) {
    found.refusal = make_error(errc::shutting_down, "the server is shutting down");
    return found;
  }
  if (w.queue && !w.known) {
    if (auto ok = check(st, w); !ok) {
      found.refusal = ok.error();
      return found;
    }
  }
  const size_t queued_before = st.queued;
  found.owners.reserve(w.models.size());
  for (const auto& m : w.models)
    found.owners.emplace_back(slot_owner_actor{dispatcher(self, m, w.queue)});
  found.queued_models = static_cast<int32_t>(st.queued);
  if (st.queued != queued_before) {
    std::set<std::string> queued;
    for (const auto& [model, d] : st.dispatchers)
      if (d.queue) queued.insert(model);
    st.view->publish(std::move(queued));
  }
  return found;
}

dispatcher_directory_actor::behavior_type directory(directory_ptr self, dispatcher_deps deps,
                                                    std::shared_ptr<queued_models> view) {
  self->state.d = std::move(deps);
  self->state.view = std::move(view);
  return {
      [=](dispatchers_wanted& w) { return find(self, w); },
      [=](stop_atom) {
        auto& st = self->state;
        const auto n = static_cast<int32_t>(st.dispatchers.size());
        for (auto& [model, d] : st.dispatchers)
          self->send_exit(d.handle, caf::exit_reason::user_shutdown);
        // A detached actor's thread (a dispatcher's fetcher) ends only when the last handle to
        // it is gone: this map holds the last ones.
        st.dispatchers.clear();
        st.queued = 0;
        st.view->publish({});
        self->quit();
        return n;
      },
  };
}

}  // namespace

status have_gateways(const gateway_table& gateways, const std::vector<std::string>& models,
                     const std::vector<std::string>& params) {
  for (size_t i = 0; i < models.size(); ++i) {
    if (!is_http_queue(models[i]) && !gateways.for_model(models[i]))
      return make_error(errc::model_not_found,
                        "no gateway is configured for model '" + models[i] + "'",
                        i < params.size() ? params[i] : std::string());
  }
  return ok;
}

dispatcher_directory_actor spawn_dispatcher_directory(dispatcher_deps d,
                                                      std::shared_ptr<queued_models> view) {
  auto& sys = d.fetch.at->sys;
  return sys.spawn(directory, std::move(d), std::move(view));
}

}  // namespace sy::actors
