#include "api/detail/gzip.hpp"

#include <zlib.h>

#include <cctype>
#include <stdexcept>

namespace sy::api::detail {

struct gzip_stream::state {
  z_stream z{};
  bool ok = false;
};

gzip_stream::gzip_stream() : s_(std::make_unique<state>()) {
  // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
  s_->ok = deflateInit2(&s_->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                        Z_DEFAULT_STRATEGY) == Z_OK;
  if (!s_->ok) throw std::runtime_error("zlib: deflateInit2 failed");
}

gzip_stream::~gzip_stream() {
  if (s_->ok) deflateEnd(&s_->z);
}

std::string gzip_stream::compress(std::string_view in, bool finish) {
  std::string out;
  auto& z = s_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char buf[64 * 1024];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    const int rc = deflate(&z, finish ? Z_FINISH : Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (finish ? rc == Z_STREAM_END : (z.avail_in == 0 && z.avail_out != 0)) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
  }
  return out;
}

bool accepts_gzip(std::string_view header) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view item = header.substr(pos, end - pos);
    pos = end + 1;
    std::string coding, rest;
    size_t semi = item.find(';');
    for (char ch : item.substr(0, semi))
      if (!std::isspace(static_cast<unsigned char>(ch)))
        coding += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (coding != "gzip" && coding != "*") continue;
    if (semi != std::string_view::npos) {
      for (char ch : item.substr(semi + 1))
        if (!std::isspace(static_cast<unsigned char>(ch))) rest += ch;
      if (rest == "q=0" || rest == "q=0.0" || rest == "q=0.00" || rest == "q=0.000") continue;
    }
    return true;
  }
  return false;
}

}  // namespace sy::api::detail
