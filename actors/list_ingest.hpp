#pragma once
/// The ingest of a staged task list (docs/task-lists.md): one actor per list still being read,
/// on a thread of its own (it reads the file, which blocks). It checks the whole file first when
/// no task is written yet — a bad line fails the job with its line numbers and writes no task —
/// then writes the tasks a chunk at a time, one transaction per chunk holding the tasks, the
/// counts and where the file goes on, and latches the list at the end. A chunk read again after
/// a crash finds its tasks written (the job record says where it stands), so a restarted ingest
/// rewrites nothing and never duplicates a task. The engine spawns one at creation and, at
/// start, one for every list of db::list_ingest.
///
/// It works for its job's owner (actors/job_owner.hpp), as an attempt does: it registers with
/// it at once (through the registry, under no task id), so the list has its owner for as long
/// as it is read. The owner tells it of every change it commits (`cancel`; `expire`), and the
/// ingest then reads the job again and ends if it is no longer ingesting; `release` (shutdown)
/// ends it between steps (the next start resumes it).

#include <string>
#include <vector>

#include <caf/typed_actor.hpp>

#include "actors/ambient.hpp"
#include "actors/atoms.hpp"
#include "actors/dispatcher_directory.hpp"
#include "actors/gateway_table.hpp"
#include "actors/job_registry.hpp"
#include "actors/storage_writer.hpp"
#include "runtime/webhook_policy.hpp"

namespace sy::actors {

/// `tick` runs the next step (check, a chunk, or the latch); the rest comes from its job's owner.
using list_ingest_actor = job_control_actor::extend<caf::reacts_to<tick_atom>>;

/// Tasks per chunk: each is one transaction through the writer.
inline constexpr size_t ingest_chunk_tasks = 1000;

/// What an ingest uses: the store it reads the job from, the writer of its chunks, the registry
/// that finds its job's owner, the dispatcher
/// directory, the gateways and the http tasks' policy its tasks are checked against, the
/// engine's shutdown flag (it stops between steps), and the count of ingests alive (up at the
/// spawn, down at its end: shutdown waits for zero).
struct ingest_deps {
  const ambient* at = nullptr;
  storage::environment* env = nullptr;
  storage_writer_actor writer;
  job_registry_actor jobs;
  dispatcher_directory_actor dispatchers;
  const gateway_table* gateways = nullptr;
  const runtime::webhook_policy* http_policy = nullptr;
  const std::atomic<bool>* stopping = nullptr;
  std::atomic<int>* alive = nullptr;
};

/// Spawns the ingest of list `job_id`. Before it commits a chunk, it asks the dispatcher
/// directory to take the queues of the chunk's models: each must have a gateway, and together
/// they stay within max_models, or the list fails.
list_ingest_actor spawn_list_ingest(ingest_deps d, std::string job_id);

}  // namespace sy::actors
