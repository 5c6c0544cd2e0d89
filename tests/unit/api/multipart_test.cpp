// The incremental multipart/form-data parser: the same body fed in chunks of every size gives
// the same parts; boundaries split across chunks; malformed bodies and handler errors stop it.

#include "api/detail/multipart.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace sy::api::detail {
namespace SY_UNITY_ID {

struct seen_part {
  std::string name;
  std::optional<std::string> filename;
  std::string content_type;
  std::string data;
};

/// Feeds `body` in `chunk`-byte pieces; returns the parts and the last status.
std::pair<std::vector<seen_part>, status> parse(const std::string& boundary,
                                                const std::string& body, size_t chunk,
                                                bool* done = nullptr) {
  std::vector<seen_part> parts;
  multipart_parser p(boundary, {[&](const multipart_part& h) {
                                  parts.push_back({h.name, h.filename, h.content_type, ""});
                                  return status(ok);
                                },
                                [&](std::string_view d) {
                                  parts.back().data.append(d);
                                  return status(ok);
                                },
                                [] { return status(ok); }});
  status st = ok;
  for (size_t i = 0; i < body.size() && st; i += chunk)
    st = p.feed(std::string_view(body).substr(i, chunk));
  if (done) *done = p.done();
  return {parts, st};
}

std::string form(const std::string& b, const std::string& file_content) {
  return "preamble to ignore\r\n--" + b +
         "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--" + b +
         "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in put.jsonl\"\r\n"
         "Content-Type: application/jsonl\r\n\r\n" +
         file_content + "\r\n--" + b + "--\r\nepilogue";
}

TEST(multipart, every_chunk_size_gives_the_same_parts) {
  // Content that nearly contains the delimiter, across chunk edges.
  std::string content;
  for (int i = 0; i < 2000; ++i) content += "{\"n\":" + std::to_string(i) + "}\r\n--bou\r\n";
  const std::string body = form("boundary42", content);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{64 * 1024}, body.size()}) {
    bool done = false;
    auto [parts, st] = parse("boundary42", body, chunk, &done);
    ASSERT_TRUE(st) << chunk << ": " << st.error().message;
    EXPECT_TRUE(done) << chunk;
    ASSERT_EQ(parts.size(), 2u) << chunk;
    EXPECT_EQ(parts[0].name, "purpose");
    EXPECT_FALSE(parts[0].filename);
    EXPECT_EQ(parts[0].data, "batch");
    EXPECT_EQ(parts[1].name, "file");
    EXPECT_EQ(parts[1].filename, "in put.jsonl");
    EXPECT_EQ(parts[1].content_type, "application/jsonl");
    EXPECT_EQ(parts[1].data, content) << chunk;
  }
}

TEST(multipart, boundary_comes_from_the_content_type) {
  EXPECT_EQ(multipart_boundary("multipart/form-data; boundary=abc"), "abc");
  EXPECT_EQ(multipart_boundary("Multipart/Form-Data; charset=x; boundary=\"a b\""), "a b");
  EXPECT_FALSE(multipart_boundary("application/json"));
  EXPECT_FALSE(multipart_boundary("multipart/form-data"));
  EXPECT_FALSE(multipart_boundary("multipart/form-data; boundary=" + std::string(71, 'x')));
}

TEST(multipart, malformed_bodies_are_invalid_file) {
  auto [p1, s1] = parse("b", "--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--", 5);
  ASSERT_FALSE(s1);
  EXPECT_EQ(s1.error().code, "invalid_file");
  auto [p2, s2] = parse("b", "--b\r\nno colon here\r\n\r\nx\r\n--b--", 3);
  ASSERT_FALSE(s2);
  auto [p3, s3] = parse("b", "--bXX", 1);
  ASSERT_FALSE(s3);
  // Headers larger than the limit.
  std::string big = "--b\r\nContent-Disposition: form-data; name=\"" + std::string(20'000, 'n');
  auto [p4, s4] = parse("b", big, 1000);
  ASSERT_FALSE(s4);
  // A body that stops before the closing delimiter is not done.
  bool done = true;
  auto [p5, s5] =
      parse("b", "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nxyz", 2, &done);
  EXPECT_TRUE(s5);
  EXPECT_FALSE(done);
}

TEST(multipart, a_handler_error_stops_the_parser) {
  multipart_parser p(
      "b", {[](const multipart_part&) { return status(ok); },
            [](std::string_view) -> status { return make_error(errc::file_too_large, "too big"); },
            [] { return status(ok); }});
  auto st = p.feed("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n" +
                   std::string(100, 'x'));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, "file_too_large");
  EXPECT_FALSE(p.feed("more"));
}

TEST(multipart, the_header_limit_holds_however_the_body_arrives) {
  // A part whose header block is exactly the limit, and one byte longer, fed whole and in
  // pieces: the outcome must not depend on how the bytes were split.
  auto body = [](size_t header_bytes) {
    std::string header = "Content-Disposition: form-data; name=\"purpose\"\r\nX-Pad: ";
    header += std::string(header_bytes - header.size(), 'p');
    return "--b\r\n" + header + "\r\n\r\nbatch\r\n--b--\r\n";
  };
  const size_t limit = limits::multipart_part_header_max_bytes;
  for (size_t chunk : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
    auto [at, at_st] = parse("b", body(limit), chunk);
    EXPECT_TRUE(at_st) << chunk << ": " << (at_st ? "" : at_st.error().message);
    auto [over, over_st] = parse("b", body(limit + 1), chunk);
    EXPECT_FALSE(over_st) << chunk;
  }
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api::detail
