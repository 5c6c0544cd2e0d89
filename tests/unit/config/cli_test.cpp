#include "config/cli.hpp"

#include <gtest/gtest.h>

#include "config/settings_table.hpp"
#include "tests/unit/config/temp_dir.hpp"

namespace sy::config {
namespace SY_UNITY_ID {

result<command> run(std::vector<std::string> args, const env_map& env = {}) {
  args.insert(args.begin(), "switchyard");
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data(), env);
}

TEST(Cli, ServeHelpListsEverySettingWithEnvAndDefault) {
  auto help = run({"serve", "--help"});
  ASSERT_TRUE(help.ok()) << help.error().message;
  EXPECT_EQ(help->what, command::kind::help);
  const std::string& text = help->text;
  EXPECT_NE(text.find("--config"), std::string::npos);
  for (const auto& option : text_options()) {
    EXPECT_NE(text.find(option.flag), std::string::npos) << option.flag;
    EXPECT_NE(text.find(option.env), std::string::npos) << option.env;
    EXPECT_NE(text.find("[default: " + option.default_text + "]"), std::string::npos)
        << option.name;
  }
  for (const auto& def : settings_table()) {
    EXPECT_NE(text.find(std::string(def.name)), std::string::npos) << def.name;
  }
}

TEST(Cli, TopLevelHelpAndNoArguments) {
  for (auto args : {std::vector<std::string>{}, std::vector<std::string>{"--help"}}) {
    auto help = run(args);
    ASSERT_TRUE(help.ok());
    EXPECT_EQ(help->what, command::kind::help);
    EXPECT_NE(help->text.find("serve"), std::string::npos);
    EXPECT_NE(help->text.find("hash-key"), std::string::npos);
  }
}

TEST(Cli, Version) {
  EXPECT_EQ(version_string(), "switchyard 0.1.0");
  for (auto arg : {"version", "--version"}) {
    auto v = run({arg});
    ASSERT_TRUE(v.ok()) << arg;
    EXPECT_EQ(v->what, command::kind::version);
    EXPECT_EQ(v->text, "switchyard 0.1.0");
  }
}

TEST(Cli, HashKey) {
  auto h = run({"hash-key", "my-secret"});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->what, command::kind::hash_key);
  EXPECT_EQ(h->text, "my-secret");
  EXPECT_FALSE(run({"hash-key"}).ok());
}

TEST(Cli, KeysRotateFindsTheInternalListenerAndTheAdminKey) {
  test::temp_dir dir;
  dir.write("internal.addr", "127.0.0.1:18081\n");
  const std::string data = dir.path("");
  auto key = dir.write("admin.key", "ak-1\n");
  auto from_dir = run({"keys", "rotate", "--data-dir", data, "--key-file", key});
  ASSERT_TRUE(from_dir.ok()) << from_dir.error().message;
  EXPECT_EQ(from_dir->what, command::kind::keys_rotate);
  EXPECT_EQ(from_dir->url, "http://127.0.0.1:18081");
  EXPECT_EQ(from_dir->key, "ak-1");
  // The data dir and the key from the environment; --url wins over internal.addr.
  auto from_env =
      run({"keys", "rotate"}, {{"SWITCHYARD_DATA_DIR", data}, {"SWITCHYARD_ADMIN_KEY", "ak-2"}});
  ASSERT_TRUE(from_env.ok()) << from_env.error().message;
  EXPECT_EQ(from_env->url, "http://127.0.0.1:18081");
  EXPECT_EQ(from_env->key, "ak-2");
  auto by_url = run({"keys", "rotate", "--url", "http://10.0.0.1:9", "--data-dir", "/nowhere"});
  ASSERT_TRUE(by_url.ok());
  EXPECT_EQ(by_url->url, "http://10.0.0.1:9");
  EXPECT_EQ(by_url->key, "");
  // No engine there: the error says where it looked and what to do.
  auto none = run({"keys", "rotate", "--data-dir", dir.path("missing")});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, "invalid_arguments");
  EXPECT_NE(none.error().message.find("internal listener"), std::string::npos)
      << none.error().message;
  EXPECT_FALSE(run({"keys"}).ok());
}

