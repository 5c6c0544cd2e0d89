// The Files and Batch API routes of the request handler (docs/api.md, "Files and Batch API"):
// uploads (streamed by the server through `upload`), file listing, reading, content and
// deletion, and batch creation, reading, listing and cancellation.

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <ctime>
#include <optional>
#include <string_view>

#include "actors/submission.hpp"
#include "api/batch_json.hpp"
#include "api/detail/query.hpp"
#include "api/detail/request_handler.hpp"
#include "api/detail/responses.hpp"
#include "api/errors.hpp"
#include "config/client_text.hpp"
#include "config/endpoints.hpp"
#include "config/validate.hpp"
#include "runtime/json_text.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

constexpr size_t content_chunk = size_t{64} * 1024;
constexpr int files_max_limit = 10'000;
constexpr int batches_default_limit = 20;
constexpr int batches_max_limit = 100;

/// An integer query parameter in [lo, hi], or `fallback` when absent.
result<int> int_param(const std::vector<query_param>& q, const char* name, int fallback, int lo,
                      int hi) {
  auto v = query_value(q, name);
  if (!v) return fallback;
  int n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc{} || p != v->data() + v->size() || n < lo || n > hi)
    return make_error(errc::invalid_value,
                      std::string("'") + name + "' must be an integer from " + std::to_string(lo) +
                          " to " + std::to_string(hi) + ".",
                      name);
  return n;
}

json list_json(json data, const std::string& first, const std::string& last, bool has_more) {
  return {{"object", "list"},
          {"data", std::move(data)},
          {"first_id", first.empty() ? json(nullptr) : json(first)},
          {"last_id", last.empty() ? json(nullptr) : json(last)},
          {"has_more", has_more}};
}

}  // namespace

// --- uploads --------------------------------------------------------------------------------

result<std::unique_ptr<upload>> request_handler::begin_upload(const request& header) {
  if (!batches_) return make_error(errc::not_found, "The Files and Batch API is not enabled here.");
  return admission_.begin_upload(client_of(header).authorization, header[http::field::content_type],
                                 batches_->upload_dir());
}

boost::asio::awaitable<response> request_handler::finish_upload(std::unique_ptr<upload> u,
                                                                request header) {
  auto answer = [&](response res) {
    res.set("x-request-id", new_request_id());
    return res;
  };
  auto staged = admission_.uploaded(*u);
  if (!staged) co_return answer(error_for(staged.error(), header));
  core::request create = core::create_file{std::move(*staged)};
  auto stored = co_await core::ask<storage::file_record>(core_, std::move(create));
  if (!stored) co_return answer(error_for(stored.error(), header));
  co_return answer(json_response(http::status::ok, file_to_json(*stored), header));
}

// --- files ------------------------------------------------------------------------------------

boost::asio::awaitable<response> request_handler::list_files(const request& req) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  auto q = parse_query(req.target());
  if (!q) co_return error_for(q.error(), req);
  auto limit = int_param(*q, "limit", files_max_limit, 1, files_max_limit);
  if (!limit) co_return error_for(limit.error(), req);
  std::string order = query_value(*q, "order").value_or("desc");
  if (order != "asc" && order != "desc")
    co_return error_for(
        make_error(errc::invalid_value, "'order' must be 'asc' or 'desc'.", "order"), req);
  std::string purpose = query_value(*q, "purpose").value_or("");
  std::string after = query_value(*q, "after").value_or("");
  core::request list = core::list_files{std::move(*tenant), std::move(purpose), order == "asc",
                                        std::move(after), *limit};
  auto page = co_await core::ask<actors::file_page>(core_, std::move(list));
  if (!page) co_return error_for(page.error(), req);
  json data = json::array();
  for (const auto& f : page->files) data.push_back(file_to_json(f));
  bool empty = page->files.empty();
  co_return json_response(http::status::ok,
                          list_json(std::move(data), empty ? "" : page->files.front().id,
                                    empty ? "" : page->files.back().id, page->has_more),
                          req);
}

boost::asio::awaitable<response> request_handler::get_file(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request get = core::get_file{std::move(*tenant), std::move(id)};
  auto f = co_await core::ask<storage::file_record>(core_, std::move(get));
  if (!f) co_return error_for(f.error(), req);
  co_return json_response(http::status::ok, file_to_json(*f), req);
}

