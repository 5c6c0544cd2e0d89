#pragma once
/// The `switchyard` command line (CLI11 is wrapped here; nothing it throws escapes):
///   switchyard serve [--config FILE] [--listen HOST:PORT] [--data-dir DIR] [--nats URL]
///                    [--gateway URL] [one flag per setting ...]
///   switchyard version            (also: switchyard --version)
///   switchyard hash-key KEY       (the SHA-256 to put under api_keys in the config file)
///   switchyard keys rotate [--data-dir DIR] [--url URL] [--key-file FILE]
///                                 (asks the running engine to rotate its signing key; the
///                                 internal listener's URL is read from <data_dir>/internal.addr
///                                 unless given; an admin key from --key-file or
///                                 SWITCHYARD_ADMIN_KEY)
///   switchyard jobs submit|get|list|cancel|watch|export ...
///   switchyard batches create|get|list|cancel ...
///                                 (client commands against a running server's HTTP API:
///                                 config/client_args.hpp, docs/cli.md)
/// `--help` (on any command, or no arguments at all) is not an error: it returns kind::help
/// with the text to print. Main prints `text` to stdout and exits 0 for help and version.
/// Errors: code "invalid_arguments" (bad command line) or "invalid_config" (a setting is wrong);
/// print `message` to stderr and exit 2.

#include <map>
#include <string>
#include <vector>

#include "config/client_args.hpp"
#include "config/load.hpp"
#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::config {

/// What the user asked for.
struct command {
  enum class kind { serve, version, hash_key, keys_rotate, client, help };
  kind what = kind::help;
  settings s;        ///< serve: the validated settings
  std::string text;  ///< hash_key: the key to hash; help: the help text; version: the version
  std::vector<std::string> warnings;  ///< serve: to log at start (no gateway, unknown env vars)
  std::string url;                    ///< keys_rotate: the internal listener, http://host:port
  std::string key;                    ///< keys_rotate: the admin key; empty: none
  client_args client;                 ///< client: the command to run against a server
};

/// Parses the command line. `env` is the process environment (see environment_map); serve
/// reads the settings as defaults ← YAML file (--config or SWITCHYARD_CONFIG) ← env ← flags.
result<command> parse_command_line(int argc, const char* const* argv, const env_map& env);

/// "switchyard 0.1.0".
std::string version_string();

/// `envp` (as passed to main or `environ`) as a map; entries without '=' are skipped.
env_map environment_map(char** envp);

}  // namespace sy::config