TEST(Cli, ServeFlagsOverrideEnvAndFile) {
  test::temp_dir dir;
  auto file = dir.write("sy.yaml",
                        "per_model_concurrency: 5\nglobal_concurrency: 50\n"
                        "data_dir: /from/file\ngateway: http://file:1\n");
  env_map env = {{"SWITCHYARD_PER_MODEL_CONCURRENCY", "6"}, {"SWITCHYARD_DATA_DIR", "/env"}};
  auto c = run({"serve", "--config", file, "--per-model-concurrency", "7", "--listen",
                "127.0.0.1:0", "--nats", "nats://127.0.0.1:4222", "--gateway", "http://flag:2"},
               env);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->what, command::kind::serve);
  EXPECT_EQ(c->s.per_model_concurrency, 7);
  EXPECT_EQ(c->s.global_concurrency, 50);
  EXPECT_EQ(c->s.data_dir, "/env");
  EXPECT_EQ(c->s.listen, "127.0.0.1:0");
  EXPECT_EQ(c->s.nats_url, "nats://127.0.0.1:4222");
  EXPECT_EQ(c->s.gateway->url, "http://flag:2");
  EXPECT_TRUE(c->warnings.empty());
}

TEST(Cli, ConfigFileFromEnvironment) {
  test::temp_dir dir;
  auto file = dir.write("sy.yaml", "global_concurrency: 42\n");
  auto c = run({"serve"}, {{"SWITCHYARD_CONFIG", file}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->s.global_concurrency, 42);
  // No gateway configured: a warning, not an error.
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_NE(c->warnings[0].find("no gateway"), std::string::npos);
}

TEST(Cli, ServeDefaultsMatchTheStruct) {
  auto c = run({"serve"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->s.listen, "127.0.0.1:8080");
  EXPECT_EQ(c->s.data_dir, "./data");
  EXPECT_EQ(c->s.nats_url, "");
  EXPECT_FALSE(c->s.gateway);
}

TEST(Cli, Errors) {
  auto unknown_flag = run({"serve", "--bogus", "1"});
  ASSERT_FALSE(unknown_flag.ok());
  EXPECT_EQ(unknown_flag.error().code, "invalid_arguments");
  EXPECT_NE(unknown_flag.error().message.find("--bogus"), std::string::npos);
  auto unknown_command = run({"launch"});
  ASSERT_FALSE(unknown_command.ok());
  EXPECT_EQ(unknown_command.error().code, "invalid_arguments");
  auto missing_file = run({"serve", "--config", "/nonexistent/sy.yaml"});
  ASSERT_FALSE(missing_file.ok());
  EXPECT_NE(missing_file.error().message.find("/nonexistent/sy.yaml"), std::string::npos);
  auto bad_value = run({"serve", "--lease-ttl-ms", "soon"});
  ASSERT_FALSE(bad_value.ok());
  EXPECT_EQ(bad_value.error().code, "invalid_config");
  EXPECT_NE(bad_value.error().message.find("--lease-ttl-ms"), std::string::npos);
  auto ftp = run({"serve", "--gateway", "ftp://x:1"});
  ASSERT_FALSE(ftp.ok());
  EXPECT_NE(ftp.error().message.find("http(s)://host[:port][/prefix]"), std::string::npos);
}

TEST(Cli, UnknownSwitchyardEnvIsAWarning) {
  auto c = run({"serve", "--gateway", "http://a:1"}, {{"SWITCHYARD_LISTN", "x"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_NE(c->warnings[0].find("SWITCHYARD_LISTN"), std::string::npos);
}

TEST(Cli, EnvironmentMap) {
  std::string a = "A=1", b = "B=x=y", c = "NOEQUALS";
  char* envp[] = {a.data(), b.data(), c.data(), nullptr};
  auto env = environment_map(envp);
  EXPECT_EQ(env.size(), 2u);
  EXPECT_EQ(env.at("A"), "1");
  EXPECT_EQ(env.at("B"), "x=y");
  EXPECT_TRUE(environment_map(nullptr).empty());
}

TEST(Cli, ClientCommandsTakeTheServerAndKeyFromFlagsThenEnvironment) {
  auto d = run({"jobs", "get", "job_1"});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->what, command::kind::client);
  EXPECT_EQ(d->client.noun, "jobs");
  EXPECT_EQ(d->client.verb, "get");
  EXPECT_EQ(d->client.id, "job_1");
  EXPECT_EQ(d->client.server, "http://127.0.0.1:8080");
  EXPECT_EQ(d->client.api_key, "");
  EXPECT_FALSE(d->client.json);
  const env_map env = {{"SWITCHYARD_URL", "http://e:1"}, {"SWITCHYARD_API_KEY", "k-env"}};
  auto e =
      run({"jobs", "list", "--json", "--status", "failed", "--limit", "5", "--after", "j"}, env);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->client.server, "http://e:1");
  EXPECT_EQ(e->client.api_key, "k-env");
  EXPECT_TRUE(e->client.json);
  EXPECT_EQ(e->client.status, "failed");
  EXPECT_EQ(e->client.limit, 5);
  EXPECT_EQ(e->client.after, "j");
  test::temp_dir dir;
  auto key = dir.write("api.key", "  k-file\n");
  auto f = run({"batches", "cancel", "b", "--server", "http://f:2", "--api-key-file", key}, env);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->client.server, "http://f:2");
  EXPECT_EQ(f->client.api_key, "k-file");
  EXPECT_FALSE(run({"jobs", "list", "--api-key-file", dir.path("none")}).ok());
}

TEST(Cli, ClientWaitTakesAnOptionalNumberOfSeconds) {
  auto none = run({"jobs", "submit", "req.json"});
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_FALSE(none->client.wait);
  EXPECT_EQ(none->client.file, "req.json");
  auto forever = run({"jobs", "submit", "--wait", "req.json"});
  ASSERT_TRUE(forever.ok()) << forever.error().message;
  EXPECT_TRUE(forever->client.wait);
  EXPECT_EQ(forever->client.wait_s, -1);
  EXPECT_EQ(forever->client.file, "req.json");
  auto bounded = run({"jobs", "submit", "--wait=30"});
  ASSERT_TRUE(bounded.ok()) << bounded.error().message;
  EXPECT_TRUE(bounded->client.wait);
  EXPECT_EQ(bounded->client.wait_s, 30);
  EXPECT_EQ(bounded->client.file, "");
  EXPECT_FALSE(run({"jobs", "submit", "--wait=soon"}).ok());
  EXPECT_FALSE(run({"jobs", "submit", "--wait=-1"}).ok());
  auto batch = run({"batches", "create", "--file", "in.jsonl", "--wait", "--output", "o"});
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  EXPECT_EQ(batch->client.file, "in.jsonl");
  EXPECT_EQ(batch->client.output, "o");
  EXPECT_EQ(batch->client.endpoint, "/v1/chat/completions");
  EXPECT_EQ(batch->client.completion_window, "24h");
  EXPECT_FALSE(run({"batches", "create", "--file", "in.jsonl", "--output", "o"}).ok());
}

TEST(Cli, ClientUsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"jobs"},
                                                                {"jobs", "get"},
                                                                {"jobs", "nope"},
                                                                {"jobs", "list", "--limit", "0"},
                                                                {"batches", "create"},
                                                                {"jobs", "export", "j"}}) {
    auto r = run(args);
    EXPECT_FALSE(r.ok()) << args.back();
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, "invalid_arguments");
    }
  }
  auto help = run({"jobs", "submit", "--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->what, command::kind::help);
  EXPECT_NE(help->text.find("--wait"), std::string::npos) << help->text;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
