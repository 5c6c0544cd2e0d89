#pragma once
/// Multipart uploads for tests of POST /v1/files: a form with fields and a file part, sent as
/// the Files API expects it.

#include <string>
#include <utility>
#include <vector>

#include "tests/support/http_client.hpp"

namespace sy::test {

inline const std::string form_boundary = "----sy-boundary-31415";

/// A multipart body with the given fields and (when `filename` is set) a file part.
inline std::string form(const std::vector<std::pair<std::string, std::string>>& fields,
                        const std::string& filename, const std::string& content) {
  std::string body;
  for (const auto& [k, v] : fields)
    body += "--" + form_boundary + "\r\nContent-Disposition: form-data; name=\"" + k +
            "\"\r\n\r\n" + v + "\r\n";
  if (!filename.empty())
    body += "--" + form_boundary +
            "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + filename +
            "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + content + "\r\n";
  return body + "--" + form_boundary + "--\r\n";
}

/// POST /v1/files with `body` (a form()).
inline http_reply upload(http_client& c, const std::string& body) {
  return c.request("POST", "/v1/files", body,
                   {{"Content-Type", "multipart/form-data; boundary=" + form_boundary}});
}

}  // namespace sy::test
