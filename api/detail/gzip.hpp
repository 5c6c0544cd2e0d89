#pragma once
/// gzip for streamed bodies (GET /v1/jobs/{id}/export with `Accept-Encoding: gzip`), by zlib
/// (Debian's zlib1g-dev: the format's reference implementation; docs/task-lists.md says why it
/// is a dependency). One stream per response; its memory is zlib's fixed state (~256 KiB).

#include <memory>
#include <string>
#include <string_view>

#include "config/result.hpp"

namespace sy::api::detail {

class gzip_stream {
 public:
  gzip_stream();
  ~gzip_stream();
  gzip_stream(const gzip_stream&) = delete;
  gzip_stream& operator=(const gzip_stream&) = delete;

  /// Compresses `in` and returns what is ready of the gzip stream (possibly nothing); with
  /// `finish`, everything that is left and the gzip trailer.
  std::string compress(std::string_view in, bool finish);

 private:
  struct state;
  std::unique_ptr<state> s_;
};

/// Whether an `Accept-Encoding` header accepts gzip (`gzip` or `*`, not with `q=0`).
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace sy::api::detail
