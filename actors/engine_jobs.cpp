// The engine's reads of jobs of every kind (DESIGN.md, "Vocabulary"): one job by id, and the
// listing. A batch answers in the job vocabulary (storage::job_of; docs/batches.md, "A batch as
// a job"). The rest of engine is in engine.cpp.

#include <algorithm>

#include "actors/batch_front.hpp"
#include "actors/engine.hpp"
#include "runtime/log.hpp"
#include "storage/batch_ops.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/ops.hpp"

namespace sy::actors {
namespace {

error not_found(const std::string& id) {
  return make_error(errc::job_not_found, "no job with id '" + id + "'", "id");
}

/// An id's ULID (the part after its prefix, job_ or batch_): the order of creation.
std::string_view ulid_of(std::string_view id) {
  auto cut = id.find('_');
  return cut == std::string_view::npos ? id : id.substr(cut + 1);
}

/// Up to `limit` + 1 records of one listing index (job_index or batch_index, each keyed
/// tenant '\x1f' id, valued by the status) of `tenant`, newest first, created before `after`'s
/// ULID when given, passing `keep`. `read` turns an id and its indexed status into a record.
template <class Read>
std::vector<storage::job_record> scan_index(const storage::txn_view& txn, storage::db index,
                                            const std::string& tenant, std::string_view prefix,
                                            const std::string& after, size_t limit,
                                            std::optional<storage::job_status> status,
                                            const Read& read) {
  std::vector<storage::job_record> out;
  const std::string head = storage::job_index_key(tenant, "");
  const std::string from =
      after.empty()
          ? tenant + '\x20'
          : storage::job_index_key(tenant, std::string(prefix) + std::string(ulid_of(after)));
  txn.scan_reverse(index, from, [&](std::string_view key, std::string_view value) {
    if (key.substr(0, head.size()) != head) return false;
    auto id = key.substr(head.size());
    if (!after.empty() && ulid_of(id) >= ulid_of(after)) return true;  // strictly older
    if (status && !value.empty() && value != storage::to_string(*status)) return true;
    auto job = read(id);
    if (!job || (status && job->status != *status)) return true;
    out.push_back(std::move(*job));
    return out.size() <= limit;
  });
  return out;
}

}  // namespace

std::optional<storage::job_record> engine::read_job(const storage::txn_view& txn,
                                                    const std::string& tenant,
                                                    const std::string& id) const {
  if (storage::is_batch_id(id)) {
    auto b = storage::get_batch(txn, id);
    if (!b || b->tenant != tenant) return std::nullopt;
    return storage::job_of(*b);
  }
  auto job = storage::get_job(txn, id);
  if (!job || !job->owned_by(tenant)) return std::nullopt;
  return job;
}

result<storage::job_record> engine::get(const std::string& tenant, const std::string& id) {
  auto txn = deps_.env.begin_read();
  auto job = read_job(txn, tenant, id);
  if (!job) return not_found(id);
  return std::move(*job);
}

result<job_page> engine::list(const std::string& tenant, std::optional<storage::job_status> status,
                              std::optional<storage::job_kind> kind, int limit,
                              const std::string& after) {
  using storage::job_kind;
  const auto n = static_cast<size_t>(limit);
  auto txn = deps_.env.begin_read();
  std::vector<storage::job_record> jobs, batches;
  if (kind != job_kind::batch) {
    jobs = scan_index(txn, storage::db::job_index, tenant, "job_", after, n, status,
                      [&](std::string_view id) {
                        auto job = storage::get_job(txn, id);
                        if (job && kind && job->kind() != *kind) job.reset();
                        return job;
                      });
  }
  if (!kind || kind == job_kind::batch) {
    batches = scan_index(txn, storage::db::batch_index, tenant, "batch_", after, n, status,
                         [&](std::string_view id) -> std::optional<storage::job_record> {
                           auto b = storage::get_batch(txn, id);
                           if (!b) return std::nullopt;
                           return storage::job_of(*b);
                         });
  }
  // Both newest first: merged by creation (the ULID), the first `limit` of them.
  job_page page;
  std::merge(std::make_move_iterator(jobs.begin()), std::make_move_iterator(jobs.end()),
             std::make_move_iterator(batches.begin()), std::make_move_iterator(batches.end()),
             std::back_inserter(page.jobs),
             [](const auto& a, const auto& b) { return ulid_of(a.id) > ulid_of(b.id); });
  page.has_more = page.jobs.size() > n;
  if (page.has_more) page.jobs.resize(n);
  return page;
}

boost::asio::awaitable<result<storage::job_record>> engine::cancel_batch(std::string tenant,
                                                                         std::string id) {
  auto b = co_await batches_->cancel_batch(tenant, id);
  if (b) co_return storage::job_of(*b);
  if (b.error().code == errc::batch_not_found) co_return not_found(id);
  if (b.error().code == errc::batch_not_cancellable) {
    auto ended = get(tenant, id);  // it ended: its status no longer changes
    if (!ended) co_return ended.error();
    co_return make_error(errc::job_not_cancellable,
                         "job " + id + " is already " +
                             std::string(storage::to_string(ended->status)) +
                             "; only queued or running jobs can be cancelled",
                         "id");
  }
  co_return b.error();
}

boost::asio::awaitable<result<storage::job_record>> engine::rerun_batch(std::string tenant,
                                                                        std::string id) {
  auto b = co_await batches_->rerun_batch(std::move(tenant), id);
  if (b) co_return storage::job_of(*b);
  if (b.error().code == errc::batch_not_found) co_return not_found(id);
  co_return b.error();
}

boost::asio::awaitable<result<storage::job_record>> engine::remove_batch(std::string tenant,
                                                                         std::string id) {
  auto b = co_await batches_->delete_batch(std::move(tenant), std::move(id));
  if (!b) co_return b.error();
  co_return storage::job_of(*b);
}

}  // namespace sy::actors
