#include "storage/batch_ops.hpp"

#include <algorithm>

#include "storage/detail/codec.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/ops.hpp"

namespace sy::storage {
namespace {

using json = nlohmann::json;

using detail::decode;
using detail::encode;

int64_t seconds(int64_t ms) { return ms / 1000; }

/// The listing indexes (file_index, batch_index) share the jobs' key: tenant '\x1f' id.
std::string index_key(std::string_view tenant, std::string_view id) {
  return job_index_key(tenant, id);
}

/// file_expiry is a time index like deadlines and retention, in ms.
std::string expiry_key(int64_t at_s, std::string_view id) {
  return time_index_key(at_s * 1000, id);
}

status put_file(write_txn& t, const file_record& f) {
  if (auto s = t.put(db::files, f.id, encode(to_json(f))); !s) return s;
  if (auto s = t.put(db::file_index, index_key(f.tenant, f.id), ""); !s) return s;
  if (f.expires_at > 0)
    if (auto s = t.put(db::file_expiry, expiry_key(f.expires_at, f.id), ""); !s) return s;
  return ok;
}

op_reply answer(op_reply::kind k) {
  op_reply r;
  r.what = k;
  return r;
}

op_reply with_batch(op_reply::kind k, batch_record b) {
  op_reply r;
  r.what = k;
  r.batch = std::move(b);
  return r;
}

/// Leaves the active set once terminal.
status save(write_txn& t, const batch_record& b) {
  if (auto s = put_batch(t, b); !s) return s;
  if (is_terminal(b.status)) t.del(db::batch_active, b.id);
  return ok;
}

/// A batch that just ended: its webhook, OpenAI's event for the transition, when it has one.
void announce_end(write_txn& t, const batch_record& b, int64_t now_ms, op_reply& r) {
  if (b.webhook_url.empty()) return;
  webhook_record w;
  w.job_id = b.id;
  w.url = b.webhook_url;
  w.batch_status = to_string(b.status);
  w.created_at_ms = now_ms;
  w.next_at_ms = now_ms;
  append_webhook(t, std::move(w));
  r.webhooks_appended = true;
}

}  // namespace

job_status job_status_of(batch_status s) {
  switch (s) {
    case batch_status::validating:
      return job_status::queued;
    case batch_status::in_progress:
    case batch_status::finalizing:
      return job_status::in_progress;
    case batch_status::cancelling:
      return job_status::cancelling;
    case batch_status::completed:
      return job_status::completed;
    case batch_status::failed:
      return job_status::failed;
    case batch_status::expired:
      return job_status::expired;
    case batch_status::cancelled:
      return job_status::cancelled;
  }
  return job_status::queued;
}

job_record job_of(const batch_record& b) {
  job_record j;
  j.id = b.id;
  j.tenant = b.tenant;
  j.endpoint = b.endpoint;
  if (b.metadata.is_object()) j.metadata = b.metadata;
  j.status = job_status_of(b.status);
  j.created_at_ms = b.created_at * 1000;
  j.started_at_ms = b.in_progress_at * 1000;
  const int64_t ended = std::max({b.completed_at, b.failed_at, b.expired_at, b.cancelled_at});
  if (is_terminal(b.status)) j.finished_at_ms = ended * 1000;
  j.updated_at_ms =
      std::max({b.created_at, b.in_progress_at, b.finalizing_at, b.cancelling_at, ended}) * 1000;
  j.deadline_ms = b.deadline_ms;
  j.webhook_url = b.webhook_url;
  j.event_seq = b.event_seq;
  j.run = b.run;
  j.max_attempts = b.max_attempts;
  j.trace = b.trace;
  j.trace_state = b.trace_state;
  j.task_list = true;
  j.window = b.max_inflight;
  j.counts.total = b.status == batch_status::validating && b.total == 0 ? -1 : b.total;
  j.counts.completed = b.completed;
  j.counts.failed = b.failed;
  j.counts.queued = std::max<int64_t>(0, b.total - b.completed - b.failed);
  j.ingested = b.total;
  j.errors = b.errors;
  if (b.status == batch_status::failed || b.status == batch_status::expired) {
    if (!b.errors.empty()) {
      j.error = job_error{b.errors.front().code, b.errors.front().message};
    } else {
      j.error = job_error{b.stop_code, "the batch " + std::string(to_string(b.status))};
    }
  }
  return j;
}

std::optional<file_record> get_file(const txn_view& t, std::string_view id) {
  return decode(t.get(db::files, id), &file_from_json);
}

std::optional<batch_record> get_batch(const txn_view& t, std::string_view id) {
  return decode(t.get(db::batches, id), &batch_from_json);
}

status put_batch(write_txn& t, const batch_record& r) {
  return t.put(db::batches, r.id, encode(to_json(r)));
}

result<op_reply> apply_batch(write_txn& t, const create_file_op& op) {
  if (auto s = put_file(t, op.file); !s) return s.error();
  op_reply r;
  r.file = op.file;
  return r;
}

result<op_reply> apply_batch(write_txn& t, const delete_file_op& op) {
  op_reply r;
  auto f = get_file(t, op.id);
  if (!f || (!op.tenant.empty() && f->tenant != op.tenant)) {
    r.what = op_reply::kind::not_found;
    return r;
  }
  t.del(db::files, f->id);
  t.del(db::file_index, index_key(f->tenant, f->id));
  if (f->expires_at > 0) t.del(db::file_expiry, expiry_key(f->expires_at, f->id));
  r.file = std::move(*f);
  return r;
}

result<op_reply> apply_batch(write_txn& t, const create_batch_op& op) {
  auto input = get_file(t, op.batch.input_file_id);
  if (!input || input->tenant != op.batch.tenant) {
    op_reply r;
    r.what = op_reply::kind::not_found;
    return r;
  }
  if (auto s = put_batch(t, op.batch); !s) return s.error();
  if (auto s = t.put(db::batch_index, index_key(op.batch.tenant, op.batch.id), ""); !s)
    return s.error();
  if (auto s = t.put(db::batch_active, op.batch.id, ""); !s) return s.error();
  return with_batch(op_reply::kind::done, op.batch);
}

result<op_reply> apply_batch(write_txn& t, const batch_ingested_op& op) {
  auto b = get_batch(t, op.id);
  if (!b) return answer(op_reply::kind::not_found);
  if (b->status != batch_status::validating && b->status != batch_status::cancelling)
    return with_batch(op_reply::kind::stale, std::move(*b));
  if (!op.errors.empty()) {
    // No request was accepted, so none is counted: OpenAI shows a batch that failed validation
    // with request_counts {total: 0, completed: 0, failed: 0}.
    b->errors = op.errors;
    b->status = batch_status::failed;
    b->failed_at = seconds(op.now_ms);
  } else {
    if (b->total == 0) b->total = op.total;
    if (b->status == batch_status::validating) {
      b->status = batch_status::in_progress;
      b->in_progress_at = seconds(op.now_ms);
    }
  }
  if (auto s = save(t, *b); !s) return s.error();
  auto r = with_batch(op_reply::kind::done, std::move(*b));
  if (is_terminal(r.batch->status)) announce_end(t, *r.batch, op.now_ms, r);
  return r;
}

result<op_reply> apply_batch(write_txn& t, const batch_lines_op& op) {
  auto b = get_batch(t, op.id);
  if (!b) return answer(op_reply::kind::not_found);
  if (is_terminal(b->status)) return with_batch(op_reply::kind::stale, std::move(*b));
  size_t added = 0;
  bool dead_letters = false;
  for (const auto& line : op.lines) {
    auto key = batch_line_key(op.id, line.slot);
    if (t.get(db::batch_lines, key)) continue;  // first result wins
    std::string value;
    value.reserve(line.text.size() + 1);
    value.push_back(line.ok ? 'o' : 'e');
    value.append(line.text);
    if (auto s = t.put(db::batch_lines, key, value); !s) return s.error();
    if (line.ok) {
      ++b->completed;
    } else {
      ++b->failed;
    }
    if (line.usage) b->usage += *line.usage;
    if (line.dead) {
      // The run the line died in: a rerun's dead letter is another message (its Nats-Msg-Id
      // names the run), not a duplicate of the first run's.
      dead_letter d = *line.dead;
      d.run = b->run;
      append_outbox(t, outbox_record{0, std::move(d)});
      dead_letters = true;
    }
    ++added;
  }
  if (added > 0)
    if (auto s = put_batch(t, *b); !s) return s.error();
  auto r = with_batch(added > 0 ? op_reply::kind::done : op_reply::kind::stale, std::move(*b));
  r.lines_added = added;
  r.outbox_appended = dead_letters;
  return r;
}

result<op_reply> apply_batch(write_txn& t, const cancel_batch_op& op) {
  auto b = get_batch(t, op.id);
  if (!b || b->tenant != op.tenant) return answer(op_reply::kind::not_found);
  switch (b->status) {
    case batch_status::completed:
    case batch_status::failed:
    case batch_status::expired:
      return with_batch(op_reply::kind::conflict, std::move(*b));
    case batch_status::cancelling:
    case batch_status::cancelled:
      return with_batch(op_reply::kind::done, std::move(*b));
    default:
      break;
  }
  b->status = batch_status::cancelling;
  b->cancelling_at = seconds(op.now_ms);
  if (b->stop_code.empty()) b->stop_code = errc::batch_cancelled;
  if (auto s = save(t, *b); !s) return s.error();
  return with_batch(op_reply::kind::done, std::move(*b));
}

result<op_reply> apply_batch(write_txn& t, const stop_batch_op& op) {
  auto b = get_batch(t, op.id);
  if (!b) return answer(op_reply::kind::not_found);
  if (is_terminal(b->status) || !b->stop_code.empty())
    return with_batch(op_reply::kind::stale, std::move(*b));
  b->stop_code = op.code;
  if (!op.message.empty()) b->errors.push_back(batch_error{op.code, op.message, "", 0});
  if (auto s = save(t, *b); !s) return s.error();
  return with_batch(op_reply::kind::done, std::move(*b));
}

result<op_reply> apply_batch(write_txn& t, const batch_finalizing_op& op) {
  auto b = get_batch(t, op.id);
  if (!b) return answer(op_reply::kind::not_found);
  if (is_terminal(b->status)) return with_batch(op_reply::kind::stale, std::move(*b));
  if (b->finalizing_at == 0) b->finalizing_at = seconds(op.now_ms);
  if (b->status == batch_status::in_progress || b->status == batch_status::validating)
    b->status = batch_status::finalizing;
  if (auto s = save(t, *b); !s) return s.error();
  return with_batch(op_reply::kind::done, std::move(*b));
}

result<op_reply> apply_batch(write_txn& t, const batch_finish_op& op) {
  auto b = get_batch(t, op.id);
  if (!b) return answer(op_reply::kind::not_found);
  if (is_terminal(b->status)) return with_batch(op_reply::kind::stale, std::move(*b));
  int64_t now = seconds(op.now_ms);
  // The files of this run replace those of a previous one (which stay as files of their own).
  b->output_file_id.clear();
  b->error_file_id.clear();
  if (op.output) {
    if (auto s = put_file(t, *op.output); !s) return s.error();
    b->output_file_id = op.output->id;
  }
  if (op.error) {
    if (auto s = put_file(t, *op.error); !s) return s.error();
    b->error_file_id = op.error->id;
  }
  if (op.completed >= 0 && op.failed >= 0) {
    b->completed = op.completed;
    b->failed = op.failed;
  }
  if (op.failure) {
    b->stop_code = errc::batch_failed;
    b->errors.push_back(*op.failure);
  }
  if (b->stop_code == errc::batch_cancelled) {
    b->status = batch_status::cancelled;
    b->cancelled_at = now;
  } else if (b->stop_code == errc::batch_expired) {
    b->status = batch_status::expired;
    b->expired_at = now;
  } else if (b->stop_code == errc::batch_failed) {
    b->status = batch_status::failed;
    b->failed_at = now;
  } else {
    b->status = batch_status::completed;
    b->completed_at = now;
  }
  // The result lines now live in the files; drop them from the store.
  std::vector<std::string> keys;
  t.scan(db::batch_lines, op.id + "/", [&](std::string_view key, std::string_view) {
    if (key.size() != op.id.size() + 9 || key.substr(0, op.id.size() + 1) != op.id + "/")
      return false;
    keys.emplace_back(key);
    return true;
  });
  for (const auto& k : keys) t.del(db::batch_lines, k);
  if (auto s = save(t, *b); !s) return s.error();
  auto r = with_batch(op_reply::kind::done, std::move(*b));
  announce_end(t, *r.batch, op.now_ms, r);
  return r;
}

result<op_reply> apply_batch(write_txn& t, const rerun_batch_op& op) {
  auto b = get_batch(t, op.id);
  if (!b || b->tenant != op.tenant) return answer(op_reply::kind::not_found);
  auto refuse = [&](std::string why) {
    op_reply r = with_batch(op_reply::kind::refused, *b);
    r.refusal = make_error(errc::job_not_rerunnable, "job " + b->id + " " + std::move(why), "id");
    return r;
  };
  if (!is_terminal(b->status))
    return refuse("is " + std::string(to_string(job_status_of(b->status))) +
                  "; a rerun waits until its run has finished");
  if (b->total == 0) return refuse("failed validation: none of its lines was accepted");
  if (b->error_file_id.empty()) return refuse("has no failed lines: it has no error file");
  if (!get_file(t, b->input_file_id))
    return refuse("cannot be rerun: its input file " + b->input_file_id + " was deleted");
  if (!get_file(t, b->error_file_id))
    return refuse("cannot be rerun: its error file " + b->error_file_id + " was deleted");
  if (!b->output_file_id.empty() && !get_file(t, b->output_file_id))
    return refuse("cannot be rerun: its output file " + b->output_file_id + " was deleted");
  const int64_t now = seconds(op.now_ms);
  b->status = batch_status::in_progress;
  b->in_progress_at = now;
  b->finalizing_at = b->completed_at = b->failed_at = b->expired_at = 0;
  b->cancelling_at = b->cancelled_at = 0;
  b->deadline_ms = op.now_ms + op.window_ms;
  b->expires_at = seconds(b->deadline_ms);
  b->stop_code.clear();
  b->errors.clear();
  b->failed = 0;  // the error file's lines run again; the output file's stay counted
  ++b->run;
  if (auto s = put_batch(t, *b); !s) return s.error();
  if (auto s = t.put(db::batch_active, b->id, ""); !s) return s.error();
  return with_batch(op_reply::kind::done, std::move(*b));
}

result<op_reply> apply_batch(write_txn& t, const delete_batch_op& op) {
  auto b = get_batch(t, op.id);
  if (!b || b->tenant != op.tenant) return answer(op_reply::kind::not_found);
  if (!is_terminal(b->status)) {
    op_reply r = with_batch(op_reply::kind::refused, *b);
    r.refusal =
        make_error(errc::job_not_deletable,
                   "job " + b->id + " is " + std::string(to_string(job_status_of(b->status))) +
                       "; cancel it, or wait until it has finished, then delete it",
                   "id");
    return r;
  }
  // Its result lines (none once finalized) and its events, each keyed "<id>/…".
  const std::string prefix = op.id + "/";
  for (db d : {db::batch_lines, db::events}) {
    std::vector<std::string> keys;
    t.scan(d, prefix, [&](std::string_view key, std::string_view) {
      if (!key.starts_with(prefix)) return false;
      keys.emplace_back(key);
      return true;
    });
    for (const auto& k : keys) t.del(d, k);
  }
  t.del(db::batch_index, index_key(b->tenant, b->id));
  t.del(db::batch_active, b->id);
  t.del(db::batches, b->id);
  return with_batch(op_reply::kind::done, std::move(*b));
}

std::vector<file_record> list_files(const txn_view& t, std::string_view tenant,
                                    std::string_view purpose, bool ascending,
                                    std::string_view after, size_t limit, bool& has_more) {
  std::vector<file_record> out;
  has_more = false;
  std::string prefix = index_key(tenant, "");
  auto visit = [&](std::string_view key, std::string_view) {
    if (key.substr(0, prefix.size()) != prefix) return false;
    auto id = key.substr(prefix.size());
    if (!after.empty() && id == after) return true;
    auto f = get_file(t, id);
    if (!f || (!purpose.empty() && f->purpose != purpose)) return true;
    if (out.size() == limit) {
      has_more = true;
      return false;
    }
    out.push_back(std::move(*f));
    return true;
  };
  if (ascending) {
    t.scan(db::file_index, after.empty() ? prefix : index_key(tenant, after), visit);
  } else {
    // The greatest key <= "<tenant>\x1f\xff": the tenant's newest file.
    std::string from = after.empty() ? prefix + "\xff" : index_key(tenant, after);
    t.scan_reverse(db::file_index, from, visit);
  }
  return out;
}

std::vector<batch_record> list_batches(const txn_view& t, std::string_view tenant,
                                       std::string_view after, size_t limit, bool& has_more) {
  std::vector<batch_record> out;
  has_more = false;
  std::string prefix = index_key(tenant, "");
  std::string from = after.empty() ? prefix + "\xff" : index_key(tenant, after);
  t.scan_reverse(db::batch_index, from, [&](std::string_view key, std::string_view) {
    if (key.substr(0, prefix.size()) != prefix) return false;
    auto id = key.substr(prefix.size());
    if (!after.empty() && id == after) return true;
    auto b = get_batch(t, id);
    if (!b) return true;
    if (out.size() == limit) {
      has_more = true;
      return false;
    }
    out.push_back(std::move(*b));
    return true;
  });
  return out;
}

std::vector<std::string> active_batches(const txn_view& t) {
  std::vector<std::string> out;
  t.scan(db::batch_active, {}, [&](std::string_view key, std::string_view) {
    out.emplace_back(key);
    return true;
  });
  return out;
}

bool has_batch_line(const txn_view& t, std::string_view batch_id, uint64_t slot) {
  return t.get(db::batch_lines, batch_line_key(batch_id, slot)).has_value();
}

void scan_batch_lines(const txn_view& t, std::string_view batch_id,
                      const std::function<bool(uint64_t, bool, std::string_view)>& fn) {
  std::string prefix = std::string(batch_id) + "/";
  t.scan(db::batch_lines, prefix, [&](std::string_view key, std::string_view value) {
    if (key.size() != prefix.size() + 8 || key.substr(0, prefix.size()) != prefix) return false;
    if (value.empty()) return true;
    return fn(batch_line_slot(key), value[0] == 'o', value.substr(1));
  });
}

std::vector<std::string> expired_files(const txn_view& t, int64_t now_s, size_t limit) {
  std::vector<std::string> out;
  for (auto& [at, id] : read_due(t, db::file_expiry, now_s * 1000, limit))
    out.push_back(std::move(id));
  return out;
}

}  // namespace sy::storage
