#include "runtime/nats_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

namespace sy::runtime {
namespace {

using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Readiness and exit are polled at this interval: short enough that a test pays only a few ms.
constexpr auto probe_interval = std::chrono::milliseconds(3);

std::string probe_host(const std::string& host) {
  if (host.empty() || host == "0.0.0.0" || host == "localhost") return "127.0.0.1";
  return host;
}

bool make_addr(const std::string& host, int port, sockaddr_in& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return ::inet_pton(AF_INET, probe_host(host).c_str(), &addr.sin_addr) == 1;
}

result<int> pick_free_port(const std::string& host) {
  sockaddr_in addr;
  if (!make_addr(host, 0, addr)) {
    return make_error(errc::invalid_nats_host,
                      "nats-server host '" + host + "' is not an IPv4 address.", "host");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return make_error(errc::nats_server_start_failed, "socket(): " + std::string(strerror(errno)));
  }
  socklen_t len = sizeof addr;
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc == 0) rc = ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int err = errno;
  ::close(fd);
  if (rc != 0) {
    return make_error(errc::nats_server_start_failed,
                      "Could not pick a free port: " + std::string(strerror(err)));
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

bool accepts_tcp(const std::string& host, int port) {
  sockaddr_in addr;
  if (!make_addr(host, port, addr)) return false;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// nats-server names its ports file `<basename of argv[0]>_<pid>.ports`. The file exists only
// once *that* process listens, so it proves the port we probe belongs to our child.
fs::path ports_file(const nats_server_options& o, pid_t pid) {
  std::string exe = fs::path(o.binary).filename().string();
  return fs::path(o.store_dir) / (exe + "_" + std::to_string(pid) + ".ports");
}

std::vector<std::string> server_args(const nats_server_options& o, int port) {
  std::vector<std::string> args = {
      o.binary,           "-js",      "-a", o.host, "-p", std::to_string(port), "-sd", o.store_dir,
      "--ports_file_dir", o.store_dir};
  if (!o.log_file.empty()) {
    args.push_back("-l");
    args.push_back(o.log_file);
  }
  return args;
}

// Runs in the forked child of a possibly multi-threaded parent: async-signal-safe calls only.
[[noreturn]] void exec_child(pid_t parent, char* const* argv) {
  // Die with the parent so a kill -9 of switchyard frees the port and the store.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(127);
  // Own process group: a Ctrl-C on the terminal reaches switchyard, which then flushes its
  // outbox before it stops the server, instead of killing both at once.
  ::setpgid(0, 0);
  // Do not leak the parent's descriptors (LMDB, sockets) into the server.
  ::syscall(SYS_close_range, 3U, ~0U, 0U);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
  ::execvp(argv[0], argv);
  ::_exit(127);
}

std::string describe_exit(int wstatus) {
  if (WIFEXITED(wstatus)) return "exited with code " + std::to_string(WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) return "was killed by signal " + std::to_string(WTERMSIG(wstatus));
  return "stopped";
}

}  // namespace

result<std::unique_ptr<nats_server>> nats_server::start(nats_server_options options) {
  if (options.store_dir.empty()) {
    return make_error(errc::invalid_nats_options, "nats-server needs a store directory.",
                      "store_dir");
  }
  std::error_code ec;
  fs::create_directories(options.store_dir, ec);
  if (ec) {
    return make_error(errc::nats_server_start_failed, "Cannot create the NATS store directory '" +
                                                          options.store_dir + "': " + ec.message());
  }
  const bool pick = options.port == 0;
  std::unique_ptr<nats_server> server(new nats_server(std::move(options)));
  sy::error last;
  // A picked port can be taken by someone else between our probe and the child's bind.
  for (int attempt = 0; attempt < (pick ? 5 : 1); ++attempt) {
    if (pick) {
      auto port = pick_free_port(server->options_.host);
      if (!port) return port.error();
      server->port_ = *port;
    } else {
      server->port_ = server->options_.port;
    }
    auto st = server->spawn_and_wait();
    if (st) return server;
    last = st.error();
  }
  return last;
}

nats_server::~nats_server() { (void)stop(); }

std::string nats_server::url() const {
  return "nats://" + probe_host(options_.host) + ":" + std::to_string(port_);
}

status nats_server::spawn_and_wait() {
  std::vector<std::string> args = server_args(options_, port_);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t child = ::fork();
  if (child < 0) {
    return make_error(errc::nats_server_start_failed, "fork(): " + std::string(strerror(errno)));
  }
  if (child == 0) exec_child(parent, argv.data());
  pid_ = child;
  return wait_ready();
}

status nats_server::wait_ready() {
  const auto deadline = steady::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  const fs::path pf = ports_file(options_, pid_);
  while (steady::now() < deadline) {
    int wstatus = 0;
    if (try_reap(&wstatus)) {
      return make_error(errc::nats_server_start_failed,
                        "nats-server (" + options_.binary + ") " + describe_exit(wstatus) +
                            " before accepting connections on port " + std::to_string(port_) +
                            (options_.log_file.empty() ? "." : "; see " + options_.log_file));
    }
    std::error_code ec;
    if (fs::exists(pf, ec) && accepts_tcp(options_.host, port_)) return sy::ok;
    std::this_thread::sleep_for(probe_interval);
  }
  kill9();
  return make_error(errc::nats_server_start_failed,
                    "nats-server did not accept connections on port " + std::to_string(port_) +
                        " within " + std::to_string(options_.start_timeout_ms) + " ms.");
}

void nats_server::reap_blocking() {
  if (pid_ <= 0) return;
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  forget_child();
}

bool nats_server::try_reap(int* wstatus) {
  if (::waitpid(pid_, wstatus, WNOHANG) != pid_) return false;
  forget_child();
  return true;
}

void nats_server::forget_child() {
  std::error_code ec;
  fs::remove(ports_file(options_, pid_), ec);  // a killed server leaves its ports file behind
  pid_ = -1;
}

status nats_server::stop() {
  if (pid_ <= 0) return sy::ok;
  ::kill(pid_, SIGTERM);
  const auto deadline = steady::now() + std::chrono::milliseconds(options_.stop_timeout_ms);
  while (steady::now() < deadline) {
    int wstatus = 0;
    if (try_reap(&wstatus)) return sy::ok;
    std::this_thread::sleep_for(probe_interval);
  }
  kill9();
  return make_error(errc::nats_server_stop_timeout, "nats-server did not exit within " +
                                                        std::to_string(options_.stop_timeout_ms) +
                                                        " ms of SIGTERM; killed it.");
}

void nats_server::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap_blocking();
}

status nats_server::restart() {
  if (running()) {
    auto st = stop();
    if (!st) return st;
  }
  return spawn_and_wait();
}

bool nats_server::running() {
  if (pid_ <= 0) return false;
  int wstatus = 0;
  return !try_reap(&wstatus);
}

}  // namespace sy::runtime
