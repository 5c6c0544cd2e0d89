// The client commands (`switchyard jobs ...`, `switchyard batches ...`, docs/cli.md) run as a
// user runs them: the built binary against a running engine and the fake gateway, with stdin,
// stdout and stderr of its own, and under a pseudo-terminal for the progress bars.

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netinet/in.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

#include "config/sha256.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

extern char** environ;

namespace sy::test {
namespace SY_UNITY_ID {

using json = nlohmann::json;

constexpr const char* api_key = "sk-cli-test";

/// What one run of the CLI did.
struct cli_run {
  int code = -1;  ///< exit code; -1: killed after the deadline
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The environment for a child: ours without SWITCHYARD_*, plus `extra` (NAME=value).
std::vector<std::string> child_env(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "SWITCHYARD_", 11) != 0) env.emplace_back(*e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// Reaps `pid` within `deadline` (SIGKILL after it); the exit code, or -1.
int reap(pid_t pid, std::chrono::milliseconds deadline) {
  int status = 0;
  bool done = wait_for([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, deadline);
  if (!done) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    env_ = new system_env();
    const std::string config = env_->dir().sub("switchyard.yaml");
    std::ofstream(config) << "api_keys:\n  - sha256: " << config::sha256_hex(api_key)
                          << "\n    tenant: cli\n";
    env_->start_gateway(0);
    env_->start_engine({"--config", config});
  }
  static void TearDownTestSuite() {
    env_->engine().signal(SIGTERM);
    env_->engine().wait(std::chrono::seconds(30));
    delete env_;
    env_ = nullptr;
  }

  static std::string url() { return "http://127.0.0.1:" + std::to_string(env_->port()); }
  static std::string path(const std::string& name) { return env_->dir().sub(name); }
  /// The default environment of a run: the server and the key from the environment.
  static std::vector<std::string> default_env() {
    return {"SWITCHYARD_URL=" + url(), std::string("SWITCHYARD_API_KEY=") + api_key};
  }

  /// Runs `switchyard args...` with `input` on stdin, stdout and stderr to files.
  cli_run run(std::vector<std::string> args, const std::string& input = {},
              std::vector<std::string> env = default_env()) {
    const std::string base = path("run-" + std::to_string(runs_++));
    std::ofstream(base + ".in") << input;
    args.insert(args.begin(), SY_BINARY_DIR "/switchyard");
    auto envs = child_env(env);
    auto argv = pointers(args);
    auto envp = pointers(envs);
    const std::string in = base + ".in", out = base + ".out", err = base + ".err";
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(::open(in.c_str(), O_RDONLY), 0);
      ::dup2(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
      ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    cli_run r;
    r.code = reap(pid, std::chrono::seconds(90));
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  /// Runs `switchyard args...` with a pseudo-terminal as stdin, stdout and stderr.
  cli_run run_on_tty(std::vector<std::string> args) {
    args.insert(args.begin(), SY_BINARY_DIR "/switchyard");
    auto envs = child_env(default_env());
    auto argv = pointers(args);
    auto envp = pointers(envs);
    int master = -1;
    const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
    if (pid == 0) {
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    cli_run r;
    r.out = read_until_closed(master);
    ::close(master);
    r.code = reap(pid, std::chrono::seconds(10));
    return r;
  }

  /// Runs `switchyard args...` with stdout a pipe that the test reads (stdin: /dev/null).
  cli_run run_piped(std::vector<std::string> args) {
    args.insert(args.begin(), SY_BINARY_DIR "/switchyard");
    auto envs = child_env(default_env());
    auto argv = pointers(args);
    auto envp = pointers(envs);
    int fds[2];
    if (::pipe(fds) != 0) return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(::open("/dev/null", O_RDONLY), 0);
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    cli_run r;
    r.out = read_until_closed(fds[0]);
    ::close(fds[0]);
    r.code = reap(pid, std::chrono::seconds(10));
    return r;
  }

  /// Everything written to `fd` until its writers are gone (EOF, or EIO on a terminal).
  static std::string read_until_closed(int fd) {
    std::string out;
    wait_for(
        [&] {
          pollfd p{fd, POLLIN, 0};
          if (::poll(&p, 1, 50) <= 0) return false;
          char buf[4096];
          const ssize_t n = ::read(fd, buf, sizeof buf);
          if (n <= 0) return true;
          out.append(buf, static_cast<size_t>(n));
          return false;
        },
        std::chrono::seconds(90));
    return out;
  }

  static std::string write_file(const std::string& name, const std::string& text) {
    std::ofstream(path(name)) << text;
    return path(name);
  }

  /// A job request whose fake gateway answer is shaped by `fake` (status, latency_ms).
  static std::string job_body(const json& fake = json::object()) {
    return json{{"endpoint", "/v1/chat/completions"},
                {"body",
                 {{"model", "sys-model"},
                  {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                  {"fake", fake}}}}
        .dump();
  }

  /// Reads the job with `jobs get --json` until its status is `status`.
  bool wait_status(const std::string& id, const std::string& status) {
    return wait_for(
        [&] {
          const auto job = json::parse(run({"jobs", "get", id, "--json"}).out, nullptr, false);
          return job.is_object() && job.value("status", "") == status;
        },
        std::chrono::seconds(60));
  }

  static system_env* env_;
  int runs_ = 0;
};

system_env* cli::env_ = nullptr;

TEST_F(cli, submit_from_a_file_with_wait_and_from_stdin_then_get_and_list) {
  auto waited = run({"jobs", "submit", write_file("req.json", job_body()), "--wait", "--json"});
  ASSERT_EQ(waited.code, 0) << waited.out << waited.err;
  const auto job = json::parse(waited.out);
  EXPECT_EQ(job["status"], "completed") << waited.out;
  EXPECT_EQ(job["result"]["status_code"], 200) << waited.out;

  auto piped = run({"jobs", "submit", "--json"}, job_body());
  ASSERT_EQ(piped.code, 0) << piped.out << piped.err;
  const std::string id = json::parse(piped.out)["id"];
  ASSERT_TRUE(wait_status(id, "completed"));
  auto got = run({"jobs", "get", id});
  EXPECT_EQ(got.code, 0) << got.err;
  EXPECT_NE(got.out.find("status    completed"), std::string::npos) << got.out;

  auto dash = run({"jobs", "submit", "-"}, job_body());
  ASSERT_EQ(dash.code, 0) << dash.err;
  EXPECT_EQ(dash.out.rfind("job_", 0), 0u) << dash.out;

  auto page = run({"jobs", "list", "--json", "--limit", "1"});
  ASSERT_EQ(page.code, 0) << page.err;
  const auto first = json::parse(page.out);
  ASSERT_EQ(first["data"].size(), 1u) << page.out;
  EXPECT_TRUE(first["has_more"].get<bool>());
  auto next = run({"jobs", "list", "--json", "--after", first["last_id"].get<std::string>(),
                   "--status", "completed"});
  ASSERT_EQ(next.code, 0) << next.err;
  bool found = false;
  const auto older = json::parse(next.out);
  for (const auto& j : older["data"]) found = found || j["id"] == job["id"];
  EXPECT_TRUE(found) << next.out;
  auto table = run({"jobs", "list"});
  EXPECT_EQ(table.code, 0);
  EXPECT_EQ(table.out.rfind("ID", 0), 0u) << table.out;
  EXPECT_NE(table.out.find(id), std::string::npos) << table.out;
}

TEST_F(cli, a_failed_job_exits_1_and_an_error_answer_prints_its_message_and_code) {
  auto failed = run({"jobs", "submit", "--wait=60"}, job_body({{"status", 400}}));
  EXPECT_EQ(failed.code, 1) << failed.out << failed.err;
  EXPECT_NE(failed.out.find("status    failed"), std::string::npos) << failed.out;
  EXPECT_NE(failed.out.find("id        job_"), std::string::npos) << failed.out;
  const std::string id = failed.out.substr(failed.out.find("job_"), 30);
  EXPECT_EQ(run({"jobs", "get", id}).code, 1);

  auto missing = run({"jobs", "get", "job_01HZX3K9V8M2Q7T5N4B6C1D0EF"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("HTTP 404"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("(code job_not_found)"), std::string::npos) << missing.err;
  auto bad = run({"jobs", "submit"}, "{\"endpoint\": \"/v1/chat/completions\"}");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("HTTP 400"), std::string::npos) << bad.err;
}

TEST_F(cli, cancel_and_a_wait_that_runs_out) {
  auto slow = run({"jobs", "submit", "--wait=1", "--json"}, job_body({{"latency_ms", 60'000}}));
  EXPECT_EQ(slow.code, 4) << slow.out << slow.err;
  const std::string id = json::parse(slow.out)["id"];
  EXPECT_NE(slow.err.find("still"), std::string::npos) << slow.err;
  auto cancelled = run({"jobs", "cancel", id, "--json"});
  ASSERT_EQ(cancelled.code, 0) << cancelled.err;
  const std::string status = json::parse(cancelled.out)["status"];
  EXPECT_TRUE(status == "cancelling" || status == "cancelled") << cancelled.out;
  ASSERT_TRUE(wait_status(id, "cancelled"));
  EXPECT_EQ(run({"jobs", "get", id}).code, 1);
}

TEST_F(cli, keys_usage_errors_and_an_unreachable_server) {
  std::vector<std::string> no_key = {"SWITCHYARD_URL=" + url()};
  auto refused = run({"jobs", "list"}, {}, no_key);
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("missing_api_key"), std::string::npos) << refused.err;
  auto from_file = run({"jobs", "list", "--json", "--api-key-file",
                        write_file("key.txt", std::string(api_key) + "\n")},
                       {}, no_key);
  EXPECT_EQ(from_file.code, 0) << from_file.err;
  auto by_flag = run({"jobs", "list", "--json", "--server", url()}, {},
                     {std::string("SWITCHYARD_API_KEY=") + api_key});
  EXPECT_EQ(by_flag.code, 0) << by_flag.err;

  for (const auto& args :
       std::vector<std::vector<std::string>>{{"jobs"},
                                             {"jobs", "get"},
                                             {"jobs", "frobnicate"},
                                             {"jobs", "list", "--limit", "0"},
                                             {"jobs", "submit", "--wait=soon"},
                                             {"jobs", "submit", "/nonexistent"},
                                             {"batches", "create"},
                                             {"jobs", "list", "--server", "ftp://x"}}) {
    auto r = run(args);
    EXPECT_EQ(r.code, 2) << args.back() << ": " << r.out << r.err;
    EXPECT_FALSE(r.err.empty()) << args.back();
  }

  // A port that was free a moment ago: nothing listens there.
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  auto down =
      run({"jobs", "list", "--server", "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port))});
  EXPECT_EQ(down.code, 3) << down.err;
  EXPECT_NE(down.err.find("unreachable"), std::string::npos) << down.err;
}

std::string batch_input(int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += json{{"custom_id", "req-" + std::to_string(i)},
                 {"method", "POST"},
                 {"url", "/v1/chat/completions"},
                 {"body",
                  {{"model", "sys-model"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}}}
                .dump() +
            "\n";
  return text;
}

TEST_F(cli, batches_create_waits_and_downloads_the_output_then_get_list_cancel) {
  const auto input = write_file("requests.jsonl", batch_input(3));
  auto r = run({"batches", "create", "--file", input, "--wait", "--output", path("out.jsonl"),
                "--errors", path("errors.jsonl")});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // stdout is a file: no bar, only the batch.
  EXPECT_EQ(r.out.find("] 3/3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("status       completed"), std::string::npos) << r.out;
  std::istringstream lines(slurp(path("out.jsonl")));
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    auto j = json::parse(line);
    EXPECT_EQ(j["custom_id"], "req-" + std::to_string(count)) << line;
    EXPECT_EQ(j["response"]["status_code"], 200) << line;
  }
  EXPECT_EQ(count, 3);
  EXPECT_EQ(slurp(path("errors.jsonl")), "");
  const std::string id =
      r.out.substr(r.out.find("batch_"), r.out.find('\n') - r.out.find("batch_"));

  auto got = run({"batches", "get", id, "--json"});
  ASSERT_EQ(got.code, 0) << got.err;
  EXPECT_EQ(json::parse(got.out)["request_counts"]["completed"], 3) << got.out;
  auto list = run({"batches", "list", "--json"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(json::parse(list.out)["data"][0]["id"], id) << list.out;
  auto cancel = run({"batches", "cancel", id});
  EXPECT_EQ(cancel.code, 1);
  EXPECT_NE(cancel.err.find("batch_not_cancellable"), std::string::npos) << cancel.err;

  // stdout a pipe: no bar either.
  auto piped = run_piped({"batches", "create", "--file", input, "--wait"});
  EXPECT_EQ(piped.code, 0) << piped.out;
  EXPECT_EQ(piped.out.find("] 3/3"), std::string::npos) << piped.out;
  EXPECT_NE(piped.out.find("status       completed"), std::string::npos) << piped.out;

  auto quick = run({"batches", "create", "--file", input, "--json"});
  ASSERT_EQ(quick.code, 0) << quick.err;
  EXPECT_EQ(json::parse(quick.out)["object"], "batch") << quick.out;
}

TEST_F(cli, batches_create_draws_a_progress_bar_on_a_terminal) {
  const auto input = write_file("tty.jsonl", batch_input(4));
  auto r = run_on_tty(
      {"batches", "create", "--file", input, "--wait", "--output", path("tty-out.jsonl")});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("] 4/4  completed 4  failed 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[######"), std::string::npos) << r.out;
}

TEST_F(cli, watch_prints_each_event_and_export_writes_the_task_outcomes) {
  auto done = run({"jobs", "submit", "--wait", "--json"}, job_body());
  ASSERT_EQ(done.code, 0) << done.err;
  const std::string id = json::parse(done.out)["id"];
  auto watched = run({"jobs", "watch", id});
  EXPECT_EQ(watched.code, 0) << watched.err;
  EXPECT_NE(watched.out.find("  queued"), std::string::npos) << watched.out;
  EXPECT_NE(watched.out.find("  completed"), std::string::npos) << watched.out;
  auto as_json = run({"jobs", "watch", id, "--json"});
  EXPECT_EQ(as_json.code, 0) << as_json.err;
  std::istringstream events(as_json.out);
  std::string last;
  for (std::string line; std::getline(events, line);) last = line;
  EXPECT_EQ(json::parse(last)["state"], "completed") << as_json.out;

  json tasks = json::array();
  for (int i = 0; i < 3; ++i)
    tasks.push_back(
        {{"custom_id", "t-" + std::to_string(i)},
         {"body", {{"model", "sys-model"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}}});
  auto list = run({"jobs", "submit", "--json"},
                  json{{"endpoint", "/v1/chat/completions"}, {"tasks", tasks}}.dump());
  ASSERT_EQ(list.code, 0) << list.err;
  const std::string list_id = json::parse(list.out)["id"];
  auto bar = run_on_tty({"jobs", "watch", list_id});
  EXPECT_EQ(bar.code, 0) << bar.out;
  EXPECT_NE(bar.out.find("] 3/3  completed 3  failed 0"), std::string::npos) << bar.out;

  // On a pipe, the same watch prints the job's events.
  auto events_piped = run_piped({"jobs", "watch", list_id});
  EXPECT_EQ(events_piped.code, 0) << events_piped.out;
  EXPECT_EQ(events_piped.out.find("] 3/3"), std::string::npos) << events_piped.out;
  EXPECT_NE(events_piped.out.find("  completed"), std::string::npos) << events_piped.out;

  auto exported = run({"jobs", "export", list_id, "--output", path("tasks.jsonl")});
  ASSERT_EQ(exported.code, 0) << exported.err;
  std::istringstream lines(slurp(path("tasks.jsonl")));
  int count = 0;
  for (std::string line; std::getline(lines, line);) count += json::parse(line).is_object();
  EXPECT_EQ(count, 3);
  auto zipped = run({"jobs", "export", list_id, "--output", path("tasks.jsonl.gz"), "--gzip"});
  ASSERT_EQ(zipped.code, 0) << zipped.err;
  EXPECT_EQ(slurp(path("tasks.jsonl.gz")).substr(0, 2), "\x1f\x8b");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
