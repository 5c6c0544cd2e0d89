#pragma once
/// Layering: defaults (settings.hpp) ← YAML file ← SWITCHYARD_* environment ← flags, then
/// validate(). The command line (cli.hpp) gathers the sources; tests call load_settings directly.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::config {

/// The environment as a name → value map (tests pass their own instead of the process's).
using env_map = std::map<std::string, std::string>;

/// Everything a configuration is made from, lowest precedence first.
struct sources {
  std::string yaml_text;               ///< the YAML document; empty: no file
  std::string yaml_origin = "config";  ///< the file name, for messages
  env_map env;                         ///< environment (only SWITCHYARD_* names are read)
  /// Flags in command-line order: text option name (text_option::name) → value; a later one wins.
  std::vector<std::pair<std::string, std::string>> flags;
};

/// Applies every SWITCHYARD_* variable that names a text option (see text_options()).
status apply_env(settings& s, const env_map& env);

/// Applies one flag given by its option name (e.g. "per_model_concurrency", "gateway").
status apply_flag(settings& s, const std::string& option_name, const std::string& value);

/// Defaults ← yaml ← env ← flags, then validate().
result<settings> load_settings(const sources& from);

/// SWITCHYARD_* variables that name no setting: likely typos, worth a warning at start.
std::vector<std::string> unknown_env_names(const env_map& env);

/// The environment variable naming the config file (besides the --config flag).
inline constexpr const char* config_env = "SWITCHYARD_CONFIG";

}  // namespace sy::config
