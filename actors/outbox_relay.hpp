#pragma once
/// The outbox relay: publishes committed outbox records to JetStream, each rendered as its
/// message when it is published (actors/event_json.hpp: subject, payload, deterministic
/// Nats-Msg-Id), and deletes a record (through the storage writer) only after JetStream acked it.
/// While NATS is unreachable the records stay in LMDB and the relay retries every
/// `retry_interval_ms` of the engine's clock; submissions keep being accepted meanwhile. Runs
/// detached because a publish waits for acks. Owns: its read cursor into the outbox (in memory;
/// restarts from the beginning).

#include <cstdint>
#include <memory>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/storage_writer.hpp"
#include "runtime/clock.hpp"
#include "runtime/jetstream.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::actors {

/// `wake`: new records were committed. `drain`: publish everything now (shutdown); replies true
/// when the outbox is empty afterwards.
using outbox_relay_actor =
    caf::typed_actor<caf::reacts_to<wake_atom>, caf::replies_to<drain_atom>::with<bool>>;

struct outbox_relay_options {
  size_t batch = 512;
  int64_t publish_timeout_ms = 5'000;
  int64_t retry_interval_ms = 500;  ///< of the engine's clock
  /// The timer of the engine's clock (runtime/clock.hpp) the retries wait on; required.
  std::shared_ptr<runtime::timer> retry_timer;
};

/// What one publish of `records` (in sequence order) leaves to do, given which were acked
/// (`acked[i]` for `records[i]`; missing entries count as not acked). Pure; unit-tested.
struct publish_outcome {
  std::vector<uint64_t> acked_seqs;  ///< delete these (through the writer)
  bool all_acked = true;
  /// Where the next read starts: past the last record when all were acked, else at the first
  /// record not acked — it is retried, and so is every record after it (a record acked after
  /// one that failed is published again; JetStream drops the copy by its Nats-Msg-Id).
  uint64_t next_cursor = 0;
};
publish_outcome sort_acks(const std::vector<storage::outbox_record>& records,
                          const std::vector<bool>& acked);

/// The subject token of the dead letters of ingests that failed for a system reason: `_` is
/// escaped in every model's token (runtime::subject_token), so no model's dead letters land here.
inline constexpr std::string_view dlq_ingest_token = "_ingest";

/// The message an outbox record is published as:
/// - a task message on `layout.task_subject(queue)`, id `task:<task>:<attempt>` (a republished
///   copy: `...:r<ms>`, a new id since the original may still sit in the duplicate window);
/// - a job event on `<prefix>.jobs.<job>.<state>`, id `event:<job>:<seq>`;
/// - a task event on `<prefix>.jobs.<job>.task.<state>`, id `task-event:<task>:<attempt>:<state>`;
/// - a dead letter on `layout.dlq_subject(model)` (an ingest's on `<prefix>.dlq._ingest`), id
///   `dlq:<task>:<attempts>` (`ingest:<job>:<run>`);
/// - a message a previous build rendered, as it is.
runtime::pub_msg outbox_message(const storage::outbox_record& r, const runtime::js_layout& layout);

/// How many tasks, and payload bytes, one task message names at most (DESIGN rule 3).
inline constexpr size_t task_group_cap = 64;
inline constexpr size_t task_group_bytes = size_t{8} * 1024;

/// One message the relay publishes and the records it covers (indices into the records read).
struct outbox_publish {
  runtime::pub_msg msg;
  std::vector<size_t> covers;
};
/// The messages one read of `records` (in sequence order) is published as. A first publication
/// of a model queue's task (attempt 1, not republished) is grouped with the others of that pass
/// for the same queue, up to `cap` tasks or task_group_bytes: ONE message, at the place of its
/// first record, whose payload lists `<task>:<attempt>` lines and whose id is
/// `tasks:<first task>:<n>:<hash of the payload>` — derived from the records it covers, so a
/// re-publish of the same grouping is a duplicate JetStream drops, and a different grouping
/// after a crash wakes tasks already leased or finished, which the start's fencing drops. A group
/// of one is the single-task message (`outbox_message`). Every other record — retries
/// (attempt > 1) and republished copies, which a `nak` with a delay may have to hold back alone,
/// a runtime's tasks (its queue hands one message to one worker), events, dead letters — is its
/// own message. Pure; unit-tested.
std::vector<outbox_publish> group_outbox(const std::vector<storage::outbox_record>& records,
                                         const runtime::js_layout& layout,
                                         size_t cap = task_group_cap);
/// Which records were acked, given which messages were (`acked[i]` for `msgs[i]`).
std::vector<bool> acked_records(const std::vector<outbox_publish>& msgs, size_t records,
                                const std::vector<bool>& acked);

outbox_relay_actor spawn_outbox_relay(caf::actor_system& sys, storage::environment& env,
                                      storage_writer_actor writer, runtime::js_client& js,
                                      outbox_relay_options opts,
                                      runs_on where = runs_on::own_thread);

}  // namespace sy::actors
