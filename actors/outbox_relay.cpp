#include "actors/outbox_relay.hpp"

#include <array>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/detail/actor_timer.hpp"
#include "actors/event_json.hpp"
#include "actors/runtime_names.hpp"
#include "runtime/fnv.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/thread_name.hpp"

namespace sy::actors {
namespace {

struct relay_state {
  storage::environment* env = nullptr;
  runtime::js_client* js = nullptr;
  storage_writer_actor writer;
  outbox_relay_options opts;
  uint64_t cursor = 0;  ///< next sequence to read
  bool nats_down_logged = false;
  static inline const char* name = "outbox_relay";
};

using relay_ptr = outbox_relay_actor::stateful_pointer<relay_state>;

/// Counts the acked records by kind: task, event, task_event, dlq (the variant's order; a
/// previous build's rendered record by its message id).
void count_published(const std::vector<storage::outbox_record>& records,
                     const std::vector<uint64_t>& acked) {
  if (acked.empty()) return;
  std::array<int64_t, 4> n{};
  static constexpr std::array<std::string_view, 4> kinds = {"task", "event", "task_event", "dlq"};
  size_t next = 0;  // both are in sequence order
  for (size_t i = 0; i < records.size() && next < acked.size(); ++i) {
    if (records[i].seq != acked[next]) continue;
    ++next;
    const size_t kind = records[i].what.index();
    if (kind < kinds.size()) {
      ++n[kind];
      continue;
    }
    const std::string_view id = std::get<storage::rendered_message>(records[i].what).msg_id;
    ++n[id.starts_with("event:")        ? 1
        : id.starts_with("task-event:") ? 2
        : id.starts_with("dlq:")        ? 3
                                        : 0];
  }
  for (size_t k = 0; k < kinds.size(); ++k) metrics::outbox_published(kinds[k], n[k]);
}

/// A first publication of a model queue's task: it may share a message (group_outbox).
const storage::task_message* groupable(const storage::outbox_record& r) {
  const auto* m = std::get_if<storage::task_message>(&r.what);
  if (m == nullptr || m->attempt != 1 || m->republished_at_ms != 0 || is_runtime_queue(m->queue))
    return nullptr;
  return m;
}

/// FNV-1a 64 of a grouped payload (runtime/fnv.hpp), in hex, for its message id.
std::string payload_hash(std::string_view s) {
  uint64_t h = runtime::fnv1a64(s);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<size_t>(i)] = hex[h & 0xf];
  return out;
}

/// Publishes batches until the outbox is empty (true) or a publish fails (false).
bool drain(relay_ptr self) {
  auto& st = self->state;
  for (;;) {
    std::vector<storage::outbox_record> records;
    {
      auto txn = st.env->begin_read();
      records = storage::read_outbox(txn, st.cursor, st.opts.batch);
    }
    if (records.empty()) {
      // Deletions are in flight through the writer; everything below the cursor was acked.
      metrics::set_outbox_blocked(false);
      return true;
    }
    auto grouped = group_outbox(records, st.js->layout());
    std::vector<runtime::pub_msg> msgs;
    msgs.reserve(grouped.size());
    for (auto& g : grouped) msgs.push_back(std::move(g.msg));
    const auto acked = st.js->publish_batch(msgs, st.opts.publish_timeout_ms);
    auto sorted = sort_acks(records, acked_records(grouped, records.size(), acked));
    st.cursor = sorted.next_cursor;
    count_published(records, sorted.acked_seqs);
    storage::outbox_ack_op done;
    done.seqs = std::move(sorted.acked_seqs);
    if (!done.seqs.empty()) {
      self->request(st.writer, caf::infinite, write_request{std::move(done)})
          .then([](write_reply& r) {
            if (!r.reply)
              log::warn("outbox", "deleting acked records failed", {{"error", r.err.message}});
          });
    }
    if (!sorted.all_acked) {
      metrics::set_outbox_blocked(true);
      if (!st.nats_down_logged) {
        log::warn("outbox", "publishing to JetStream failed; records stay queued and are retried",
                  {{"pending_from_seq", st.cursor}, {"connected", st.js->connected()}});
        st.nats_down_logged = true;
      }
      return false;
    }
    if (st.nats_down_logged) {
      log::info("outbox", "publishing to JetStream resumed", {{"seq", records.back().seq}});
      st.nats_down_logged = false;
    }
  }
}

void on_wake(relay_ptr self) {
  if (drain(self)) return;
  // A retry after the interval; a wake meanwhile (a new commit) tries at once and re-arms it.
  detail::arm<wake_atom>(self->state.opts.retry_timer, self->state.opts.retry_interval_ms,
                         outbox_relay_actor{self});
}

outbox_relay_actor::behavior_type relay(relay_ptr self, storage::environment* env,
                                        storage_writer_actor writer, runtime::js_client* js,
                                        outbox_relay_options opts, bool own_thread) {
  if (own_thread) runtime::name_this_thread("sy-outbox");  // detached: its own thread
  self->state.env = env;
  self->state.js = js;
  self->state.writer = std::move(writer);
  self->state.opts = std::move(opts);
  self->send(self, wake_atom::value);  // publish what a previous run left behind
  return {
      [=](wake_atom) { on_wake(self); },
      [=](drain_atom) -> bool { return drain(self); },
  };
}

}  // namespace

