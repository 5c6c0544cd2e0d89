#pragma once
/// An incremental multipart/form-data parser (RFC 7578): bytes go in as they arrive, in chunks of
/// any size, and parts come out as events — a part's headers, its data in pieces, its end — so a
/// 200 MB upload streams to disk without being held. Memory: one part's headers (at most
/// `max_header_bytes`) plus the delimiter's length of look-behind. Pure: no I/O, one thread.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "config/limits.hpp"
#include "config/result.hpp"

namespace sy::api::detail {

/// The headers of one part that matter for forms.
struct multipart_part {
  std::string name;                     ///< Content-Disposition's name
  std::optional<std::string> filename;  ///< Content-Disposition's filename, when present
  std::string content_type;             ///< the part's Content-Type, empty when absent
};

/// The boundary of a `multipart/form-data; boundary=...` Content-Type (quoted or not); nullopt
/// when the type is not multipart/form-data or names no valid boundary (1..70 characters).
std::optional<std::string> multipart_boundary(std::string_view content_type);

class multipart_parser {
 public:
  struct handlers {
    std::function<status(const multipart_part&)> on_part;  ///< a part begins
    std::function<status(std::string_view)> on_data;       ///< some of its bytes
    std::function<status()> on_part_end;                   ///< it ended
  };

  multipart_parser(std::string_view boundary, handlers h,
                   size_t max_header_bytes = limits::multipart_part_header_max_bytes);

  /// Feeds the next bytes. Errors: invalid_file (malformed body, headers over the limit) or the
  /// first error a handler returned; after an error the parser takes nothing more.
  status feed(std::string_view bytes);
  /// Whether the closing delimiter (`--boundary--`) has been seen.
  bool done() const { return state_ == state::done; }

 private:
  enum class state { preamble, after_delimiter, headers, body, done, failed };
  status fail(const std::string& message);
  status parse_headers(std::string_view block);

  std::string delimiter_;  ///< "\r\n--" + boundary
  handlers h_;
  size_t max_header_bytes_;
  state state_ = state::preamble;
  std::string pending_;  ///< bytes not yet consumed (look-behind, partial headers)
};

}  // namespace sy::api::detail
