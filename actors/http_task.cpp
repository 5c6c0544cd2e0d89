// The sending half of http tasks (actors/http_task.hpp): one attempt through the policy-checked
// outbound client. The checking half is http_request.cpp.

#include "actors/http_task.hpp"

#include <boost/beast/core/string.hpp>

namespace sy::actors {

using nlohmann::json;

boost::asio::awaitable<runtime::gateway_outcome> send_http_task(
    const runtime::outbound_client& client, std::string request, uint64_t max_body_bytes,
    std::shared_ptr<runtime::abort_handle> abort) {
  runtime::gateway_outcome out;
  out.tries = 1;
  const json r = json::parse(request, nullptr, /*allow_exceptions=*/false);
  if (!r.is_object() || !r.contains("method") || !r.contains("url")) {
    out.permanent = true;
    out.error = "the stored request of the task is not a request";
    co_return out;
  }
  runtime::outbound_request req;
  req.method = r["method"].get<std::string>();
  req.url = r["url"].get<std::string>();
  bool has_type = false;
  bool has_agent = false;
  if (auto h = r.find("headers"); h != r.end() && h->is_object()) {
    for (const auto& [name, value] : h->items()) {
      has_type = has_type || boost::beast::iequals(name, "content-type");
      has_agent = has_agent || boost::beast::iequals(name, "user-agent");
      req.headers.emplace_back(name, value.get<std::string>());
    }
  }
  if (!has_agent) req.headers.emplace_back("User-Agent", "switchyard-http-task");
  if (auto b = r.find("body"); b != r.end() && !b->is_null()) {
    if (b->is_string()) {
      req.body = b->get<std::string>();
    } else {
      req.body = b->dump(-1, ' ', false, json::error_handler_t::replace);
      if (!has_type) req.headers.emplace_back("Content-Type", "application/json");
    }
  }
  runtime::outbound_options options;
  options.max_body_bytes = max_body_bytes;
  options.read_success_body = true;
  options.peer_noun = "the server";
  options.reached_as = "may be reached by http tasks";
  auto answer = co_await client.send(std::move(req), std::move(options), std::move(abort));
  out.got_response = answer.answered;
  out.status_code = answer.status_code;
  out.body = std::move(answer.body);
  out.error = std::move(answer.error);
  out.permanent = answer.permanent;
  out.denied = answer.denied;
  const int s = answer.status_code;
  out.retryable =
      answer.answered ? s == 408 || s == 429 || s >= 500 : !answer.permanent && !answer.aborted;
  co_return out;
}

}  // namespace sy::actors
