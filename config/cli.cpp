// CLI11 reports help, version and every parse problem by throwing; this file is its adapter.

#include "config/cli.hpp"

#include <memory>

#include <CLI/CLI.hpp>

#include "config/detail/client_commands.hpp"
#include "config/detail/text.hpp"
#include "config/duration.hpp"
#include "config/settings_table.hpp"
#include "config/validate.hpp"

namespace sy::config {
namespace {

std::string bound_text(const text_option& option, int64_t value) {
  return option.type == value_type::duration_ms ? format_duration_ms(value) : std::to_string(value);
}

/// The help line of one option: description, environment name, default and range.
std::string describe(const text_option& option) {
  // CLI11 indents the text after a newline to the description column.
  std::string out = option.description + "\n[yaml: " + option.name + "] [env: " + option.env +
                    "] [default: " + option.default_text + "]";
  if (option.type == value_type::integer || option.type == value_type::duration_ms) {
    out +=
        " [range: " + bound_text(option, option.min) + ".." + bound_text(option, option.max) + "]";
  }
  return out;
}

/// The settings that exist only in the YAML file, and the duration syntax.
std::string serve_footer() {
  std::string out = "\nSettings only in the --config YAML file:\n";
  for (const auto& def : settings_table()) {
    if (def.flag.empty()) {
      out += "  " + std::string(def.name) + ": " + std::string(def.description) + "\n";
    }
  }
  out +=
      "  In YAML, gateway may also be a map {url, request_timeout_ms, max_retries, "
      "initial_backoff_ms,\n  max_backoff_ms, api_key_file, max_connections, tls_ca_cert_file, "
      "tls_client_cert_file,\n  tls_client_key_file, tls_insecure_skip_verify}; "
      "model_gateways values take the same map.\n"
      "Durations (DURATION, every *_ms setting) are an integer number of milliseconds or "
      "250ms, 30s, 2m, 1h, 1m30s.\n"
      "Precedence: defaults < YAML file < SWITCHYARD_* environment < flags. "
      "See docs/configuration.md.";
  return out;
}

/// The serve subcommand's options; values land in `values` (one per text option).
struct serve_flags {
  std::string config_path;
  std::vector<std::string> values = std::vector<std::string>(text_options().size());
  std::vector<CLI::Option*> handles;
};

void add_serve_options(CLI::App& serve, serve_flags& flags) {
  serve
      .add_option("--config", flags.config_path,
                  "YAML settings file [env: " + std::string(config_env) + "]")
      ->type_name("FILE");
  const auto& options = text_options();
  for (size_t i = 0; i < options.size(); ++i) {
    flags.handles.push_back(
        serve.add_option(options[i].flag, flags.values[i], describe(options[i]))
            ->type_name(std::string(type_name(options[i].type)))
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast));
  }
  serve.footer(serve_footer());
}

result<command> build_serve(const serve_flags& flags, const env_map& env) {
  sources from;
  std::string path = flags.config_path;
  if (path.empty()) {
    auto it = env.find(config_env);
    if (it != env.end()) path = it->second;
  }
  if (!path.empty()) {
    auto text = detail::read_file(path, "--config");
    if (!text) return text.error();
    from.yaml_text = std::move(*text);
    from.yaml_origin = path;
  }
  from.env = env;
  const auto& options = text_options();
  for (size_t i = 0; i < options.size(); ++i) {
    if (flags.handles[i]->count() > 0) from.flags.emplace_back(options[i].name, flags.values[i]);
  }
  auto loaded = load_settings(from);
  if (!loaded) return loaded.error();
  command out{.what = command::kind::serve,
              .s = std::move(*loaded),
              .text = {},
              .warnings = {},
              .url = {},
              .key = {},
              .client = {}};
  out.warnings = warnings(out.s);
  for (const auto& name : unknown_env_names(env)) {
    out.warnings.push_back("environment variable " + name + " names no setting; ignored");
  }
  return out;
}

command text_command(command::kind what, std::string text) {
  return command{.what = what,
                 .s = {},
                 .text = std::move(text),
                 .warnings = {},
                 .url = {},
                 .key = {},
                 .client = {}};
}

struct admin_flags {
  std::string data_dir;
  std::string url;
  std::string key_file;
};

/// An admin command: where the internal listener is and the admin key to present.
result<command> admin_command(command::kind what, const admin_flags& f, const env_map& env) {
  command out{
      .what = what, .s = {}, .text = {}, .warnings = {}, .url = {}, .key = {}, .client = {}};
  auto from_env = [&env](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  out.url = f.url;
  if (out.url.empty()) {
    std::string dir = f.data_dir.empty() ? from_env("SWITCHYARD_DATA_DIR") : f.data_dir;
    if (dir.empty()) dir = settings{}.data_dir;
    auto addr = detail::read_file(dir + "/internal.addr", "--data-dir");
    if (!addr)
      return make_error(
          errc::invalid_arguments,
          "cannot find the running engine's internal listener: " + addr.error().message +
              " (is the engine running with this --data-dir? or give --url)");
    out.url = "http://" + std::string(detail::trim(*addr));
  }
  if (!f.key_file.empty()) {
    auto key = detail::read_file(f.key_file, "--key-file");
    if (!key) return make_error(errc::invalid_arguments, key.error().message);
    out.key = std::string(detail::trim(*key));
  } else {
    out.key = from_env("SWITCHYARD_ADMIN_KEY");
  }
  return out;
}

/// A client command (`switchyard jobs ...`, `switchyard batches ...`).
result<command> client_command(detail::client_flags& flags, const env_map& env) {
  auto args = detail::finish_client_command(flags, env);
  if (!args) return args.error();
  command out = text_command(command::kind::client, {});
  out.client = std::move(*args);
  return out;
}

}  // namespace

std::string version_string() { return "switchyard 0.1.0"; }

result<command> parse_command_line(int argc, const char* const* argv, const env_map& env) {
  CLI::App app{"Switchyard: a durable job engine for inference requests.", "switchyard"};
  app.get_formatter()->column_width(36);
  app.set_version_flag("--version", version_string(), "Print the version and exit");
  app.require_subcommand(1);
  CLI::App* serve = app.add_subcommand("serve", "Run the server");
  serve_flags flags;
  add_serve_options(*serve, flags);
  CLI::App* version = app.add_subcommand("version", "Print the version and exit");
  std::string key;
  CLI::App* hash = app.add_subcommand(
      "hash-key", "Print the SHA-256 of KEY, to configure it as api_keys: [{sha256: ..}]");
  hash->add_option("KEY", key, "The API key to hash")->required();
  CLI::App* keys = app.add_subcommand("keys", "Manage the signing keys of capability tokens");
  keys->require_subcommand(1);
  CLI::App* rotate = keys->add_subcommand(
      "rotate",
      "Ask the running engine to rotate its signing key now (published at once, signing a minute "
      "later; docs/workers.md)");
  admin_flags admin;
  rotate->add_option("--data-dir", admin.data_dir,
                     "The engine's data directory, where internal.addr names its internal "
                     "listener (default: SWITCHYARD_DATA_DIR or ./data)");
  rotate->add_option("--url", admin.url, "The internal listener, http://HOST:PORT (instead)");
  rotate->add_option("--key-file", admin.key_file,
                     "File holding an admin key (default: SWITCHYARD_ADMIN_KEY, if set)");
  detail::client_flags client;
  detail::add_client_commands(app, client);
  if (argc <= 1) return text_command(command::kind::help, app.help());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return text_command(command::kind::help, app.help());
  } catch (const CLI::CallForAllHelp&) {
    return text_command(command::kind::help, app.help("", CLI::AppFormatMode::All));
  } catch (const CLI::CallForVersion&) {
    return text_command(command::kind::version, version_string());
  } catch (const CLI::ParseError& e) {
    return make_error(errc::invalid_arguments, std::string(e.what()) +
                                                   "\nRun 'switchyard --help' or "
                                                   "'switchyard <command> --help' for usage.");
  }
  if (version->parsed()) return text_command(command::kind::version, version_string());
  if (hash->parsed()) return text_command(command::kind::hash_key, key);
  if (rotate->parsed()) return admin_command(command::kind::keys_rotate, admin, env);
  if (detail::client_command_parsed(client)) return client_command(client, env);
  return build_serve(flags, env);
}

env_map environment_map(char** envp) {
  env_map out;
  for (char** entry = envp; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    auto eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return out;
}

}  // namespace sy::config
