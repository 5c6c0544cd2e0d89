#include "api/detail/multipart.hpp"

#include <algorithm>
#include <cctype>

#include "api/detail/http_text.hpp"

namespace sy::api::detail {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The value of parameter `name` in a header value such as `form-data; name="file"` (quoted
/// strings may escape `"` and `\`); nullopt when absent.
std::optional<std::string> header_param(std::string_view value, std::string_view name) {
  size_t pos = value.find(';');
  while (pos != std::string_view::npos) {
    ++pos;
    while (pos < value.size() && (value[pos] == ' ' || value[pos] == '\t')) ++pos;
    size_t eq = value.find('=', pos);
    if (eq == std::string_view::npos) return std::nullopt;
    std::string key = lower(trim_ows(value.substr(pos, eq - pos)));
    size_t v = eq + 1;
    std::string out;
    size_t next;
    if (v < value.size() && value[v] == '"') {
      size_t i = v + 1;
      while (i < value.size() && value[i] != '"') {
        if (value[i] == '\\' && i + 1 < value.size()) ++i;
        out.push_back(value[i++]);
      }
      next = value.find(';', i);
    } else {
      next = value.find(';', v);
      out = std::string(trim_ows(
          value.substr(v, next == std::string_view::npos ? std::string_view::npos : next - v)));
    }
    if (key == name) return out;
    pos = next;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> multipart_boundary(std::string_view content_type) {
  auto semi = content_type.find(';');
  if (lower(trim_ows(content_type.substr(0, semi))) != "multipart/form-data") return std::nullopt;
  auto b = header_param(content_type, "boundary");
  if (!b || b->empty() || b->size() > 70) return std::nullopt;
  return b;
}

multipart_parser::multipart_parser(std::string_view boundary, handlers h, size_t max_header_bytes)
    : delimiter_(std::string("\r\n--").append(boundary)),
      h_(std::move(h)),
      max_header_bytes_(max_header_bytes) {
  // The first delimiter may open the body without a CRLF before it: pretend there was one.
  pending_ = "\r\n";
}

status multipart_parser::fail(const std::string& message) {
  state_ = state::failed;
  pending_.clear();
  return make_error(errc::invalid_file,
                    "The multipart/form-data body is malformed: " + message + ".");
}

status multipart_parser::parse_headers(std::string_view block) {
  multipart_part part;
  bool disposition = false;
  size_t pos = 0;
  while (pos <= block.size()) {
    size_t eol = block.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = block.size();
    std::string_view line = block.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return fail("a part header has no ':'");
    std::string name = lower(trim_ows(line.substr(0, colon)));
    std::string_view value = trim_ows(line.substr(colon + 1));
    if (name == "content-disposition") {
      if (lower(trim_ows(value.substr(0, value.find(';')))) != "form-data")
        return fail("a part is not form-data");
      auto n = header_param(value, "name");
      if (!n) return fail("a part's Content-Disposition has no name");
      part.name = *n;
      part.filename = header_param(value, "filename");
      disposition = true;
    } else if (name == "content-type") {
      part.content_type = std::string(value);
    }
  }
  if (!disposition) return fail("a part has no Content-Disposition header");
  return h_.on_part ? h_.on_part(part) : ok;
}

status multipart_parser::feed(std::string_view bytes) {
  if (state_ == state::failed)
    return make_error(errc::invalid_file, "The upload was already rejected.");
  if (state_ == state::done) return ok;  // the epilogue is ignored
  pending_.append(bytes);
  for (;;) {
    switch (state_) {
      case state::preamble: {
        size_t at = pending_.find(delimiter_);
        if (at == std::string::npos) {
          // Keep only what could be the start of the delimiter.
          if (pending_.size() >= delimiter_.size())
            pending_.erase(0, pending_.size() - (delimiter_.size() - 1));
          return ok;
        }
        pending_.erase(0, at + delimiter_.size());
        state_ = state::after_delimiter;
        break;
      }
      case state::after_delimiter: {
        if (pending_.size() < 2) return ok;
        if (pending_.compare(0, 2, "--") == 0) {
          state_ = state::done;
          pending_.clear();
          return ok;
        }
        // Transport padding (spaces, tabs) may precede the CRLF.
        size_t i = 0;
        while (i < pending_.size() && (pending_[i] == ' ' || pending_[i] == '\t')) ++i;
        if (pending_.size() - i < 2) return ok;
        if (pending_.compare(i, 2, "\r\n") != 0) return fail("a delimiter is not followed by CRLF");
        pending_.erase(0, i + 2);
        state_ = state::headers;
        break;
      }
      case state::headers: {
        // A part with no headers at all starts with the blank line at once.
        size_t end = pending_.compare(0, 2, "\r\n") == 0 ? 0 : pending_.find("\r\n\r\n");
        // The same limit however the body arrives: the header block itself, without the blank
        // line that ends it (3 of whose 4 bytes may already be here), is what is counted.
        if (end == std::string::npos) {
          if (pending_.size() > max_header_bytes_ + 3)
            return fail("a part's headers are too large");
          return ok;
        }
        if (end > max_header_bytes_) return fail("a part's headers are too large");
        if (end == 0) return fail("a part has no Content-Disposition header");
        if (auto s = parse_headers(std::string_view(pending_).substr(0, end)); !s) {
          state_ = state::failed;
          return s;
        }
        pending_.erase(0, end + 4);
        state_ = state::body;
        break;
      }
      case state::body: {
        size_t at = pending_.find(delimiter_);
        if (at == std::string::npos) {
          if (pending_.size() >= delimiter_.size()) {
            size_t n = pending_.size() - (delimiter_.size() - 1);
            if (h_.on_data)
              if (auto s = h_.on_data(std::string_view(pending_).substr(0, n)); !s) {
                state_ = state::failed;
                return s;
              }
            pending_.erase(0, n);
          }
          return ok;
        }
        if (at > 0 && h_.on_data)
          if (auto s = h_.on_data(std::string_view(pending_).substr(0, at)); !s) {
            state_ = state::failed;
            return s;
          }
        if (h_.on_part_end)
          if (auto s = h_.on_part_end(); !s) {
            state_ = state::failed;
            return s;
          }
        pending_.erase(0, at + delimiter_.size());
        state_ = state::after_delimiter;
        break;
      }
      case state::done:
      case state::failed:
        return ok;
    }
  }
}

}  // namespace sy::api::detail
