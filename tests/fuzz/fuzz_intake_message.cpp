/// fuzz_intake_message: one NATS intake message (docs/nats.md) through
/// api::detail::to_submission (admission, api/admission.hpp), with no API keys and with one
/// key, and its `Sy-Reply-To` through is_valid_reply_subject.
///
/// Input: four lines then the payload: the subject; the Authorization header; the Nats-Msg-Id
/// header; the reply subject; everything after the fourth '\n' is the payload. A header line
/// that starts with '+' is the header's value after the '+'; any other line means no header.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/submission.hpp"
#include "api/admission.hpp"
#include "api/detail/intake_message.hpp"
#include "config/sha256.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

namespace d = sy::api::detail;
using sy::fuzz::check;
using sy::fuzz::next_line;

constexpr std::string_view job_subject = "sy.submit.job";

/// A header line: present with the value after a leading '+', else absent.
std::optional<std::string> header(std::string_view line) {
  if (line.empty() || line.front() != '+') return std::nullopt;
  return std::string(line.substr(1));
}

/// The rule of intake_message.hpp, restated: non-empty printable tokens without spaces, no
/// wildcard tokens, at most 255 bytes.
bool reply_subject_rule(std::string_view s) {
  if (s.empty() || s.size() > 255 || s.front() == '.' || s.back() == '.') return false;
  if (s.find("..") != std::string_view::npos) return false;
  for (char c : s)
    if (c <= 0x20 || c > 0x7e) return false;
  return s != "*" && s != ">" && s.find(".*.") == std::string_view::npos &&
         s.find(".>.") == std::string_view::npos && !s.starts_with("*.") && !s.starts_with(">.") &&
         !s.ends_with(".*") && !s.ends_with(".>");
}

/// Runs the message through `auth`; the hash of an accepted submission, nullopt when refused.
std::optional<std::string> submit(const d::intake_input& in, const sy::api::admission& admit,
                                  std::string_view tenant) {
  auto sub = d::to_submission(in, job_subject, admit);
  if (!sub) {
    sy::fuzz::check_client_error(sub.error());
    // An input error must be answered, never redelivered (which would repeat it forever).
    check(!d::is_transient(sub.error()), "an input error is treated as transient");
    auto reply = d::reply_for(sub.error());
    check(reply.status == sy::api::lookup_error(sub.error().code).status, "reply status differs");
    return std::nullopt;
  }
  check(in.subject == job_subject, "accepted a message on another subject");
  check((*sub)->tenant == tenant, "accepted for the wrong tenant");
  check((*sub)->idempotency_key == in.msg_id.value_or(""),
        "the idempotency key is not Nats-Msg-Id");
  return sy::actors::request_hash(**sub);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sy::api::admission no_keys{sy::config::settings{}};
  static const sy::api::admission one_key{[] {
    sy::config::settings s;
    s.api_keys = {{sy::config::sha256_hex("sk-fuzz"), "fuzz"}};
    return s;
  }()};
  std::string_view rest = sy::fuzz::as_text(data, size);
  d::intake_input in;
  in.subject = next_line(rest);
  in.authorization = header(next_line(rest));
  in.msg_id = header(next_line(rest));
  std::string_view reply_to = next_line(rest);
  in.data = rest;

  check(d::is_valid_reply_subject(reply_to) == reply_subject_rule(reply_to),
        "is_valid_reply_subject disagrees with the documented rule");
  auto open = submit(in, no_keys, sy::api::default_tenant);
  auto keyed = submit(in, one_key, "fuzz");
  // The key decides only who may submit, never what: both accept the same request alike.
  if (keyed) check(open && *open == *keyed, "the API key changed the accepted request");
  return 0;
}
