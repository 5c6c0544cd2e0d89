#pragma once
/// Decompresses a whole gzip stream (an export served with `Content-Encoding: gzip`); a stream
/// that does not end is a test failure.

#include <string>

#include <gtest/gtest.h>
#include <zlib.h>

namespace sy::test {

inline std::string gunzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END) << "not a complete gzip stream";
  inflateEnd(&z);
  return out;
}

}  // namespace sy::test
