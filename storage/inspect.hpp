#pragma once
/// Helpers for the `inspect` overloads of the write operations, their replies and the records
/// they carry (storage/ops.hpp, batch_ops.hpp, records.hpp, batch_records.hpp). An overload
/// follows CAF 0.17's inspector concept —
/// `template <class Inspector> typename Inspector::result_type inspect(Inspector& f, T& x)`,
/// returning `f(x.field, ...)` — so that these values travel in actor messages as plain values
/// that can be serialized (NATS, the changelog) and printed.
///
/// No CAF include here: the templates use only what the concept promises
/// (`Inspector::result_type`, `reads_state` / `writes_state`, `f(values...)`), plus adapters for
/// what CAF 0.17 does not know:
/// - `std::optional<T>`: a bool, then the value when there is one;
/// - `std::variant<Ts...>`: the index (one byte), then the alternative;
/// - `nlohmann::json`: its compact text;
/// - a record with a stored encoding (encode_job/decode_job): that encoded string.
///
/// Loading can meet a value it cannot take (an index past the alternatives, text that is not
/// JSON, an encoding that does not decode). A loading inspector reports it through
/// `inspect_failure<Inspector>::make(what)`, which the inspector's adapter defines
/// (actors/detail/caf_inspect.hpp for CAF's deserializers). Loading with an inspector that has
/// none does not compile. Saving inspectors never fail here, so they need none.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

namespace sy::storage {

/// How a loading inspector says "this value is not valid": a specialization provides
/// `static typename Inspector::result_type make(const char* what)`. Declared, never defined here.
template <class Inspector, class Enable = void>
struct inspect_failure;

namespace inspect_detail {

/// `f(optional_field{x})`: an optional member, as a flag and the value.
template <class T>
struct optional_field {
  std::optional<T>& value;
};

/// `f(variant_field{x})`: a variant member, as the index and the alternative.
template <class... Ts>
struct variant_field {
  std::variant<Ts...>& value;
};

/// `f(json_field{x})`: a JSON member, as its compact text.
struct json_field {
  nlohmann::json& value;
};

template <class T>
optional_field(std::optional<T>&) -> optional_field<T>;
template <class... Ts>
variant_field(std::variant<Ts...>&) -> variant_field<Ts...>;

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, optional_field<T>& x) {
  if constexpr (Inspector::writes_state) {
    bool engaged = false;
    if (auto err = f(engaged)) return err;
    if (!engaged) {
      x.value.reset();
      return {};
    }
    T v{};
    if (auto err = f(v)) return err;
    x.value = std::move(v);
    return {};
  } else {
    if (x.value) return f(true, *x.value);
    return f(false);
  }
}

template <size_t I, class Inspector, class... Ts>
typename Inspector::result_type load_alternative(Inspector& f, std::variant<Ts...>& x,
                                                 size_t index) {
  if constexpr (I < sizeof...(Ts)) {
    if (index != I) return load_alternative<I + 1>(f, x, index);
    return f(x.template emplace<I>());
  } else {
    return inspect_failure<Inspector>::make("a variant index past its alternatives");
  }
}

template <class Inspector, class... Ts>
typename Inspector::result_type inspect(Inspector& f, variant_field<Ts...>& x) {
  static_assert(sizeof...(Ts) <= 256, "the index is one byte");
  if constexpr (Inspector::writes_state) {
    uint8_t index = 0;
    if (auto err = f(index)) return err;
    return load_alternative<0>(f, x.value, index);
  } else {
    auto index = static_cast<uint8_t>(x.value.index());
    return std::visit([&](auto& alternative) { return f(index, alternative); }, x.value);
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, json_field& x) {
  if constexpr (Inspector::writes_state) {
    std::string text;
    if (auto err = f(text)) return err;
    auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return inspect_failure<Inspector>::make("JSON that does not parse");
    x.value = std::move(parsed);
    return {};
  } else {
    auto text = x.value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return f(text);
  }
}

}  // namespace inspect_detail

using inspect_detail::json_field;
using inspect_detail::optional_field;
using inspect_detail::variant_field;

/// Inspects `x` as the string `encode(x)`; loading decodes it with `decode` (which returns an
/// optional: nullopt fails the load).
template <class Inspector, class T, class Encode, class Decode>
typename Inspector::result_type inspect_encoded(Inspector& f, T& x, Encode encode, Decode decode) {
  if constexpr (Inspector::writes_state) {
    std::string text;
    if (auto err = f(text)) return err;
    auto decoded = decode(text);
    if (!decoded) return inspect_failure<Inspector>::make("a record encoding that does not decode");
    x = std::move(*decoded);
    return {};
  } else {
    auto text = encode(x);
    return f(text);
  }
}

}  // namespace sy::storage
