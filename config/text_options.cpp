// The flattened list of settings that can be given as text (environment and flags), built from
// settings_table() and gateway_table() so that nothing is declared twice.

#include "config/detail/text.hpp"
#include "config/settings_table.hpp"

namespace sy::config {
namespace {

text_option scalar_option(const setting_def& def) {
  static const settings defaults{};
  text_option option{.name = std::string(def.name),
                     .env = env_name(def.name),
                     .flag = std::string(def.flag),
                     .type = def.type,
                     .default_text = format_value(defaults, def),
                     .min = def.min,
                     .max = def.max,
                     .description = std::string(def.description),
                     .set = {}};
  if (option.default_text.empty()) option.default_text = "(none)";
  option.set = [&def](settings& s, std::string_view text, std::string_view where) {
    return assign(s, def, text, where);
  };
  return option;
}

/// `gateway`: the global gateway's URL. An empty value removes the global gateway; a URL keeps
/// the other fields (e.g. from the file) and creates the gateway with defaults when absent.
text_option gateway_url_option(const setting_def& def) {
  text_option option{.name = std::string(def.name),
                     .env = env_name(def.name),
                     .flag = std::string(def.flag),
                     .type = def.type,
                     .default_text = "(none)",
                     .description = std::string(def.description),
                     .set = {}};
  option.set = [](settings& s, std::string_view text, std::string_view) -> status {
    auto url = detail::trim(text);
    if (url.empty()) {
      s.gateway.reset();
      return ok;
    }
    if (!s.gateway) s.gateway.emplace();
    s.gateway->url = std::string(url);
    return ok;
  };
  return option;
}

/// `gateway.<field>`: a field of the global gateway. Setting one without a URL creates a gateway
/// with an empty URL, which validate() then rejects with a message asking for the URL.
text_option gateway_field_option(const gateway_field_def& def) {
  static const gateway_settings defaults{};
  std::string name = "gateway." + std::string(def.name);
  std::string flag = "--gateway-" + std::string(def.name);
  for (char& c : flag) c = c == '_' ? '-' : c;
  text_option option{.name = name,
                     .env = env_name(name),
                     .flag = flag,
                     .type = def.type,
                     .default_text = format_value(defaults, def),
                     .min = def.min,
                     .max = def.max,
                     .description = "Global gateway: " + std::string(def.description),
                     .set = {}};
  if (option.default_text.empty()) option.default_text = "(none)";
  option.set = [&def](settings& s, std::string_view text, std::string_view where) {
    if (!s.gateway) s.gateway.emplace();
    return assign(*s.gateway, def, text, where);
  };
  return option;
}

std::vector<text_option> build_text_options() {
  std::vector<text_option> options;
  for (const auto& def : settings_table()) {
    if (def.type == value_type::gateway) {
      options.push_back(gateway_url_option(def));
      for (const auto& field : gateway_table()) {
        // url is the `gateway` option itself; headers is a map, YAML only.
        if (field.name != "url" && field.type != value_type::headers)
          options.push_back(gateway_field_option(field));
      }
    } else if (!def.flag.empty()) {
      options.push_back(scalar_option(def));
    }
  }
  return options;
}

}  // namespace

const std::vector<text_option>& text_options() {
  static const std::vector<text_option> options = build_text_options();
  return options;
}

const text_option* find_text_option(std::string_view name) {
  for (const auto& option : text_options()) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

}  // namespace sy::config
