/// `switchyard`: the command line entry point. `serve` wires the parts together in dependency
/// order — storage, the listeners' sockets (bound, not yet accepting), NATS (private or given),
/// engine, then HTTP serving on those sockets — waits for SIGTERM/SIGINT, and stops them in
/// reverse order (docs/architecture.md, "Startup" and "Shutdown").

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "actors/engine.hpp"
#include "api/http_server.hpp"
#include "api/listener.hpp"
#include "api/nats_intake.hpp"
#include "api/nats_service.hpp"
#include "config/cli.hpp"
#include "config/sha256.hpp"
#include "runtime/admin_client.hpp"
#include "runtime/client_cli.hpp"
#include "runtime/clock.hpp"
#include "runtime/jetstream.hpp"
#include "runtime/js_layout_keeper.hpp"
#include "runtime/log.hpp"
#include "runtime/nats_server.hpp"
#include "runtime/store_registration.hpp"
#include "runtime/trace.hpp"
#include "storage/lmdb_env.hpp"

extern char** environ;

namespace {

using namespace sy;

int fail(std::string_view what, const sy::error& e) {
  log::error("main", std::string(what), {{"code", e.code}, {"error", e.message}});
  return 1;
}

/// Blocks SIGTERM/SIGINT in every thread (set before any thread starts) so that main can wait
/// for them with sigtimedwait.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

/// Writes `<data_dir>/<name>`: the HOST:PORT a listener bound (`listen`: as configured, with
/// the port it got), for scripts and tests that ask for port 0.
void write_listen_file(const config::settings& s, const std::string& listen, uint16_t port,
                       const char* name = "listen.addr") {
  auto host = listen.substr(0, listen.rfind(':'));
  auto path = std::filesystem::path(s.data_dir) / name;
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << host << ":" << port << "\n";
  }
  std::filesystem::rename(tmp, path);
}

/// An exclusive lock on <data_dir>/lock, held for the life of the process (the kernel releases a
/// flock when its process dies, kill -9 included), so that two processes never share a store.
class data_dir_lock {
 public:
  static result<std::unique_ptr<data_dir_lock>> take(const std::string& data_dir) {
    const auto path = (std::filesystem::path(data_dir) / "lock").string();
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return make_error(errc::storage_error, "cannot open " + path + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char pid[32] = {};
      (void)!::pread(fd, pid, sizeof pid - 1, 0);
      ::close(fd);
      std::string holder(pid);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      return make_error(errc::data_dir_in_use, "the data directory " + data_dir +
                                                   " is in use by another switchyard "
                                                   "process (pid " +
                                                   (holder.empty() ? "unknown" : holder) +
                                                   "); give this one its own --data-dir");
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    (void)!::ftruncate(fd, 0);
    (void)!::pwrite(fd, pid.data(), pid.size(), 0);
    return std::unique_ptr<data_dir_lock>(new data_dir_lock(fd));
  }
  ~data_dir_lock() { ::close(fd_); }
  data_dir_lock(const data_dir_lock&) = delete;
  data_dir_lock& operator=(const data_dir_lock&) = delete;

 private:
  explicit data_dir_lock(int fd) : fd_(fd) {}
  int fd_;
};

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("unknown");
}

