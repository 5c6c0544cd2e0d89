// The Files and Batch API's admission (api/admission.hpp): `POST /v1/batches` and the uploads of
// `POST /v1/files`, read and checked here so that the batch service takes only admitted requests.

#include <string>
#include <utility>

#include "actors/submission.hpp"
#include "api/admission.hpp"
#include "api/detail/upload.hpp"
#include "config/client_text.hpp"
#include "config/endpoints.hpp"
#include "config/limits.hpp"
#include "config/validate.hpp"

namespace sy::api {
namespace {

using nlohmann::json;

constexpr int64_t min_output_expiry_s = 3'600;
constexpr int64_t max_output_expiry_s = 2'592'000;

/// A required string field of a batch: absent or null is missing_required_parameter, another
/// type invalid_request, an empty string invalid_value.
result<std::string> required_text(const json& d, const char* name) {
  auto it = d.find(name);
  if (it == d.end() || it->is_null())
    return make_error(errc::missing_required_parameter, std::string("'") + name + "' is required.",
                      name);
  if (!it->is_string())
    return make_error(errc::invalid_request, std::string("'") + name + "' must be a string.", name);
  if (it->get_ref<const std::string&>().empty())
    return make_error(errc::invalid_value, std::string("'") + name + "' must not be empty.", name);
  return it->get<std::string>();
}

/// `output_expires_after`: {"anchor": "created_at", "seconds": 3600..2592000}; 0 when absent.
result<int64_t> output_expiry(const json& d) {
  auto it = d.find("output_expires_after");
  if (it == d.end() || it->is_null()) return int64_t{0};
  const json& o = *it;
  bool valid = o.is_object() && o.size() == 2 && o.value("anchor", json()) == "created_at" &&
               o.contains("seconds") && o["seconds"].is_number_integer() &&
               o["seconds"].get<int64_t>() >= min_output_expiry_s &&
               o["seconds"].get<int64_t>() <= max_output_expiry_s;
  if (!valid)
    return make_error(errc::invalid_value,
                      "'output_expires_after' must be {\"anchor\": \"created_at\", "
                      "\"seconds\": 3600..2592000}.",
                      "output_expires_after");
  return o["seconds"].get<int64_t>();
}

/// A batch's fields (admission::batch), in the order a client reads their errors.
result<actors::batch_request> read_batch(const json& d, const std::string& windows_text) {
  if (!d.is_object())
    return make_error(errc::invalid_request, "The request body must be a JSON object.");
  for (const auto& [k, v] : d.items())
    if (k != "input_file_id" && k != "endpoint" && k != "completion_window" && k != "metadata" &&
        k != "output_expires_after" && k != "max_inflight" && k != "webhook_url" &&
        k != "max_attempts")
      return make_error(errc::unknown_parameter,
                        "Unrecognized request argument supplied: " + quote_client(k) + ".", k);
  actors::batch_request r;
  auto input = required_text(d, "input_file_id");
  if (!input) return input.error();
  // An id the engine issued is short: a longer one is refused without a lookup.
  if (input->size() > limits::issued_id_max_bytes)
    return make_error(errc::string_above_max_length,
                      "'input_file_id' is " + std::to_string(input->size()) +
                          " bytes long; no file id is longer than " +
                          std::to_string(limits::issued_id_max_bytes) + ".",
                      "input_file_id");
  r.input_file_id = std::move(*input);
  auto endpoint = required_text(d, "endpoint");
  if (!endpoint) return endpoint.error();
  if (!endpoints::find(*endpoint))
    return make_error(
        errc::invalid_value,
        "'endpoint' must be one of " + endpoints::list() + "; got " + quote_client(*endpoint) + ".",
        "endpoint");
  r.endpoint = std::move(*endpoint);
  auto window = required_text(d, "completion_window");
  if (!window) return window.error();
  if (auto windows = config::parse_completion_windows(windows_text)) {
    for (const auto& w : *windows)
      if (w.text == *window) {
        r.completion_window = w.text;
        r.completion_window_ms = w.ms;
      }
  }
  if (r.completion_window.empty())
    return make_error(errc::invalid_value,
                      "'completion_window' must be one of: " + windows_text + "; got " +
                          quote_client(*window) + ".",
                      "completion_window");
  if (auto it = d.find("metadata"); it != d.end()) {
    if (auto st = actors::check_metadata(*it); !st) return st.error();
    r.metadata = *it;
  }
  auto expiry = output_expiry(d);
  if (!expiry) return expiry.error();
  r.output_expires_after = *expiry;
  auto inflight = actors::parse_max_inflight(d, true);
  if (!inflight) return inflight.error();
  r.max_inflight = *inflight;
  auto webhook = actors::parse_webhook_url(d);
  if (!webhook) return webhook.error();
  r.webhook_url = std::move(*webhook);
  auto attempts = actors::parse_max_attempts(d);
  if (!attempts) return attempts.error();
  r.max_attempts = *attempts;
  return r;
}

}  // namespace

result<actors::admitted<actors::batch_request>> admission::batch(const client_request& r) const {
  auto tenant = this->tenant(r.authorization);
  if (!tenant) return tenant.error();
  auto doc = json(r.body);
  if (!doc) return doc.error();
  auto b = read_batch(*doc, completion_windows_);
  if (!b) return b.error();
  b->tenant = std::move(*tenant);
  b->trace = trace_of(r);
  return actors::admitted<actors::batch_request>(std::move(*b));
}

result<std::unique_ptr<detail::upload>> admission::begin_upload(
    std::optional<std::string_view> authorization, std::string_view content_type,
    const std::string& dir) const {
  auto tenant = this->tenant(authorization);
  if (!tenant) return tenant.error();
  auto boundary = detail::multipart_boundary(content_type);
  if (!boundary)
    return make_error(errc::invalid_file,
                      "The upload must be sent as 'Content-Type: multipart/form-data; "
                      "boundary=...' with a 'file' part and a 'purpose' field.");
  return detail::upload::start(std::move(*tenant), *boundary, dir, files_max_bytes_,
                               max_task_file_bytes_);
}

result<actors::admitted<actors::staged_file>> admission::uploaded(detail::upload& u) const {
  auto f = u.finish();
  if (!f) return f.error();
  return actors::admitted<actors::staged_file>(
      actors::staged_file{std::move(*f), u.adopt(), u.expires_after()});
}

}  // namespace sy::api
