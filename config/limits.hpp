#pragma once
/// THE limits on what a client may send: every length, size, depth and count the engine accepts
/// from outside, declared once. Each edge (HTTP, NATS intake, staged files, batch lines) checks
/// these before anything is stored, and answers a value over a limit with a 400 (413/431 for
/// sizes) naming the limit. docs/limits.md lists them all (a unit test keeps it in step with
/// `all_limits()`); limits that are settings (max_body_bytes, files_max_bytes, batch_max_lines)
/// live in the settings table and are listed there too.
///
/// An accepted value must always be storable, publishable and runnable, so the identifier limits
/// are derived from LMDB's key size and JetStream's naming rules (static_asserts below).

#include <array>
#include <cstddef>
#include <string_view>

namespace sy::limits {

/// LMDB's largest key (MDB_MAXKEYSIZE of Debian's liblmdb: 511 bytes).
inline constexpr size_t lmdb_max_key_bytes = 511;

/// JSON nesting: a document (request body, NATS submission, batch line) may nest objects and
/// arrays this deep (the top-level object is depth 1). Every walk of a client's JSON recurses at
/// most this deep.
inline constexpr int json_max_depth = 128;

/// `body.model` (jobs, sync calls, NATS, batch lines), in bytes. Stored as the LMDB key
/// `model/<model>`; its JetStream subject token is bounded separately (runtime::subject_token).
inline constexpr size_t model_max_bytes = 256;

/// Idempotency-Key header / Nats-Msg-Id of a submission: printable ASCII characters.
inline constexpr size_t idempotency_key_max_chars = 255;

/// Tenant names from the API key configuration, in bytes (part of LMDB index and idempotency
/// keys).
inline constexpr size_t tenant_max_bytes = 64;

/// Runtime names in the configuration (`runtimes`), in bytes: letters, digits, '_' and '-'
/// (a NATS subject token as they are). Not client-reachable: the engine refuses to start.
inline constexpr size_t runtime_name_max_bytes = 64;

/// An id the engine issues (`input_file_id`, ...), in bytes, where a client sends one back:
/// a longer value cannot name anything and is refused without a lookup.
inline constexpr size_t issued_id_max_bytes = 64;

/// A batch line's `custom_id`, in bytes.
inline constexpr size_t custom_id_max_bytes = 512;

/// `metadata` of a job or a batch: at most this many keys, keys and values counted in
/// characters (UTF-8 code points), as OpenAI counts them.
inline constexpr size_t metadata_max_keys = 16;
inline constexpr size_t metadata_key_max_chars = 64;
inline constexpr size_t metadata_value_max_chars = 512;

/// `webhook_url`, in bytes.
inline constexpr size_t webhook_url_max_bytes = 2048;

/// A NATS reply subject the intake answers on, in bytes.
inline constexpr size_t reply_subject_max_bytes = 255;

/// An HTTP request's start line and headers together, in bytes (Beast's parser limit).
inline constexpr size_t http_header_max_bytes = 8192;

/// A multipart upload's non-file fields (`purpose`, `expires_after[...]`), in bytes each.
inline constexpr size_t upload_field_max_bytes = 4096;

/// The headers of one part of a multipart upload (its name and filename among them), in bytes.
inline constexpr size_t multipart_part_header_max_bytes = size_t{16} * 1024;

/// JetStream names derived from client values (the per-model consumer `tasks_<token>`) stay
/// within this many bytes: nats-server stores a durable consumer under a directory of that
/// name, and file names are at most 255 bytes.
inline constexpr size_t jetstream_name_max_bytes = 255;

/// A model's subject token is its escaped name when that is at most this long, otherwise a
/// shortened, hashed form of the same length class (runtime::subject_token).
inline constexpr size_t subject_token_max_bytes = 240;

static_assert(sizeof("model/") - 1 + model_max_bytes <= lmdb_max_key_bytes,
              "the known-model key must fit LMDB's key size");
static_assert(tenant_max_bytes + 1 + idempotency_key_max_chars <= lmdb_max_key_bytes,
              "the idempotency key must fit LMDB's key size");
static_assert(sizeof("tasks_") - 1 + subject_token_max_bytes <= jetstream_name_max_bytes,
              "the per-model consumer name must fit JetStream's name length");

/// One row of the limits table (docs/limits.md lists each by name).
struct limit_info {
  std::string_view name;        ///< stable name, as docs/limits.md spells it
  long long value;              ///< the limit
  std::string_view unit;        ///< bytes, characters, levels, keys
  std::string_view error_code;  ///< what a client gets (api/errors.cpp)
};

/// Every fixed limit above that a client can reach.
inline constexpr std::array<limit_info, 14> all_limits() {
  return {{
      {"json_max_depth", json_max_depth, "levels", "json_too_deep"},
      {"model_max_bytes", model_max_bytes, "bytes", "string_above_max_length"},
      {"idempotency_key_max_chars", idempotency_key_max_chars, "characters",
       "invalid_idempotency_key"},
      {"tenant_max_bytes", tenant_max_bytes, "bytes", "the engine refuses to start"},
      {"issued_id_max_bytes", issued_id_max_bytes, "bytes", "string_above_max_length"},
      {"custom_id_max_bytes", custom_id_max_bytes, "bytes", "string_above_max_length"},
      {"metadata_max_keys", metadata_max_keys, "keys", "invalid_metadata"},
      {"metadata_key_max_chars", metadata_key_max_chars, "characters", "invalid_metadata"},
      {"metadata_value_max_chars", metadata_value_max_chars, "characters", "invalid_metadata"},
      {"webhook_url_max_bytes", webhook_url_max_bytes, "bytes", "invalid_webhook_url"},
      {"reply_subject_max_bytes", reply_subject_max_bytes, "bytes", "no reply is sent"},
      {"http_header_max_bytes", http_header_max_bytes, "bytes", "header_too_large"},
      {"upload_field_max_bytes", upload_field_max_bytes, "bytes", "invalid_value"},
      {"multipart_part_header_max_bytes", multipart_part_header_max_bytes, "bytes", "invalid_file"},
  }};
}

}  // namespace sy::limits
