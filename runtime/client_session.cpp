#include "runtime/client_session.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <utility>

namespace sy::runtime::client {

http_call make_call(std::string method, std::string target) {
  http_call c;
  c.method = std::move(method);
  c.target = std::move(target);
  return c;
}

bool read_input(const std::string& path, std::string& out, std::string& why) {
  if (path.empty() || path == "-") {
    std::ostringstream text;
    text << std::cin.rdbuf();
    out = text.str();
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    why = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int complain(const std::string& what, int code) {
  std::fprintf(stderr, "switchyard: %s\n", what.c_str());
  return code;
}

std::string url_encode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string random_token(std::string_view prefix) {
  static constexpr char hex[] = "0123456789abcdef";
  std::random_device device;
  std::string out(prefix);
  for (int i = 0; i < 32; ++i) out.push_back(hex[device() & 15]);
  return out;
}

int still_running(const std::string& what, const std::string& status, int64_t wait_s) {
  return complain(what + " is still " + status + " after " + std::to_string(wait_s) + " s",
                  exit_pending);
}

bool session::draws_progress() const { return !args_.json && ::isatty(STDOUT_FILENO) == 1; }

void session::authorize(http_call& c) const {
  if (!args_.api_key.empty()) c.headers.emplace_back("Authorization", "Bearer " + args_.api_key);
}

reply session::settle(const result<http_answer>& got) const {
  reply out;
  if (!got) {
    // A file that cannot be written is this machine's problem, not the server's.
    const bool local = got.error().code == errc::storage_error;
    out.exit =
        complain(local ? got.error().message
                       : "the server at " + to_.url + " is unreachable: " + got.error().message,
                 local ? exit_failed : exit_unreachable);
    return out;
  }
  out.answer = *got;
  if (out.answer.status / 100 != 2) {
    out.exit = complain("the server answered HTTP " + std::to_string(out.answer.status) + ": " +
                            error_text(out.answer.body),
                        exit_failed);
    return out;
  }
  out.doc = nlohmann::json::parse(out.answer.body, nullptr, false);
  if (out.doc.is_discarded()) out.doc = nullptr;
  return out;
}

reply session::call(http_call c) const {
  authorize(c);
  return settle(http_exchange(to_, c));
}

reply session::download(http_call c, const std::string& path) const {
  authorize(c);
  return settle(http_download(to_, c, path));
}

reply session::stream(http_call c, const std::function<bool(std::string_view)>& on_data) const {
  authorize(c);
  return settle(http_stream(to_, c, on_data));
}

void session::print(const reply& r, const std::string& text) const {
  if (args_.json) {
    std::printf("%s\n", r.doc.is_null() ? r.answer.body.c_str() : r.doc.dump().c_str());
  } else {
    std::fputs(text.c_str(), stdout);
  }
  std::fflush(stdout);
}

}  // namespace sy::runtime::client
