// Per-line validation and parsing of batch input lines (simdjson on-demand).
#include "runtime/detail/batch_line.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "config/client_text.hpp"
#include "config/limits.hpp"

namespace sy::runtime::batch {

namespace od = simdjson::ondemand;

namespace detail {

endpoint_kind classify_endpoint(std::string_view endpoint) { return endpoints::find(endpoint); }

line_error make_line_error(int64_t line_no, error_code code, std::string param,
                           std::string_view text) {
  std::string message = "Line " + std::to_string(line_no) + ": ";
  message += text;
  return line_error{std::string(code), line_no, std::move(param), std::move(message)};
}

namespace {

// On-demand parsing only looks at what it is asked for, so full validation needs a walk that
// visits (and thereby checks) every value: numbers are parsed, strings unescaped, literals read.
constexpr int kMaxDepth = limits::json_max_depth;

/// Where the walk is, as steps (a member's unescaped key, valid until the next line is parsed,
/// or an element's index), and the path of the first key found twice in one object (empty:
/// none), which the walk reports as simdjson::UNEXPECTED_ERROR. The steps are kept as views and
/// spelled out (`body.messages[0].role`) only for that error, not for every value of every line.
struct walk_path {
  struct step {
    std::string_view key;
    size_t index = 0;
    bool element = false;
  };
  std::vector<step> at;
  std::string duplicate;

