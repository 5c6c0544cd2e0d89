/// fuzz_worker_call: a worker call (`/v1/task/*` on the internal listener, `sy.task.*` over NATS)
/// through admission (api/admission.hpp, admission::worker_call), which reads its worker key,
/// its capability token header and its body before the core sees any of it.
///
/// Input: byte 0 picks the call (lease, heartbeat, complete, fail, credentials); then two lines:
/// the Authorization value and the X-Switchyard-Task-Capability value; the rest is the body.
/// Both an engine without keys and one with a worker key judge it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/admission.hpp"
#include "config/client_text.hpp"
#include "config/sha256.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using sy::fuzz::check;
using sy::fuzz::next_line;
using kind = sy::api::worker_request::kind;

void judge(const sy::api::admission& admit, kind what, std::string_view body,
           std::string_view authorization, std::string_view token) {
  auto r = admit.worker_call(what, body, authorization, token);
  if (!r) {
    sy::fuzz::check_client_error(r.error());
    check(sy::api::error_body(r.error()).size() < 16 * 1024, "an error answer echoes its input");
    return;
  }
  check((*r)->what == what, "the call changed its kind");
  if (what == kind::lease) {
    check(!sy::has_control_character((*r)->runtime), "a runtime with a control character");
    check((*r)->max_tasks >= 1 && (*r)->max_tasks <= 100, "max_tasks out of 1..100");
    check((*r)->wait_ms >= 0 && (*r)->wait_ms <= 30'000, "wait_ms out of 0..30000");
    return;
  }
  check(!(*r)->token.empty() && (*r)->token.size() <= 8 * 1024, "a token out of its bounds");
  if (what == kind::complete) {
    auto out = nlohmann::json::parse((*r)->output, nullptr, /*allow_exceptions=*/false);
    check(!out.is_discarded(), "an admitted output is not JSON");
  }
  if (what == kind::fail) {
    check(!(*r)->error_code.empty() && (*r)->error_code.size() <= 64,
          "an error code out of bounds");
    check((*r)->error_message.size() <= 4096, "an error message over 4096 bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const sy::api::admission no_keys{sy::config::settings{}};
  static const sy::api::admission worker_key{[] {
    sy::config::settings s;
    s.api_keys = {{sy::config::sha256_hex("sk-worker"), "", "worker"}};
    return s;
  }()};
  const auto what = static_cast<kind>(data[0] % 5);
  std::string_view rest = sy::fuzz::as_text(data + 1, size - 1);
  std::string_view authorization = next_line(rest);
  std::string_view token = next_line(rest);
  judge(no_keys, what, rest, authorization, token);
  judge(worker_key, what, rest, authorization, token);
  return 0;
}
