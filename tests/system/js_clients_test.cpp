// The official Node.js clients against the built binary: `openai` (synchronous OpenAI-compatible
// endpoints through the queue) and `nats` (the NATS intake). This harness starts everything —
// a nats-server on a random port, the fake gateway binary, `switchyard serve --nats ...` with an
// API key — then runs `node --test tests/js/<file>` with the addresses in the environment and
// expects exit code 0. The JS files start nothing themselves.

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "config/sha256.hpp"
#include "runtime/nats_server.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

namespace fs = std::filesystem;

constexpr const char* api_key = "sk-js-clients-test";
constexpr const char* worker_key = "wk-js-clients-test";
constexpr const char* metrics_key = "mk-js-clients-test";
/// The engine's webhook secret in the Standard Webhooks form: base64 of
/// "js-clients-test-key-0123456789ab" (webhooks.test.mjs verifies with it through openai-node).
constexpr const char* webhook_secret = "whsec_anMtY2xpZW50cy10ZXN0LWtleS0wMTIzNDU2Nzg5YWI=";
constexpr const char* chromium = "/usr/bin/chromium";

/// The executable `name` on PATH, or empty.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

class js_clients_test : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = find_on_path("node");
    if (node_.empty())
      GTEST_FAIL() << "`node` is not on PATH. Install Node.js and the test packages with "
                      "scripts/setup (it installs Debian's nodejs and npm, then runs `npm ci` "
                      "in tests/js/).";
    if (!fs::is_directory(js_dir() / "node_modules" / "openai") ||
        !fs::is_directory(js_dir() / "node_modules" / "nats"))
      GTEST_FAIL() << js_dir().string() << "/node_modules is missing or incomplete. Run "
                   << "scripts/setup (or `npm ci` in tests/js/).";

    runtime::nats_server_options o;
    o.store_dir = env_.dir().sub("nats");
    o.log_file = env_.dir().sub("nats.log");
    auto n = runtime::nats_server::start(o);
    ASSERT_TRUE(n) << n.error().message;
    nats_ = std::move(n.value());

    const std::string secret_file = env_.dir().sub("webhook.secret");
    { std::ofstream(secret_file) << webhook_secret << "\n"; }
    const std::string config = env_.dir().sub("switchyard.yaml");
    {
      std::ofstream out(config);
      out << "api_keys:\n"
          << "  - sha256: " << config::sha256_hex(api_key) << "\n"
          << "    tenant: js\n"
          << "  - sha256: " << config::sha256_hex(worker_key) << "\n"
          << "    role: worker\n"
          << "  - sha256: " << config::sha256_hex(metrics_key) << "\n"
          << "    role: metrics\n"
          << "runtimes:\n  demo: {lease_ttl_ms: 5s, max_attempts: 3}\n"
          << "webhook_secret_file: " << secret_file << "\n"
          << "webhook_allow_loopback: true\n";  // webhooks.test.mjs receives on 127.0.0.1
    }
    env_.start_gateway(0);
    env_.start_engine({"--nats", nats_->url(), "--config", config});
    engine_started_ = true;
  }

  /// A graceful stop (SIGTERM) of switchyard before its nats-server goes away.
  void TearDown() override {
    if (engine_started_) {
      env_.engine().signal(SIGTERM);
      EXPECT_NE(env_.engine().wait(std::chrono::seconds(30)), -1) << "switchyard did not stop";
    }
    nats_.reset();
  }

  static fs::path js_dir() { return fs::path(SY_SOURCE_DIR) / "tests" / "js"; }

  /// Runs `node --test <file>`; fails the test (with node's and the engine's output) unless it
  /// exits 0.
  void run_node_test(const std::string& file) {
    const std::string log = env_.dir().sub(file + ".log");
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "SY_NATS_URL=" + nats_->url(),
                                     "SY_BASE_URL=http://127.0.0.1:" + std::to_string(env_.port()),
                                     "SY_API_KEY=" + std::string(api_key),
                                     "SY_WORKER_KEY=" + std::string(worker_key),
                                     "SY_METRICS_KEY=" + std::string(metrics_key),
                                     "SY_SCREENSHOT_DIR=" SY_BINARY_DIR "/dashboard-screenshots",
                                     "SY_CHROMIUM=" + std::string(chromium),
                                     "SY_MODEL=test-model",
                                     "SY_WEBHOOK_SECRET=" + std::string(webhook_secret),
                                     node_,
                                     "--test",
                                     "--test-reporter=spec",
                                     (js_dir() / file).string()};
    child_process node(argv, log);
    int status = node.wait(std::chrono::seconds(180));
    if (status == -1) node.signal(SIGKILL);
    const std::string out = node.log();
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "node --test " << file << " failed (wait status " << status << "):\n"
        << out << "\n--- switchyard log ---\n"
        << env_.engine_log();
    // Exit code 0 also results from a file that ran nothing: every test must have run.
    EXPECT_GT(summary(out, "pass"), 0) << out;
    EXPECT_EQ(summary(out, "skipped"), 0) << out;
  }

  /// A count from the spec reporter's summary ("ℹ pass 4"); -1 when absent.
  static int summary(const std::string& out, const std::string& what) {
    std::smatch m;
    std::regex re("\\S+ " + what + " ([0-9]+)\\n");
    return std::regex_search(out, m, re) ? std::stoi(m[1]) : -1;
  }

  std::string node_;
  system_env env_;
  std::unique_ptr<runtime::nats_server> nats_;
  bool engine_started_ = false;
};

TEST_F(js_clients_test, NatsPackagePublishesToTheIntake) { run_node_test("intake.test.mjs"); }

TEST_F(js_clients_test, OpenaiPackageCallsTheSynchronousEndpoints) {
  run_node_test("openai_sync.test.mjs");
}

TEST_F(js_clients_test, OpenaiPackageRunsBatches) { run_node_test("batches.test.mjs"); }

// Job webhooks in the Standard Webhooks format: openai-node's webhooks.unwrap() accepts them.
TEST_F(js_clients_test, OpenaiPackageVerifiesJobWebhooks) { run_node_test("webhooks.test.mjs"); }

TEST_F(js_clients_test, NatsPackageUsesTheMicroService) { run_node_test("service.test.mjs"); }

// docs/openapi.yaml against the OpenAPI 3.1 schema (an npm validator), the router's table, the
// error catalogue and the endpoint list; it needs no engine, the fixture's is only idle.
TEST_F(js_clients_test, OpenapiDocumentIsValid) { run_node_test("openapi.test.mjs"); }

// The dashboard (/ui/) in Debian's Chromium, driven by playwright-core: sign in, a batch's
// progress moving, a running job cancelled from its page; screenshots under
// build/dashboard-screenshots/ (CI keeps them as artifacts).
TEST_F(js_clients_test, DashboardWorksInChromium) {
  ASSERT_EQ(::access(chromium, X_OK), 0)
      << chromium << " is missing: scripts/setup installs Debian's chromium package.";
  ASSERT_TRUE(fs::is_directory(js_dir() / "node_modules" / "playwright-core"))
      << "tests/js/node_modules/playwright-core is missing: run scripts/setup.";
  run_node_test("dashboard.test.mjs");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