  std::string text() const {
    std::string out;
    for (const auto& s : at) {
      if (s.element) {
        out += "[" + std::to_string(s.index) + "]";
      } else {
        if (!out.empty()) out += '.';
        out += s.key;
      }
    }
    return out;
  }
};

/// The keys of one object, checked for a repeat after the object was walked.
bool record_duplicate(std::vector<std::string_view>& keys, walk_path& path) {
  std::sort(keys.begin(), keys.end());
  auto dup = std::adjacent_find(keys.begin(), keys.end());
  if (dup == keys.end()) return false;
  path.at.push_back({*dup, 0, false});
  path.duplicate = path.text();
  return true;
}

/// `depth` is the nesting `v` has when it is an object or array (the line's object is 1); the
/// walk recurses at most limits::json_max_depth deep. A key twice in one object, at any depth,
/// stops it (`path.duplicate`).
simdjson::error_code validate_value(od::value v, int depth, walk_path& path) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if ((type == od::json_type::array || type == od::json_type::object) && depth > kMaxDepth)
    return simdjson::DEPTH_ERROR;
  switch (type) {
    case od::json_type::array: {
      od::array a;
      if (auto e = v.get_array().get(a)) return e;
      size_t i = 0;
      for (auto element : a) {
        od::value x;
        if (auto e = element.get(x)) return e;
        path.at.push_back({{}, i++, true});
        if (auto e = validate_value(x, depth + 1, path)) return e;
        path.at.pop_back();
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::object: {
      od::object o;
      if (auto e = v.get_object().get(o)) return e;
      std::vector<std::string_view> keys;  // unescaped: valid until the next line is parsed
      for (auto field : o) {
        std::string_view key;
        if (auto e = field.unescaped_key().get(key)) return e;
        keys.push_back(key);
        od::value x;
        if (auto e = field.value().get(x)) return e;
        path.at.push_back({key, 0, false});
        if (auto e = validate_value(x, depth + 1, path)) return e;
        path.at.pop_back();
      }
      return record_duplicate(keys, path) ? simdjson::UNEXPECTED_ERROR : simdjson::SUCCESS;
    }
    case od::json_type::number: {
      double d;
      return v.get_double().get(d);
    }
    case od::json_type::string: {
      std::string_view s;
      return v.get_string().get(s);
    }
    case od::json_type::boolean: {
      bool b;
      return v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null = false;
      if (auto e = v.is_null().get(is_null)) return e;
      return is_null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::SUCCESS;
}

/// Validates a whole document that is an object, including that nothing follows it.
simdjson::error_code validate_object_document(od::document& doc, walk_path& path) {
  od::object o;
  if (auto e = doc.get_object().get(o)) return e;
  std::vector<std::string_view> keys;
  for (auto field : o) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    keys.push_back(key);
    od::value x;
    if (auto e = field.value().get(x)) return e;
    path.at.push_back({key, 0, false});
    if (auto e = validate_value(x, 2, path)) return e;
    path.at.pop_back();
  }
  if (record_duplicate(keys, path)) return simdjson::UNEXPECTED_ERROR;
  // current_location() fails with OUT_OF_BOUNDS exactly when the whole input was consumed.
  const char* rest = nullptr;
  if (doc.current_location().get(rest) == simdjson::SUCCESS) return simdjson::TRAILING_CONTENT;
  return simdjson::SUCCESS;
}

enum class field_state { ok, missing, wrong_type };

/// Looks up a string field of a document or object; an empty string counts as wrong_type.
template <class Container>
field_state string_field(Container& c, const char* key, std::string_view& out) {
  od::value v;
  if (c.find_field_unordered(key).get(v) != simdjson::SUCCESS) return field_state::missing;
  if (v.get_string().get(out) != simdjson::SUCCESS || out.empty()) return field_state::wrong_type;
  return field_state::ok;
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

/// The raw JSON text of a value (consumes it).
simdjson::error_code raw_text(od::value v, std::string_view& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  simdjson::error_code e = simdjson::SUCCESS;
  if (type == od::json_type::object) {
    od::object o;
    if (!(e = v.get_object().get(o))) e = o.raw_json().get(out);
  } else if (type == od::json_type::array) {
    od::array a;
    if (!(e = v.get_array().get(a))) e = a.raw_json().get(out);
  } else {
    out = v.raw_json_token();
  }
  out = trim_right(out);
  return e;
}

/// The system prompt's hash: the content of the first message whose role is "system" or
/// "developer" (a string's value, otherwise the raw JSON text); 0 when there is none.
uint32_t system_prompt_hash(od::array messages) {
  for (auto element : messages) {
    od::object message;
    if (element.get_object().get(message) != simdjson::SUCCESS) continue;
    std::string_view role;
    if (message.find_field_unordered("role").get_string().get(role) != simdjson::SUCCESS) continue;
    if (role != "system" && role != "developer") continue;
    od::value content;
    if (message.find_field_unordered("content").get(content) != simdjson::SUCCESS) return 0;
    std::string_view text;
    if (content.get_string().get(text) == simdjson::SUCCESS) return fnv1a32(text);
    if (raw_text(content, text) != simdjson::SUCCESS) return 0;
    return fnv1a32(text);
  }
  return 0;
}

/// The characters (Unicode code points) of valid UTF-8 text: the bytes that start one.
size_t code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

/// What is wrong with a request body's `metadata` (nullopt: nothing, or absent), by the limits
/// a job's and a sync call's metadata have (docs/limits.md): null, or an object of at most 16
/// string values, keys of at most 64 and values of at most 512 characters. The line was
/// validated whole already, so only the types and sizes are looked at.
std::optional<std::string> metadata_problem(od::object& body) {
  od::value m;
  if (body.find_field_unordered("metadata").get(m) != simdjson::SUCCESS) return std::nullopt;
  od::json_type type;
  if (m.type().get(type) != simdjson::SUCCESS) return "must be an object of string values";
  if (type == od::json_type::null) return std::nullopt;
  od::object o;
  if (type != od::json_type::object || m.get_object().get(o) != simdjson::SUCCESS)
    return "must be an object of string values";
  size_t keys = 0;
  for (auto field : o) {
    if (++keys > limits::metadata_max_keys)
      return "has more than " + std::to_string(limits::metadata_max_keys) + " keys";
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return "has a key that is not text";
    if (code_points(key) > limits::metadata_key_max_chars)
      return "has a key longer than " + std::to_string(limits::metadata_key_max_chars) +
             " characters";
    std::string_view value;
    if (field.value().get_string().get(value) != simdjson::SUCCESS)
      return "value of '" + quote_client(key) + "' must be a string";
    if (code_points(value) > limits::metadata_value_max_chars)
      return "value of '" + quote_client(key) + "' is longer than " +
             std::to_string(limits::metadata_value_max_chars) + " characters";
  }
  return std::nullopt;
}

std::string_view required_message(field_state s) {
  return s == field_state::missing ? "is required." : "must be a non-empty string.";
}

}  // namespace

std::optional<line_error> check_line(od::parser& parser, const char* data, size_t size,
                                     size_t capacity, std::string_view endpoint, endpoint_kind kind,
                                     int64_t line_no, line_facts& out) {
  out = line_facts{};
  walk_path path;
  auto bad_json = [&](simdjson::error_code e) {
    if (e == simdjson::UNEXPECTED_ERROR && !path.duplicate.empty())
      return make_line_error(line_no, errc::invalid_request, quote_client(path.duplicate),
                             "'" + quote_client(path.duplicate) + "' is given more than once.");
    if (e == simdjson::DEPTH_ERROR)
      return make_line_error(line_no, errc::json_too_deep, "",
                             "objects and arrays nest more than " + std::to_string(kMaxDepth) +
                                 " levels deep (json_max_depth, see docs/limits.md).");
    return make_line_error(line_no, errc::invalid_json_line, "",
                           std::string("not valid JSON (") + simdjson::error_message(e) + ").");
  };
  od::document doc;
  if (auto e = parser.iterate(data, size, capacity).get(doc)) return bad_json(e);
  od::json_type type;
  if (auto e = doc.type().get(type)) return bad_json(e);
  if (type != od::json_type::object) {
    return make_line_error(line_no, errc::invalid_json_line, "",
                           "a request must be a JSON object.");
  }
  if (auto e = validate_object_document(doc, path)) return bad_json(e);
  doc.rewind();

  std::string_view custom_id, method, url;
  const field_state id_state = string_field(doc, "custom_id", custom_id);
  if (id_state == field_state::ok) out.custom_id = custom_id;
  const field_state method_state = string_field(doc, "method", method);
  const field_state url_state = string_field(doc, "url", url);
  od::value body_value;
  od::object body;
  const bool body_present = doc.find_field_unordered("body").get(body_value) == 0;
  const bool body_ok = body_present && body_value.get_object().get(body) == simdjson::SUCCESS;

  auto too_long = [&](const char* param, size_t got, size_t limit, const char* name) {
    return make_line_error(line_no, errc::string_above_max_length, param,
                           "'" + std::string(param) + "' is " + std::to_string(got) +
                               " bytes long; at most " + std::to_string(limit) + " are allowed (" +
                               name + ", see docs/limits.md).");
  };
  auto required = [&](field_state s, const char* name) {
    return make_line_error(line_no, errc::missing_required_parameter, name,
                           "'" + std::string(name) + "' " + std::string(required_message(s)));
  };
  if (id_state != field_state::ok) return required(id_state, "custom_id");
  if (custom_id.size() > limits::custom_id_max_bytes) {
    return too_long("custom_id", custom_id.size(), limits::custom_id_max_bytes,
                    "custom_id_max_bytes");
  }
  if (has_control_character(custom_id))
    return make_line_error(line_no, errc::invalid_value, "custom_id",
                           "'custom_id' may not hold a control character.");
  if (method_state != field_state::ok) return required(method_state, "method");
  if (url_state != field_state::ok) return required(url_state, "url");
  if (!body_ok) {
    return make_line_error(line_no, errc::missing_required_parameter, "body",
                           body_present ? "'body' must be a JSON object." : "'body' is required.");
  }
  if (method != "POST") {
    return make_line_error(line_no, errc::invalid_request, "method",
                           "'method' must be \"POST\", got \"" + quote_client(method) + "\".");
  }
  if (url != endpoint) {
    return make_line_error(line_no, errc::invalid_url, "url",
                           "'url' is \"" + quote_client(url) + "\" but the batch's endpoint is \"" +
                               std::string(endpoint) + "\".");
  }

  std::string_view model;
  const field_state model_state = string_field(body, "model", model);
  if (model_state != field_state::ok) {
    return make_line_error(line_no, errc::invalid_request, "body.model",
                           "'body.model' " + std::string(required_message(model_state)));
  }
  if (model.size() > limits::model_max_bytes) {
    return too_long("body.model", model.size(), limits::model_max_bytes, "model_max_bytes");
  }
  if (has_control_character(model))
    return make_line_error(line_no, errc::invalid_value, "body.model",
                           "'body.model' may not hold a control character.");
  out.model = model;

  if (kind) {
    const std::string_view needed = kind->required_field;
    const bool chat = kind->what == endpoints::kind::chat;
    od::value v;
    const bool present = body.find_field_unordered(needed).get(v) == simdjson::SUCCESS;
    od::array messages;
    const bool ok = present && (!chat || v.get_array().get(messages) == simdjson::SUCCESS);
    if (!ok) {
      const std::string param = "body." + std::string(needed);
      return make_line_error(line_no, errc::invalid_request, param,
                             "'" + param + (present ? "' must be an array." : "' is required."));
    }
    if (chat) out.prefix_hash = system_prompt_hash(messages);
  }

  // `stream` has a job's rules: true or false (or null); another type is refused, as a job's
  // body's is, rather than read as false here and as something else by the gateway.
  od::value stream;
  if (body.find_field_unordered("stream").get(stream) == simdjson::SUCCESS) {
    od::json_type type;
    bool streaming = false;
    if (stream.type().get(type) != simdjson::SUCCESS ||
        (type != od::json_type::null &&
         (type != od::json_type::boolean || stream.get_bool().get(streaming))))
      return make_line_error(line_no, errc::invalid_request, "body.stream",
                             "'body.stream' must be true or false.");
    if (streaming)
      return make_line_error(line_no, errc::streaming_unsupported, "body.stream",
                             "'body.stream' is true; batch requests cannot stream.");
  }
  if (auto problem = metadata_problem(body))
    return make_line_error(line_no, errc::invalid_metadata, "body.metadata",
                           "'body.metadata' " + *problem + ".");
  return std::nullopt;
}

}  // namespace detail

sy::result<request_line> parse_request_line(std::string_view line) {
  // One parser per thread: dispatch may parse lines on several threads at once.
  thread_local od::parser parser;
  const simdjson::padded_string padded(line);
  auto invalid = [](const char* what) {
    return sy::make_error(errc::invalid_json_line,
                          std::string("The batch request line has no ") + what + ".");
  };
  od::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) return invalid("JSON object");
  request_line out;
  std::string_view text;
  if (doc.find_field_unordered("custom_id").get_string().get(text) != simdjson::SUCCESS) {
    return invalid("custom_id");
  }
  out.custom_id = text;
  od::object body;
  if (doc.find_field_unordered("body").get_object().get(body) != simdjson::SUCCESS ||
      body.raw_json().get(text) != simdjson::SUCCESS) {
    return invalid("body object");
  }
  out.body = detail::trim_right(text);
  // raw_json() consumed the body; start over for body.model.
  doc.rewind();
  if (doc.find_field_unordered("body").find_field_unordered("model").get_string().get(text) !=
      simdjson::SUCCESS) {
    return invalid("body.model");
  }
  out.model = text;
  return out;
}

}  // namespace sy::runtime::batch
