#include "config/load.hpp"

#include "config/settings_table.hpp"
#include "config/validate.hpp"
#include "config/yaml_loader.hpp"

namespace sy::config {

status apply_env(settings& s, const env_map& env) {
  // Order does not matter even for the global gateway: a URL keeps the gateway's other fields,
  // and a field creates the gateway without touching its URL.
  for (const auto& option : text_options()) {
    auto it = env.find(option.env);
    if (it == env.end()) continue;
    if (auto st = option.set(s, it->second, option.env); !st) return st;
  }
  return ok;
}

status apply_flag(settings& s, const std::string& option_name, const std::string& value) {
  const text_option* option = find_text_option(option_name);
  if (option == nullptr) {
    return make_error(errc::invalid_arguments, "unknown setting " + option_name, option_name);
  }
  return option->set(s, value, option->flag);
}

result<settings> load_settings(const sources& from) {
  settings s;
  if (auto st = apply_yaml(s, from.yaml_text, from.yaml_origin); !st) return st.error();
  if (auto st = apply_env(s, from.env); !st) return st.error();
  for (const auto& [name, value] : from.flags) {
    if (auto st = apply_flag(s, name, value); !st) return st.error();
  }
  return validate(std::move(s));
}

std::vector<std::string> unknown_env_names(const env_map& env) {
  std::vector<std::string> unknown;
  for (auto it = env.lower_bound("SWITCHYARD_"); it != env.end(); ++it) {
    if (it->first.rfind("SWITCHYARD_", 0) != 0) break;
    // Read by other commands than serve (config/cli.hpp, config/client_args.hpp).
    if (it->first == config_env || it->first == "SWITCHYARD_URL" ||
        it->first == "SWITCHYARD_API_KEY" || it->first == "SWITCHYARD_ADMIN_KEY")
      continue;
    bool known = false;
    for (const auto& option : text_options()) known = known || option.env == it->first;
    if (!known) unknown.push_back(it->first);
  }
  return unknown;
}

}  // namespace sy::config