boost::asio::awaitable<reply> request_handler::file_content(const request& req, std::string id) {
  reply out;
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) {
    out.res = error_for(tenant.error(), req);
    co_return out;
  }
  core::request get = core::get_file{std::move(*tenant), id};
  auto f = co_await core::ask<storage::file_record>(core_, std::move(get));
  if (!f) {
    out.res = error_for(f.error(), req);
    co_return out;
  }
  // Opened now, so a delete racing the download cannot cut it short.
  int fd = ::open(batches_->file_path(id).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.res =
        error_for(make_error(errc::file_not_found, "No such file: '" + id + "'.", "file_id"), req);
    co_return out;
  }
  out.res = response{http::status::ok, req.version()};
  out.res.set(http::field::content_type, "application/octet-stream");
  std::string name;
  for (char c : f->filename) name.push_back(c == '"' || c == '\\' || c < 0x20 ? '_' : c);
  out.res.set(http::field::content_disposition, "attachment; filename=\"" + name + "\"");
  out.res.keep_alive(req.keep_alive());
  auto owned = std::make_shared<int>(fd);
  out.stream = [owned](stream_writer& w) -> boost::asio::awaitable<void> {
    std::string chunk(content_chunk, '\0');
    for (;;) {
      ssize_t n = ::read(*owned, chunk.data(), chunk.size());
      if (n <= 0) break;
      std::string piece = chunk.substr(0, static_cast<size_t>(n));
      bool alive = co_await w.write(std::move(piece));
      if (!alive) break;
    }
    ::close(*owned);
    *owned = -1;
  };
  co_return out;
}

boost::asio::awaitable<response> request_handler::delete_file(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request remove = core::delete_file{std::move(*tenant), id};
  auto f = co_await core::ask<storage::file_record>(core_, std::move(remove));
  if (!f) co_return error_for(f.error(), req);
  co_return json_response(http::status::ok, {{"id", id}, {"object", "file"}, {"deleted", true}},
                          req);
}

// --- batches ----------------------------------------------------------------------------------

boost::asio::awaitable<response> request_handler::create_batch(const request& req) {
  if (!is_json_media_type(req[http::field::content_type]))
    co_return error_for(
        make_error(errc::unsupported_media_type,
                   "The request body must be sent with 'Content-Type: application/json'."),
        req);
  auto r = admission_.batch(client_of(req));
  if (!r) co_return error_for(r.error(), req);
  core::request create = core::create_batch{std::move(*r)};
  auto b = co_await core::ask<storage::batch_record>(core_, std::move(create));
  if (!b) co_return error_for(b.error(), req);
  co_return json_response(http::status::ok, batch_to_json(*b), req);
}

boost::asio::awaitable<response> request_handler::get_batch(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request get = core::get_batch{std::move(*tenant), std::move(id)};
  auto b = co_await core::ask<storage::batch_record>(core_, std::move(get));
  if (!b) co_return error_for(b.error(), req);
  co_return json_response(http::status::ok, batch_to_json(*b), req);
}

boost::asio::awaitable<response> request_handler::list_batches(const request& req) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  auto q = parse_query(req.target());
  if (!q) co_return error_for(q.error(), req);
  auto limit = int_param(*q, "limit", batches_default_limit, 1, batches_max_limit);
  if (!limit) co_return error_for(limit.error(), req);
  std::string after = query_value(*q, "after").value_or("");
  core::request list = core::list_batches{std::move(*tenant), std::move(after), *limit};
  auto page = co_await core::ask<actors::batch_page>(core_, std::move(list));
  if (!page) co_return error_for(page.error(), req);
  json data = json::array();
  for (const auto& b : page->batches) data.push_back(batch_to_json(b));
  bool empty = page->batches.empty();
  co_return json_response(http::status::ok,
                          list_json(std::move(data), empty ? "" : page->batches.front().id,
                                    empty ? "" : page->batches.back().id, page->has_more),
                          req);
}

boost::asio::awaitable<response> request_handler::cancel_batch(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request cancel = core::cancel_batch{std::move(*tenant), std::move(id)};
  auto b = co_await core::ask<storage::batch_record>(core_, std::move(cancel));
  if (!b) co_return error_for(b.error(), req);
  co_return json_response(http::status::ok, batch_to_json(*b), req);
}

}  // namespace sy::api::detail
