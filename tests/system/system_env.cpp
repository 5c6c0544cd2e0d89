#include "tests/system/system_env.hpp"

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>

#include <sys/wait.h>

#include "tests/support/wait.hpp"

namespace sy::test {

system_env::system_env() = default;

result<std::unique_ptr<runtime::nats_server>> system_env::start_nats() {
  runtime::nats_server_options o;
  o.store_dir = dir_.sub("external-nats");
  return runtime::nats_server::start(o);
}

void system_env::start_gateway(int latency_ms, uint16_t port) {
  auto log = dir_.sub("gateway-" + std::to_string(port) + ".log");
  std::filesystem::remove(log);
  gateway_ = std::make_unique<child_process>(
      std::vector<std::string>{SY_BINARY_DIR "/tests/fakes/fake_gateway", "--port",
                               std::to_string(port), "--latency-ms", std::to_string(latency_ms),
                               "--threads", "2"},
      log);
  std::smatch m;
  std::regex re("listening ([0-9]+)");
  if (!wait_for([&] {
        auto text = gateway_->log();
        return std::regex_search(text, m, re);
      }))
    throw std::runtime_error("fake_gateway did not start: " + gateway_->log());
  auto text = gateway_->log();
  std::regex_search(text, m, re);
  gateway_port_ = static_cast<uint16_t>(std::stoi(m[1]));
}

void system_env::kill_gateway() {
  gateway_->signal(SIGKILL);
  gateway_->wait(std::chrono::seconds(10));
}

std::map<std::string, int64_t> system_env::gateway_counts() {
  http_client c(gateway_port_);
  auto r = c.get("/_fake/stats");
  std::map<std::string, int64_t> out;
  auto j = r.json();
  if (j.is_object() && j.contains("by_key"))
    for (auto it = j["by_key"].begin(); it != j["by_key"].end(); ++it)
      out[it.key()] = it.value().get<int64_t>();
  return out;
}

std::vector<std::string> system_env::engine_argv(const std::vector<std::string>& extra) const {
  std::vector<std::string> argv = {SY_BINARY_DIR "/switchyard",
                                   "serve",
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--internal-listen",
                                   "127.0.0.1:0",
                                   "--data-dir",
                                   dir_.sub("data"),
                                   "--gateway",
                                   "http://127.0.0.1:" + std::to_string(gateway_port_),
                                   "--lease-ttl-ms",
                                   "3000",
                                   "--reaper-interval-ms",
                                   "200",
                                   "--requeue-initial-backoff-ms",
                                   "100",
                                   "--requeue-max-backoff-ms",
                                   "500",
                                   "--default-max-attempts",
                                   "10",
                                   "--ack-wait-ms",
                                   "5000"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

system_env::exit_report system_env::run_engine_to_exit(std::vector<std::string> extra,
                                                       std::chrono::milliseconds deadline) {
  child_process other(engine_argv(extra),
                      dir_.sub("engine-" + std::to_string(engine_runs_++) + ".log"));
  exit_report out;
  const int status = other.wait(deadline);
  if (status == -1) {
    other.signal(SIGKILL);
    other.wait(std::chrono::seconds(10));
  } else if (WIFEXITED(status)) {
    out.code = WEXITSTATUS(status);
  }
  out.log = other.log();
  return out;
}

void system_env::start_engine(std::vector<std::string> extra) {
  auto addr_file = dir_.sub("data/listen.addr");
  std::filesystem::remove(addr_file);
  const auto argv = engine_argv(extra);
  // The child inherits the environment at fork: set the variable around the start only.
  if (!failpoints_.empty()) ::setenv("SY_FAILPOINTS", failpoints_.c_str(), 1);
  engine_ = std::make_unique<child_process>(
      argv, dir_.sub("engine-" + std::to_string(engine_runs_++) + ".log"));
  ::unsetenv("SY_FAILPOINTS");
  failpoints_.clear();
  if (!wait_for([&] { return std::filesystem::exists(addr_file) || !engine_->running(); },
                std::chrono::seconds(30)) ||
      !engine_->running())
    throw std::runtime_error("switchyard did not start: " + engine_->log());
  std::ifstream in(addr_file);
  std::string addr;
  in >> addr;
  port_ = static_cast<uint16_t>(std::stoi(addr.substr(addr.rfind(':') + 1)));
  // Written before listen.addr (runtime/main.cpp).
  std::ifstream internal(dir_.sub("data/internal.addr"));
  std::string iaddr;
  internal >> iaddr;
  internal_port_ =
      iaddr.empty() ? 0 : static_cast<uint16_t>(std::stoi(iaddr.substr(iaddr.rfind(':') + 1)));
}

bool system_env::wait_failpoint_hit() {
  bool died = wait_for([&] { return !engine_->running(); }, std::chrono::seconds(60));
  return died && engine_log().find("failpoint hit") != std::string::npos;
}

void system_env::kill_engine() {
  engine_->signal(SIGKILL);
  engine_->wait(std::chrono::seconds(10));
}

std::string system_env::submit(http_client& c, const std::string& key) {
  nlohmann::json body = {{"endpoint", "/v1/chat/completions"},
                         {"body",
                          {{"model", "sys-model"},
                           {"messages", {{{"role", "user"}, {"content", "job " + key}}}},
                           {"fake", {{"key", key}}}}}};
  auto r = c.post_json("/v1/jobs", body);
  if (r.status != 202) return "";
  return r.json()["id"].get<std::string>();
}

std::string system_env::wait_terminal(http_client& c, const std::string& id,
                                      std::chrono::milliseconds deadline) {
  std::string status;
  wait_for(
      [&] {
        auto r = c.get("/v1/jobs/" + id);
        if (r.status != 200) return false;
        status = r.json().value("status", "");
        return status == "completed" || status == "failed" || status == "cancelled" ||
               status == "expired";
      },
      deadline);
  return status;
}

}  // namespace sy::test
