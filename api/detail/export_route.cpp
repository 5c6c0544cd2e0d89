// GET /v1/jobs/{id}/export: every task of a task list (or line of a batch, read by the core as
// its tasks: docs/batches.md) with its outcome, one JSON line each —
// `{"task_id", "custom_id", "status", "response", "error"}` — in index order, gzip'd when the
// client accepts it. The stream reads the tasks a page at a time in short read transactions
// and writes each page before reading the next, so memory stays one page whatever the list's
// size, and a slow client holds one chunk.

#include "actors/event_json.hpp"
#include "api/detail/gzip.hpp"
#include "api/detail/request_handler.hpp"
#include "api/detail/responses.hpp"
#include "storage/ops.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;

/// Tasks read per page (one read transaction each).
constexpr int export_page = 500;

void export_line(std::string& out, const storage::job_record& job,
                 const storage::task_record& task) {
  runtime::json_text line;
  line.begin_object().field("task_id", task.id).key("custom_id");
  if (task.custom_id.empty()) {
    line.null();
  } else {
    line.string(task.custom_id);
  }
  const auto status = storage::shown_status(job, task);
  line.field("status", storage::to_string(status)).key("response");
  if (task.result) {
    actors::write_result(line, *task.result);
  } else {
    line.null();
  }
  actors::write_error(line.key("error"), status != task.status ? job.error : task.error);
  out += line.end_object().take();
  out += '\n';
}

}  // namespace

boost::asio::awaitable<reply> request_handler::export_tasks(const request& req, std::string id) {
  reply out;
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) {
    out.res = error_for(tenant.error(), req);
    co_return out;
  }
  core::request probe = core::list_tasks{*tenant, id, std::nullopt, 1, ""};  // a list or a batch
  auto first = co_await core::ask<actors::task_page>(core_, std::move(probe));
  if (!first) {
    out.res = error_for(first.error(), req);
    co_return out;
  }
  const bool gzip = accepts_gzip(req[http::field::accept_encoding]);
  out.res = response{http::status::ok, req.version()};
  out.res.set(http::field::content_type, "application/x-ndjson");
  if (gzip) out.res.set(http::field::content_encoding, "gzip");
  out.res.set(http::field::vary, "Accept-Encoding");
  out.res.set(http::field::content_disposition, "attachment; filename=\"" + id + ".jsonl\"");
  out.res.keep_alive(req.keep_alive());
  out.stream = [this, tenant = std::move(*tenant), id, gzip](stream_writer& w) {
    return stream_export(w, tenant, id, gzip);
  };
  co_return out;
}

boost::asio::awaitable<void> request_handler::stream_export(stream_writer& out, std::string tenant,
                                                            std::string id, bool gzip) {
  std::unique_ptr<gzip_stream> z;
  if (gzip) z = std::make_unique<gzip_stream>();
  std::string after;
  for (;;) {
    if (out.stopping()) co_return;
    core::request next = core::list_tasks{tenant, id, std::nullopt, export_page, after};
    auto page = co_await core::ask<actors::task_page>(core_, std::move(next));
    if (!page) co_return;  // deleted meanwhile, or storage failed: the body ends short
    std::string chunk;
    for (const auto& task : page->tasks) export_line(chunk, page->job, task);
    const bool last = !page->has_more;
    if (!page->tasks.empty()) after = page->tasks.back().id;
    if (z) chunk = z->compress(chunk, last);
    if (!chunk.empty() && !co_await out.write(std::move(chunk))) co_return;
    if (last) co_return;
  }
}

}  // namespace sy::api::detail
