#pragma once
/// The job actor of a task's attempt: one per delivered task being worked on this node, spawned
/// by the model's dispatcher, ended when the attempt's outcome is committed (or the delivery
/// turned out stale). It owns the attempt's progress (actors/attempt.hpp): the start (its lease),
/// the wait for a slot, the request and its abort handle, the heartbeat and the outcome's commit.
///
/// It registers at once with its job's owner (through the registry, by the job id its task id
/// names), so cancel, the deadline and shutdown reach it by message (actors/job_owner.hpp); once
/// its start commits, it gives the owner the job's deadline to watch and reports
/// (`lease`, id, itself) to its dispatcher, which grants it a slot (`start`). The request runs on
/// the gateway client's executor; its outcome comes back as a message. Commits go through the
/// storage writer with lease fencing, so a job actor that dies with the process loses nothing:
/// the lease expires and the reaper queues the task again. Its message is settled when the start
/// commits (acked once every task the message names is: DESIGN rule 3), not when the attempt
/// ends. Once the exchange is over, before the commit, it sends (`answered`, ms) so the slot
/// serves the next request; when it ends it tells its dispatcher (`done`, stage, id). A task
/// list's outcome commit may lease the list's next task for it (a chain): the actor then goes on
/// as that task's attempt, without a message or a start commit of its own.

#include <cstdint>
#include <memory>
#include <string>

#include "actors/dispatch_deps.hpp"
#include "actors/dispatch_state.hpp"
#include "actors/job_registry.hpp"
#include "actors/model_dispatcher.hpp"
#include "runtime/jetstream.hpp"

namespace sy::actors {

/// How often a running attempt extends its lease: every third of the lease TTL (at least 50 ms).
/// The registry ticks twice per period (spawn_job_registry's `beat_tick_ms`).
int64_t heartbeat_period_ms(const config::settings& cfg);

/// `t`: one task its message names (actors/dispatch_state.hpp); the job actor settles it in the
/// message once the start committed (or found the task stale, or asked for a redelivery).
job_actor spawn_job_actor(std::shared_ptr<const job_deps> deps, std::string model, woken_task t,
                          model_dispatcher_actor dispatcher);

}  // namespace sy::actors
