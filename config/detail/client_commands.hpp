#pragma once
/// The client subcommands of the command line (`switchyard jobs ...`, `switchyard batches ...`),
/// declared on CLI11 for config/cli.cpp. Private to sy_config.

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/client_args.hpp"
#include "config/load.hpp"
#include "config/result.hpp"

namespace sy::config::detail {

/// What CLI11 fills in while it parses a client command.
struct client_flags {
  client_args args;
  std::string api_key_file;
  std::string wait_text;  ///< --wait's value: "" (not given), "true" (no value) or SECONDS
  /// Every leaf subcommand with its noun and verb.
  std::vector<std::pair<CLI::App*, std::pair<std::string, std::string>>> leaves;
};

/// Adds `jobs` and `batches` with their verbs to `app`, bound to `flags`.
void add_client_commands(CLI::App& app, client_flags& flags);

/// After a parse: the client command that was parsed, checked, with the server URL and API key
/// resolved from the flags and `env`; an error (code invalid_arguments) when a value is wrong.
/// Call only when client_command_parsed() says one was.
result<client_args> finish_client_command(client_flags& flags, const env_map& env);

/// Whether the parse chose a client command.
bool client_command_parsed(const client_flags& flags);

}  // namespace sy::config::detail
