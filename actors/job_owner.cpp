#include "actors/job_owner.hpp"

#include <utility>  // before any Asio header (Boost 1.74)

#include <memory>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/detail/actor_timer.hpp"
#include "runtime/log.hpp"

namespace sy::actors {
namespace {

struct owner_state {
  const ambient* at = nullptr;
  storage_writer_actor writer;
  job_registry_actor registry;
  std::string job_id;
  owner_book<job_control_actor> book;
  int64_t deadline_ms = 0;  ///< the job's deadline once an attempt read it
  /// The last commit here cancelled (cancel_atom) or expired (expire_atom) the job: an attempt
  /// that registers afterwards (a chain: its lease was committed with its predecessor's
  /// outcome, after the commit named the running attempts) is told at once.
  std::optional<caf::atom_value> stopped;
  std::shared_ptr<runtime::timer> deadline;  ///< armed while it has a deadline to watch
  static inline const char* name = "job_owner";

  owner_state() = default;
  owner_state(const owner_state&) = delete;
  owner_state& operator=(const owner_state&) = delete;
  owner_state(owner_state&&) = delete;
  owner_state& operator=(owner_state&&) = delete;
  ~owner_state() { detail::disarm(deadline); }
};

using owner_ptr = job_owner_actor::stateful_pointer<owner_state>;

/// Tells the registry when it has nothing left to do, with the count of what it received.
void report_if_idle(owner_ptr self) {
  auto& st = self->state;
  if (st.book.idle())
    self->send(st.registry, idle_atom::value, st.job_id, st.book.received_count());
}

template <class Atom>
void tell(owner_ptr self, const std::vector<job_control_actor>& attempts) {
  for (const auto& a : attempts) self->send(a, Atom::value);
}

/// Commits `req` and, once it is committed, tells the attempts it names to stop (`Atom`: cancel
/// or expire), then answers the commit's reply.
template <class Atom>
caf::typed_response_promise<write_reply> commit(owner_ptr self, write_request& req) {
  auto& st = self->state;
  st.book.received();
  st.book.commit_sent();
  auto p = self->make_response_promise<write_reply>();
  self->request(st.writer, caf::infinite, std::move(req))
      .then(
          [self, p](write_reply& r) mutable {
            auto& s = self->state;
            s.book.commit_answered();
            if (r.reply && r.reply->job) {
              const auto status = r.reply->job->status;
              const bool cancelled = status == storage::job_status::cancelling ||
                                     status == storage::job_status::cancelled;
              s.stopped.reset();
              if (cancelled) s.stopped = cancel_atom::value;
              if (status == storage::job_status::expired) s.stopped = expire_atom::value;
            }
            if (r.reply) {
              const auto named = s.book.named_by(*r.reply);
              if (!named.empty())
                log::info("jobs", "stopping the job's running attempts",
                          {{"job_id", s.job_id}, {"attempts", named.size()}});
              tell<Atom>(self, named);
            }
            p.deliver(std::move(r));
            report_if_idle(self);
          },
          [self, p](caf::error& e) mutable {
            self->state.book.commit_answered();
            write_reply r;
            r.err = make_error(errc::storage_unavailable, self->system().render(e));
            p.deliver(std::move(r));
            report_if_idle(self);
          });
  return p;
}

/// The job's deadline as an attempt's start read it: armed on the engine's clock; when it
/// passes, every attempt here is told (its outcome records the expiry, as its commit decides).
void watch_deadline(owner_ptr self, int64_t at_ms) {
  auto& st = self->state;
  if (at_ms <= 0 || at_ms == st.deadline_ms) return;
  st.deadline_ms = at_ms;
  detail::arm_on<deadline_atom>(st.deadline, st.at->clock, st.at->exec,
                                at_ms - st.at->clock.now_ms(), job_owner_actor{self});
}

job_owner_actor::behavior_type owner(owner_ptr self, const ambient* at, storage_writer_actor writer,
                                     job_registry_actor registry, std::string job_id) {
  auto& st = self->state;
  st.at = at;
  st.writer = std::move(writer);
  st.registry = std::move(registry);
  st.job_id = std::move(job_id);
  self->set_down_handler([self](caf::down_msg& m) {
    if (self->state.book.remove(m.source.id())) report_if_idle(self);
  });
  return {
      [=](register_atom, std::string& task_id, job_control_actor a) {
        self->state.book.received();
        self->monitor(a);
        const auto id = a.id();
        if (self->state.stopped == cancel_atom::value) self->send(a, cancel_atom::value);
        if (self->state.stopped == expire_atom::value) self->send(a, expire_atom::value);
        self->state.book.add(id, std::move(task_id), std::move(a));
      },
      [=](deadline_atom, int64_t at_ms) {
        self->state.book.received();
        watch_deadline(self, at_ms);
        report_if_idle(self);
      },
      [=](deadline_atom) {
        auto& s = self->state;
        s.deadline.reset();
        if (s.book.attempts() == 0) return;
        log::info("jobs", "the job's timeout passed while it runs here",
                  {{"job_id", s.job_id}, {"attempts", s.book.attempts()}});
        tell<expire_atom>(self, s.book.all());
      },
      [=](commit_atom, write_request& req) { return commit<cancel_atom>(self, req); },
      [=](expire_atom, write_request& req) { return commit<expire_atom>(self, req); },
      [=](cancel_atom) {
        self->state.book.received();
        tell<cancel_atom>(self, self->state.book.all());
        report_if_idle(self);
      },
      [=](expire_atom) {
        self->state.book.received();
        tell<expire_atom>(self, self->state.book.all());
        report_if_idle(self);
      },
      [=](release_atom) { tell<release_atom>(self, self->state.book.all()); },
      [=](beat_atom) { tell<beat_atom>(self, self->state.book.all()); },
      [=](stop_atom) { self->quit(); },
  };
}

}  // namespace

job_owner_actor spawn_job_owner(const ambient& at, storage_writer_actor writer,
                                job_registry_actor registry, std::string job_id) {
  // Lazy: the registry sends it its first message at once, so it is set up when that arrives
  // rather than scheduled once more to run its start (one owner is made per job that runs here).
  return at.sys.spawn<caf::lazy_init>(owner, &at, std::move(writer), std::move(registry),
                                      std::move(job_id));
}

}  // namespace sy::actors
