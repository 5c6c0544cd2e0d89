/// `switchyard`: the command line entry point. `serve` wires the parts together in dependency
/// order — storage, NATS (private or given), engine, HTTP — waits for SIGTERM/SIGINT, and stops
/// them in reverse order (docs/architecture.md, "Shutdown").

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "actors/engine.hpp"
#include "api/http_server.hpp"
#include "api/nats_intake.hpp"
#include "config/cli.hpp"
#include "config/sha256.hpp"
#include "runtime/clock.hpp"
#include "runtime/jetstream.hpp"
#include "runtime/js_layout_keeper.hpp"
#include "runtime/log.hpp"
#include "runtime/nats_server.hpp"
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

/// Writes HOST:PORT to <data_dir>/listen.addr once the server listens (tests and scripts read it
/// when they asked for port 0).
void write_listen_file(const config::settings& s, uint16_t port) {
  auto host = s.listen.substr(0, s.listen.rfind(':'));
  auto path = std::filesystem::path(s.data_dir) / "listen.addr";
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << host << ":" << port << "\n";
  }
  std::filesystem::rename(tmp, path);
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

  auto env = storage::environment::open(s.data_dir, s.lmdb_initial_map_bytes);
  if (!env) return fail("cannot open the job store", env.error());

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
  if ((*js)->connected()) {
    if (auto st = (*js)->ensure_layout(); !st)
      return fail("cannot create the JetStream streams", st.error());
  } else {
    log::warn("main", "NATS is not reachable; accepting submissions, connecting in the background",
              {{"url", nats_url}});
  }
  auto layout_keeper = std::make_unique<runtime::js_layout_keeper>(**js);

  runtime::system_clock_source clock;
  auto eng = actors::engine::start({s, **env, **js, clock});
  if (!eng) return fail("cannot start the engine", eng.error());
  actors::engine* engine = eng->get();
  auto http = api::http_server::start(
      s, *engine, [engine] { return engine->ready(); }, &engine->batches());
  if (!http) return fail("cannot start the HTTP server", http.error());
  auto intake = api::nats_intake::start(s, *engine, **js);
  if (!intake) return fail("cannot start the NATS intake", intake.error());
  write_listen_file(s, (*http)->port());
  log::info("main", "listening",
            {{"listen", s.listen}, {"port", (*http)->port()}, {"data_dir", s.data_dir}});

  // Wait for a stop signal; meanwhile supervise the private nats-server.
  for (;;) {
    timespec one_second{1, 0};
    int sig = sigtimedwait(&stop_signals, nullptr, &one_second);
    if (sig == SIGTERM || sig == SIGINT) {
      log::info("main", "stop signal received",
                {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
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
  engine->shutdown();
  (*http)->stop();
  eng->reset();
  layout_keeper.reset();
  js->reset();
  if (private_nats) (void)private_nats->stop();
  log::info("main", "stopped");
  return 0;
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
    case config::command::kind::serve:
      return serve(cmd->s, cmd->warnings);
  }
  return 0;
}
