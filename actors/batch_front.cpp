// The batch manager's front (batch_service): the read model of the Files and Batch API, and the
// requests that change something, asked of the manager's actor (actors/batch_manager.cpp).

#include "actors/batch_front.hpp"

#include <boost/asio/post.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/ask.hpp"
#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"
#include "storage/batch_ops.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::actors {
namespace {

namespace asio = boost::asio;

/// How long a request may wait for the manager's answer: a bound against a lost answer only (a
/// request waits for a commit, and a file's rename and fsync).
constexpr auto answer_within = std::chrono::seconds(60);

}  // namespace

// --- the read model -----------------------------------------------------------------------------

batch_reads::batch_reads(const batch_deps& d)
    : env_(d.env), clock_(&d.at->clock), paths_(d.paths) {}

std::string batch_reads::upload_dir() const { return paths_.files_dir + "/uploads"; }

result<storage::file_record> batch_reads::get_file(const std::string& tenant,
                                                   const std::string& id) const {
  auto txn = env_->begin_read();
  auto f = storage::get_file(txn, id);
  if (!f || f->tenant != tenant || (f->expires_at > 0 && f->expires_at <= clock_->now_ms() / 1000))
    return make_error(errc::file_not_found, "No such file: '" + id + "'.", "file_id");
  return std::move(*f);
}

result<file_page> batch_reads::list_files(const std::string& tenant, const std::string& purpose,
                                          bool ascending, const std::string& after,
                                          int limit) const {
  file_page page;
  auto txn = env_->begin_read();
  page.files = storage::list_files(txn, tenant, purpose, ascending, after,
                                   static_cast<size_t>(limit), page.has_more);
  return page;
}

result<storage::batch_record> batch_reads::get_batch(const std::string& tenant,
                                                     const std::string& id) const {
  auto txn = env_->begin_read();
  auto b = storage::get_batch(txn, id);
  if (!b || b->tenant != tenant)
    return make_error(errc::batch_not_found, "No such batch: '" + id + "'.", "batch_id");
  return std::move(*b);
}

result<batch_page> batch_reads::list_batches(const std::string& tenant, const std::string& after,
                                             int limit) const {
  batch_page page;
  auto txn = env_->begin_read();
  page.batches =
      storage::list_batches(txn, tenant, after, static_cast<size_t>(limit), page.has_more);
  return page;
}

// --- the front ----------------------------------------------------------------------------------

batch_front::batch_front(const engine_context& ctx, storage::environment& env,
                         const runtime::webhook_policy& webhooks)
    : sys_(ctx.sys),
      deps_(make_batch_deps(ctx, env, pool_.get_executor(), tries_)),
      reads_(*deps_),
      actor_(spawn_batch_manager({deps_, &webhooks})) {
  // The pool has one thread: the first task it runs names it.
  asio::post(pool_, [] { runtime::name_this_thread("sy-batch-io"); });
}

batch_front::~batch_front() {
  stop();
  pool_.join();
}

status batch_front::start() {
  status st = make_error(errc::internal_error, "the batch manager did not start");
  caf::scoped_actor self{sys_};
  // Recovery scans the files directory: no bound but the manager's answer.
  self->request(actor_, caf::infinite, start_atom::value)
      .receive(
          [&](batch_answer& a) {
            if (auto* e = std::get_if<sy::error>(&a.value))
              st = std::move(*e);
            else
              st = ok;
          },
          [&](caf::error& e) {
            st = make_error(errc::internal_error,
                            "the batch manager did not start: " + sys_.render(e));
          });
  return st;
}

void batch_front::end() { caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown); }

void batch_front::stop() {
  caf::scoped_actor self{sys_};
  self->request(actor_, std::chrono::seconds(5), stop_atom::value)
      .receive([](batch_answer&) {}, [](caf::error&) {});
}

template <class T, class Request>
asio::awaitable<result<T>> batch_front::ask_manager(Request r) {
  auto a = co_await ask<batch_answer>(sys_, actor_, answer_within, std::move(r));
  if (!a) co_return a.error();
  co_return core::take<T>(std::move(a->value));
}

asio::awaitable<result<storage::file_record>> batch_front::create_file(
    admitted<staged_file> upload) {
  core::create_file m{std::move(upload)};
  co_return co_await ask_manager<storage::file_record>(std::move(m));
}

asio::awaitable<result<storage::file_record>> batch_front::delete_file(std::string tenant,
                                                                       std::string id) {
  core::delete_file m{std::move(tenant), std::move(id)};
  co_return co_await ask_manager<storage::file_record>(std::move(m));
}

asio::awaitable<result<storage::batch_record>> batch_front::create_batch(
    admitted<batch_request> in) {
  core::create_batch m{std::move(in)};
  co_return co_await ask_manager<storage::batch_record>(std::move(m));
}

asio::awaitable<result<storage::batch_record>> batch_front::cancel_batch(std::string tenant,
                                                                         std::string id) {
  core::cancel_batch m{std::move(tenant), std::move(id)};
  co_return co_await ask_manager<storage::batch_record>(std::move(m));
}

asio::awaitable<result<storage::batch_record>> batch_front::delete_batch(std::string tenant,
                                                                         std::string id) {
  core::delete_batch m{std::move(tenant), std::move(id)};
  co_return co_await ask_manager<storage::batch_record>(std::move(m));
}

asio::awaitable<result<storage::batch_record>> batch_front::rerun_batch(std::string tenant,
                                                                        std::string id) {
  core::rerun_batch m{std::move(tenant), std::move(id)};
  co_return co_await ask_manager<storage::batch_record>(std::move(m));
}

}  // namespace sy::actors
