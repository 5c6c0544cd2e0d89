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
#include "storage/json_text.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

constexpr size_t content_chunk = size_t{64} * 1024;
constexpr int files_max_limit = 10'000;
constexpr int batches_default_limit = 20;
constexpr int batches_max_limit = 100;
constexpr int64_t min_output_expiry_s = 3'600;
constexpr int64_t max_output_expiry_s = 2'592'000;

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
  auto tenant = auth_.tenant_for(header[http::field::authorization]);
  if (!tenant) return tenant.error();
  auto boundary = multipart_boundary(header[http::field::content_type]);
  if (!boundary)
    return make_error(errc::invalid_file,
                      "The upload must be sent as 'Content-Type: multipart/form-data; "
                      "boundary=...' with a 'file' part and a 'purpose' field.");
  return upload::start(std::move(*tenant), *boundary, batches_->upload_dir(), files_max_bytes_,
                       max_task_file_bytes_);
}

boost::asio::awaitable<response> request_handler::finish_upload(std::unique_ptr<upload> u,
                                                                request header) {
  auto answer = [&](response res) {
    res.set("x-request-id", new_request_id());
    return res;
  };
  auto f = u->finish();
  if (!f) co_return answer(error_for(f.error(), header));
  f->created_at = static_cast<int64_t>(std::time(nullptr));
  if (u->expires_after() > 0) f->expires_at = f->created_at + u->expires_after();
  std::string staged = u->adopt();
  auto stored = co_await batches_->create_file(std::move(*f), std::move(staged));
  if (!stored) co_return answer(error_for(stored.error(), header));
  co_return answer(json_response(http::status::ok, file_to_json(*stored), header));
}

// --- files ------------------------------------------------------------------------------------

response request_handler::list_files(const request& req) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) return error_for(tenant.error(), req);
  auto q = parse_query(req.target());
  if (!q) return error_for(q.error(), req);
  auto limit = int_param(*q, "limit", files_max_limit, 1, files_max_limit);
  if (!limit) return error_for(limit.error(), req);
  std::string order = query_value(*q, "order").value_or("desc");
  if (order != "asc" && order != "desc")
    return error_for(make_error(errc::invalid_value, "'order' must be 'asc' or 'desc'.", "order"),
                     req);
  std::string purpose = query_value(*q, "purpose").value_or("");
  std::string after = query_value(*q, "after").value_or("");
  auto page = batches_->list_files(*tenant, purpose, order == "asc", after, *limit);
  if (!page) return error_for(page.error(), req);
  json data = json::array();
  for (const auto& f : page->files) data.push_back(file_to_json(f));
  bool empty = page->files.empty();
  return json_response(http::status::ok,
                       list_json(std::move(data), empty ? "" : page->files.front().id,
                                 empty ? "" : page->files.back().id, page->has_more),
                       req);
}

response request_handler::get_file(const request& req, const std::string& id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) return error_for(tenant.error(), req);
  auto f = batches_->get_file(*tenant, id);
  if (!f) return error_for(f.error(), req);
  return json_response(http::status::ok, file_to_json(*f), req);
}

reply request_handler::file_content(const request& req, const std::string& id) {
  reply out;
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) {
    out.res = error_for(tenant.error(), req);
    return out;
  }
  auto f = batches_->get_file(*tenant, id);
  if (!f) {
    out.res = error_for(f.error(), req);
    return out;
  }
  // Opened now, so a delete racing the download cannot cut it short.
  int fd = ::open(batches_->file_path(id).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.res =
        error_for(make_error(errc::file_not_found, "No such file: '" + id + "'.", "file_id"), req);
    return out;
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
  return out;
}