/// Claims the streams for this store at start: at once when they are free or this store's own,
/// after the other store's lease when its engine stopped renewing; an error when that engine is
/// alive or NATS keeps failing.
status claim_streams(runtime::store_registration& registration) {
  using state = runtime::store_registration::state;
  const int64_t give_up = steady_ms() + 30'000;
  bool told = false;
  for (;;) {
    switch (registration.try_claim(steady_ms())) {
      case state::held:
        log::info("registry", "the streams are claimed for this store",
                  {{"bucket", registration.bucket()}});
        return ok;
      case state::conflict:
        return make_error(errc::streams_in_use, registration.conflict());
      case state::waiting:
        if (!told)
          log::warn("registry",
                    "another store's engine is registered on these streams; waiting to see whether "
                    "it still renews its lease",
                    {{"other", registration.other()}});
        told = true;
        break;
      case state::unavailable:
        if (steady_ms() > give_up)
          return make_error(errc::nats_unavailable,
                            "cannot register the store in JetStream: " + registration.last_error());
        break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int serve(const config::settings& s, const std::vector<std::string>& warnings) {
  log::set_level(s.log_level);
  for (const auto& w : warnings) log::warn("config", w);
  sigset_t stop_signals = block_stop_signals();
  std::error_code ec;
  std::filesystem::create_directories(s.data_dir, ec);
  if (ec)
    return fail("cannot create the data directory",
                make_error(sy::errc::storage_error, ec.message()));

  auto lock = data_dir_lock::take(s.data_dir);
  if (!lock) return fail("cannot lock the data directory", lock.error());
  auto env = storage::environment::open(s.data_dir, s.lmdb_initial_map_bytes);
  if (!env) return fail("cannot open the job store", env.error());
  // Every address is taken before anything starts: one that is in use ends the process here, at
  // once, before NATS, the engine or a listener has done any work (a listener bound after the
  // public one began accepting would answer submissions and then stop the process slowly).
  auto public_socket = api::listener::bind(s.listen);
  if (!public_socket) return fail("cannot bind the public listener", public_socket.error());
  std::optional<api::listener> internal_socket;
  if (!s.internal_listen.empty()) {
    auto bound = api::listener::bind(s.internal_listen);
    if (!bound) return fail("cannot bind the internal listener", bound.error());
    internal_socket = std::move(*bound);
  }

  std::unique_ptr<runtime::nats_server> private_nats;
  std::string nats_url = s.nats_url;
  if (nats_url.empty()) {
    runtime::nats_server_options o;
    o.binary = s.nats_server_bin;
    o.store_dir = (std::filesystem::path(s.data_dir) / "nats").string();
    o.log_file = (std::filesystem::path(s.data_dir) / "nats-server.log").string();
    auto started = runtime::nats_server::start(o);
    if (!started) return fail("cannot start the private nats-server", started.error());
    private_nats = std::move(started.value());
    nats_url = private_nats->url();
    log::info("main", "private nats-server started",
              {{"url", nats_url}, {"pid", private_nats->pid()}});
  }
  runtime::js_layout layout;
  layout.stream_prefix = s.stream_prefix;
  layout.subject_prefix = s.subject_prefix;
  layout.ack_wait_ms = s.ack_wait_ms;
  // An external server that is down does not stop the engine: submissions are committed to
  // LMDB and published once it is up (the keeper makes the streams then). A server that is up
  // but refuses the streams is a configuration error, reported now.
  auto js = runtime::js_client::open(nats_url, "switchyard", layout, 2'000);
  if (!js) return fail("cannot connect to NATS", js.error());
  // One store per set of streams (runtime/store_registration.hpp).
  std::error_code abs_ec;
  auto registration = std::make_unique<runtime::store_registration>(
      **js,
      runtime::store_identity{.store_id = (*env)->store_id(),
                              .host = host_name(),
                              .pid = ::getpid(),
                              .data_dir = std::filesystem::absolute(s.data_dir, abs_ec).string(),
                              .lease_ms = s.registration_lease_ms});
  if ((*js)->connected()) {
    if (auto st = (*js)->ensure_layout(); !st)
      return fail("cannot create the JetStream streams", st.error());
    if (auto st = claim_streams(*registration); !st)
      return fail("cannot run on these JetStream streams", st.error());
  } else {
    (*js)->set_consuming(false);  // until the keeper has claimed the streams
    log::warn("main", "NATS is not reachable; accepting submissions, connecting in the background",
              {{"url", nats_url}});
  }
  auto layout_keeper = std::make_unique<runtime::js_layout_keeper>(**js, 250, registration.get());

  runtime::system_clock_source clock;
  if (!s.otlp_endpoint.empty()) {
    std::string why;
    trace::exporter_options o;
    o.endpoint = s.otlp_endpoint;
    if (!trace::start_exporter(o, &why))
      return fail("cannot export spans", make_error(errc::invalid_config, why));
  }
  auto eng = actors::engine::start({s, **env, **js, clock});
  if (!eng) return fail("cannot start the engine", eng.error());
  actors::engine* engine = eng->get();
  // Every surface reaches the core through its messages (actors/core_messages.hpp): this
  // node's core serves them all.
  actors::core::local_client core{*engine, engine, &engine->batches()};
  auto http = api::http_server::start(
      std::move(*public_socket), s, core, [engine] { return engine->ready(); }, &engine->batches());
  if (!http) return fail("cannot start the HTTP server", http.error());
  std::unique_ptr<api::http_server> internal;
  if (internal_socket) {
    auto started = api::http_server::start_internal(std::move(*internal_socket), s, core,
                                                    [engine] { return engine->ready(); });
    if (!started) return fail("cannot start the internal listener", started.error());
    internal = std::move(*started);
    write_listen_file(s, s.internal_listen, internal->port(), "internal.addr");
  }
  auto intake = api::nats_intake::start(s, core, **js);
  if (!intake) return fail("cannot start the NATS intake", intake.error());
  auto service = api::nats_service::start(s, nats_url, core, clock.now_ms());
  if (!service) return fail("cannot start the NATS service", service.error());
  write_listen_file(s, s.listen, (*http)->port());
  log::info("main", "listening",
            {{"listen", s.listen},
             {"port", (*http)->port()},
             {"internal_port", internal ? internal->port() : 0},
             {"data_dir", s.data_dir}});

  // Wait for a stop signal; meanwhile supervise the private nats-server.
  int exit_code = 0;
  for (;;) {
    timespec one_second{1, 0};
    int sig = sigtimedwait(&stop_signals, nullptr, &one_second);
    if (sig == SIGTERM || sig == SIGINT) {
      log::info("main", "stop signal received",
                {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      break;
    }
    if (auto lost = layout_keeper->lost(); !lost.empty()) {
      log::error("main", "stopping: another store's engine holds the streams", {{"error", lost}});
      exit_code = 1;
      break;
    }
    if (private_nats && !private_nats->running()) {
      log::warn("main", "private nats-server exited; restarting it");
      if (auto st = private_nats->restart(); !st)
        log::error("main", "restarting the private nats-server failed",
                   {{"error", st.error().message}});
    }
  }
  (*http)->stop_accepting();
  (*intake)->stop();
  (*service)->stop_accepting();
  // Workers may still report while running attempts drain; the engine's stop ends their long
  // polls, so the internal listener drains at once after it.
  engine->shutdown();
  if (internal) internal->stop_accepting();
  (*service)->stop();
  (*http)->stop();
  if (internal) internal->stop();
  eng->reset();
  layout_keeper.reset();
  registration->release();  // the next engine need not wait for the lease
  js->reset();
  if (private_nats) (void)private_nats->stop();
  trace::stop_exporter();  // the spans still queued go out, within 2 s
  log::info("main", "stopped");
  return exit_code;
}

}  // namespace

// No catch-all here on purpose (bugprone-exception-escape): an exception that reaches main is a
// bug, and with no handler std::terminate aborts where it was thrown, printing its what() and
// leaving a core dump. A handler would first unwind the stack and run the destructors of the
// actor system and the server threads, which wait for work that may never end: a crash could
// become a hang.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  auto cmd = config::parse_command_line(argc, argv, config::environment_map(environ));
  if (!cmd) {
    std::fprintf(stderr, "switchyard: %s\n", cmd.error().message.c_str());
    return 2;
  }
  switch (cmd->what) {
    case config::command::kind::help:
    case config::command::kind::version:
      std::printf("%s\n", cmd->text.c_str());
      return 0;
    case config::command::kind::hash_key:
      std::printf("%s\n", config::sha256_hex(cmd->text).c_str());
      return 0;
    case config::command::kind::keys_rotate:
      return runtime::keys_rotate(cmd->url, cmd->key);
    case config::command::kind::client:
      return runtime::run_client(cmd->client);
    case config::command::kind::serve:
      return serve(cmd->s, cmd->warnings);
  }
  return 0;
}
