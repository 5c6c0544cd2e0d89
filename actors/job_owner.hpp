#pragma once
/// The owner of a single job or a task list on this node (issue 40, item 3; docs/architecture.md,
/// "Actors and who owns what"): while the job has work here, this one actor holds what works for
/// it (each attempt's actor, by its task id; a staged list's ingest, under no task id), the
/// job's deadline timer, and every change the API or the reaper makes to the job — a cancel,
/// delete, append or rerun (`commit`) and an expiry (`expire`) — which it commits through the
/// storage writer and then turns into aborts of the attempts the commit names, before it
/// answers. The registry (actors/job_registry.hpp) spawns it on the first message for its job
/// and lets it stop once it is idle: nothing working for it, no commit outstanding, and every
/// message the registry routed to it received. After a restart a job's owner is made again by
/// the first message for it: an attempt of a task the queue delivers again, a resumed ingest,
/// the reaper's deadline scan of storage, or a client's request.
///
/// The decisions are in `owner_book`, a plain class with unit tests (tests/unit/actors).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/job_registry.hpp"
#include "storage/ops.hpp"

namespace sy::actors {

/// An owner's book: the attempts in flight by actor id (a redelivery can briefly run two
/// attempts of one task here), the commits outstanding, the messages received from the registry.
template <class Handle>
class owner_book {
 public:
  void add(uint64_t actor_id, std::string task_id, Handle h) {
    attempts_.insert_or_assign(actor_id, attempt{std::move(task_id), std::move(h)});
  }
  /// False when `actor_id` was not one of its attempts.
  bool remove(uint64_t actor_id) { return attempts_.erase(actor_id) > 0; }
  /// The attempts of `task_id`.
  std::vector<Handle> of_task(const std::string& task_id) const {
    std::vector<Handle> out;
    for (const auto& [id, a] : attempts_)
      if (a.task_id == task_id) out.push_back(a.handle);
    return out;
  }
  /// Every attempt.
  std::vector<Handle> all() const {
    std::vector<Handle> out;
    out.reserve(attempts_.size());
    for (const auto& [id, a] : attempts_) out.push_back(a.handle);
    return out;
  }
  /// The attempts a committed change names (a cancel's, delete's or expiry's running task, or a
  /// list's running tasks), and every worker of the job that runs no task (a list's ingest: it
  /// reads the job again); none when it did not change the job.
  std::vector<Handle> named_by(const storage::op_reply& r) const {
    std::vector<Handle> out;
    if (r.what != storage::op_reply::kind::done) return out;
    for (auto& h : of_task("")) out.push_back(std::move(h));
    if (r.abort_inflight && r.task)
      for (auto& h : of_task(r.task->id)) out.push_back(std::move(h));
    for (const auto& t : r.abort_tasks)
      for (auto& h : of_task(t)) out.push_back(std::move(h));
    return out;
  }
  void received() { ++received_; }
  uint64_t received_count() const { return received_; }
  void commit_sent() { ++pending_; }
  void commit_answered() { --pending_; }
  /// Nothing in flight and nothing outstanding: it may stop once the registry agrees.
  bool idle() const { return attempts_.empty() && pending_ == 0; }
  size_t attempts() const { return attempts_.size(); }

 private:
  struct attempt {
    std::string task_id;
    Handle handle;
  };
  std::map<uint64_t, attempt> attempts_;
  int pending_ = 0;
  uint64_t received_ = 0;
};

/// Spawned by the registry (`registry`) for job `job_id`; commits through `writer`.
job_owner_actor spawn_job_owner(const ambient& at, storage_writer_actor writer,
                                job_registry_actor registry, std::string job_id);

}  // namespace sy::actors