boost::asio::awaitable<response> request_handler::delete_file(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  auto f = co_await batches_->delete_file(std::move(*tenant), id);
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
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  auto doc = admission_.json(req.body());
  if (!doc) co_return error_for(doc.error(), req);
  if (!doc->is_object())
    co_return error_for(
        make_error(errc::invalid_request, "The request body must be a JSON object."), req);
  const json& d = *doc;
  for (const auto& [k, v] : d.items())
    if (k != "input_file_id" && k != "endpoint" && k != "completion_window" && k != "metadata" &&
        k != "output_expires_after")
      co_return error_for(
          make_error(errc::unknown_parameter,
                     "Unrecognized request argument supplied: " + quote_client(k) + ".", k),
          req);
  auto text = [&](const char* name) -> result<std::string> {
    auto it = d.find(name);
    if (it == d.end() || it->is_null())
      return make_error(errc::missing_required_parameter,
                        std::string("'") + name + "' is required.", name);
    if (!it->is_string() || it->get_ref<const std::string&>().empty())
      return make_error(errc::invalid_value,
                        std::string("'") + name + "' must be a non-empty string.", name);
    return it->get<std::string>();
  };
  actors::batch_request r;
  r.tenant = *tenant;
  auto input = text("input_file_id");
  if (!input) co_return error_for(input.error(), req);
  r.input_file_id = *input;
  auto endpoint = text("endpoint");
  if (!endpoint) co_return error_for(endpoint.error(), req);
  if (!endpoints::find(*endpoint))
    co_return error_for(make_error(errc::invalid_value,
                                   "'endpoint' must be one of " + endpoints::list() + "; got '" +
                                       endpoint->substr(0, 64) + "'.",
                                   "endpoint"),
                        req);
  r.endpoint = *endpoint;
  auto window = text("completion_window");
  if (!window) co_return error_for(window.error(), req);
  auto windows = config::parse_completion_windows(completion_windows_);
  if (windows) {
    for (const auto& w : *windows)
      if (w.text == *window) {
        r.completion_window = w.text;
        r.completion_window_ms = w.ms;
      }
  }
  if (r.completion_window.empty())
    co_return error_for(make_error(errc::invalid_value,
                                   "'completion_window' must be one of: " + completion_windows_ +
                                       "; got '" + *window + "'.",
                                   "completion_window"),
                        req);
  if (auto it = d.find("metadata"); it != d.end()) {
    if (auto st = actors::check_metadata(*it); !st) co_return error_for(st.error(), req);
    r.metadata = *it;
  }
  if (auto it = d.find("output_expires_after"); it != d.end() && !it->is_null()) {
    const json& o = *it;
    bool valid = o.is_object() && o.value("anchor", json()) == "created_at" &&
                 o.contains("seconds") && o["seconds"].is_number_integer() &&
                 o["seconds"].get<int64_t>() >= min_output_expiry_s &&
                 o["seconds"].get<int64_t>() <= max_output_expiry_s;
    if (!valid)
      co_return error_for(make_error(errc::invalid_value,
                                     "'output_expires_after' must be {\"anchor\": \"created_at\", "
                                     "\"seconds\": 3600..2592000}.",
                                     "output_expires_after"),
                          req);
    r.output_expires_after = o["seconds"].get<int64_t>();
  }
  r.trace = trace::parse(req["traceparent"], req["tracestate"]).value_or(trace::context{});
  auto b = co_await batches_->create_batch(std::move(r));
  if (!b) co_return error_for(b.error(), req);
  co_return json_response(http::status::ok, batch_to_json(*b), req);
}

response request_handler::get_batch(const request& req, const std::string& id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) return error_for(tenant.error(), req);
  auto b = batches_->get_batch(*tenant, id);
  if (!b) return error_for(b.error(), req);
  return json_response(http::status::ok, batch_to_json(*b), req);
}

response request_handler::list_batches(const request& req) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) return error_for(tenant.error(), req);
  auto q = parse_query(req.target());
  if (!q) return error_for(q.error(), req);
  auto limit = int_param(*q, "limit", batches_default_limit, 1, batches_max_limit);
  if (!limit) return error_for(limit.error(), req);
  std::string after = query_value(*q, "after").value_or("");
  auto page = batches_->list_batches(*tenant, after, *limit);
  if (!page) return error_for(page.error(), req);
  json data = json::array();
  for (const auto& b : page->batches) data.push_back(batch_to_json(b));
  bool empty = page->batches.empty();
  return json_response(http::status::ok,
                       list_json(std::move(data), empty ? "" : page->batches.front().id,
                                 empty ? "" : page->batches.back().id, page->has_more),
                       req);
}

boost::asio::awaitable<response> request_handler::cancel_batch(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  auto b = co_await batches_->cancel_batch(std::move(*tenant), std::move(id));
  if (!b) co_return error_for(b.error(), req);
  co_return json_response(http::status::ok, batch_to_json(*b), req);
}

}  // namespace sy::api::detail