publish_outcome sort_acks(const std::vector<storage::outbox_record>& records,
                          const std::vector<bool>& acked) {
  publish_outcome out;
  for (size_t i = 0; i < records.size(); ++i) {
    if (i < acked.size() && acked[i]) {
      out.acked_seqs.push_back(records[i].seq);
    } else if (out.all_acked) {
      out.all_acked = false;
      out.next_cursor = records[i].seq;
    }
  }
  if (out.all_acked && !records.empty()) out.next_cursor = records.back().seq + 1;
  return out;
}

runtime::pub_msg outbox_message(const storage::outbox_record& r, const runtime::js_layout& layout) {
  const std::string& sp = layout.subject_prefix;
  if (const auto* m = std::get_if<storage::task_message>(&r.what)) {
    std::string id = task_message_id(m->task_id, m->attempt);
    if (m->republished_at_ms != 0) id += ":r" + std::to_string(m->republished_at_ms);
    return {layout.task_subject(m->queue), std::move(id),
            task_message_payload(m->task_id, m->attempt)};
  }
  if (const auto* e = std::get_if<storage::job_event>(&r.what)) {
    const auto& ev = e->event;
    return {sp + ".jobs." + ev.job_id + "." + std::string(to_string(ev.state)),
            "event:" + ev.job_id + ":" + std::to_string(ev.seq), event_json(*e)};
  }
  if (const auto* t = std::get_if<storage::task_event>(&r.what)) {
    const std::string state(to_string(t->state));
    return {sp + ".jobs." + t->job_id + ".task." + state,
            "task-event:" + t->task_id + ":" + std::to_string(t->attempt) + ":" + state,
            task_event_json(*t)};
  }
  if (const auto* d = std::get_if<storage::dead_letter>(&r.what)) {
    if (d->task_id
            .empty())  // the ingest's token is used as it is: escaped, it would be "_5Fingest"
      return {sp + ".dlq." + std::string(dlq_ingest_token),
              "ingest:" + d->job_id + ":" + std::to_string(d->run), dead_letter_json(*d)};
    // A batch line's tries start again in a rerun (a list task's attempts go on counting): the
    // run tells a rerun's dead letter from the first run's.
    std::string id = "dlq:" + d->task_id + ":" + std::to_string(d->attempts);
    if (d->run > 1) id += ":r" + std::to_string(d->run);
    return {layout.dlq_subject(d->model), std::move(id), dead_letter_json(*d)};
  }
  const auto& m = std::get<storage::rendered_message>(r.what);
  return {m.subject, m.msg_id, m.payload};
}

std::vector<outbox_publish> group_outbox(const std::vector<storage::outbox_record>& records,
                                         const runtime::js_layout& layout, size_t cap) {
  std::vector<outbox_publish> out;
  out.reserve(records.size());
  std::unordered_map<std::string_view, size_t> open;  // queue -> its group still filling
  for (size_t i = 0; i < records.size(); ++i) {
    const auto* m = groupable(records[i]);
    if (m == nullptr) {
      out.push_back({outbox_message(records[i], layout), {i}});
      continue;
    }
    const std::string line = task_message_payload(m->task_id, m->attempt);
    if (auto it = open.find(m->queue); it != open.end()) {
      auto& g = out[it->second];
      if (g.covers.size() < cap && g.msg.payload.size() + 1 + line.size() <= task_group_bytes) {
        g.msg.payload += '\n';
        g.msg.payload += line;
        g.covers.push_back(i);
        continue;
      }
    }
    open[m->queue] = out.size();
    out.push_back({outbox_message(records[i], layout), {i}});
  }
  for (auto& g : out) {
    if (g.covers.size() < 2) continue;
    const auto& first = std::get<storage::task_message>(records[g.covers.front()].what);
    g.msg.msg_id = "tasks:" + first.task_id + ":" + std::to_string(g.covers.size()) + ":" +
                   payload_hash(g.msg.payload);
  }
  return out;
}

std::vector<bool> acked_records(const std::vector<outbox_publish>& msgs, size_t records,
                                const std::vector<bool>& acked) {
  std::vector<bool> out(records, false);
  for (size_t i = 0; i < msgs.size() && i < acked.size(); ++i)
    if (acked[i])
      for (size_t r : msgs[i].covers) out[r] = true;
  return out;
}

outbox_relay_actor spawn_outbox_relay(caf::actor_system& sys, storage::environment& env,
                                      storage_writer_actor writer, runtime::js_client& js,
                                      outbox_relay_options opts, runs_on where) {
  if (where == runs_on::scheduler)
    return sys.spawn(relay, &env, std::move(writer), &js, std::move(opts), false);
  return sys.spawn<caf::detached>(relay, &env, std::move(writer), &js, std::move(opts), true);
}

}  // namespace sy::actors
