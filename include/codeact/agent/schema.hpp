// Typed arguments: a C++ struct that lists its fields gives the JSON schema the model sees and the
// validator that turns the model's JSON arguments into the struct.
//
//   struct ExecArgs {
//     std::string code;
//     std::optional<double> timeout;
//     std::string mode = "fast";
//     std::vector<std::string> packages;
//     static auto fields() {
//       return std::tuple{
//           codeact::agent::field(&ExecArgs::code, "code", "Python code to run"),
//           codeact::agent::field(&ExecArgs::timeout, "timeout", "Seconds before it is stopped"),
//           codeact::agent::field(&ExecArgs::mode, "mode", "How hard to try")
//               .choices({"fast", "slow"})
//               .with_default(),
//           codeact::agent::field(&ExecArgs::packages, "packages", "pip packages").with_default(),
//       };
//     }
//   };
//   Json schema = codeact::agent::json_schema<ExecArgs>();
//   Result<ExecArgs> args = codeact::agent::parse_args<ExecArgs>(json);  // InvalidArgument listing
//                                                                       // every bad field
//
// Supported member types: std::string, bool, integers, floating point, std::optional<T>,
// std::vector<T>, std::map<std::string, T>, core::Json (any value) and nested structs with their
// own fields(). A field is required unless it is std::optional (absent or null -> nullopt) or
// marked with_default() (absent -> the value a default-constructed struct has, shown as "default"
// in the schema). Unknown fields are rejected (additionalProperties: false), so a misspelt
// argument reaches the model as a retry instead of being ignored.
//
// Thread-safety: all functions are pure.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::agent {

using core::Json;

// One problem with the arguments: where (JSON path like "items[2].name") and what.
struct ArgError {
  std::string path;
  std::string message;
  bool operator==(const ArgError&) const = default;
};

// "2 validation errors:\n- code: field required\n- timeout: expected a number, got \"abc\"".
std::string format_arg_errors(const std::vector<ArgError>& errors);

// Describes one member of S.
template <typename S, typename M>
struct Field {
  M S::*member;
  const char* name;
  const char* description;
  std::vector<std::string> allowed;  // enum-like choices for string fields
  bool has_default = false;
  std::optional<double> minimum;
  std::optional<double> maximum;

  // Restricts a string field to these values (JSON schema "enum").
  Field choices(std::initializer_list<const char*> values) const {
    Field f = *this;
    for (const char* v : values) f.allowed.emplace_back(v);
    return f;
  }
  // The field may be omitted; it then keeps the value of a default-constructed S.
  Field with_default() const {
    Field f = *this;
    f.has_default = true;
    return f;
  }
  // Inclusive numeric bounds.
  Field min(double v) const {
    Field f = *this;
    f.minimum = v;
    return f;
  }
  Field max(double v) const {
    Field f = *this;
    f.maximum = v;
    return f;
  }
};

template <typename S, typename M>
Field<S, M> field(M S::*member, const char* name, const char* description = "") {
  return Field<S, M>{member, name, description, {}, false, std::nullopt, std::nullopt};
}

template <typename T>
concept HasFields = requires {
  T::fields();
};

// ---------------------------------------------------------------------------------------------
// Per-type codecs

namespace schema_internal {

std::string describe_json(const Json& v);  // `"abc"`, `3`, `an object`, ... for messages
std::string number_text(double v);         // 1 -> "1", 0.5 -> "0.5"
// The int64_t equal to `d` (3.0 -> 3); nullopt for a fraction, NaN, infinity or a value outside
// int64_t's range (1e300), which a cast would make undefined behaviour.
std::optional<int64_t> exact_int64(double d);
std::string join_path(const std::string& base, const std::string& key);
std::string index_path(const std::string& base, size_t index);

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T, typename Enable = void>
struct Codec;

template <>
struct Codec<std::string> {
  static Json schema() { return {{"type", "string"}}; }
  static void parse(const Json& j, const std::string& path, std::string& out,
                    std::vector<ArgError>& errors) {
    if (!j.is_string()) {
      errors.push_back({path, "expected a string, got " + describe_json(j)});
      return;
    }
    out = j.get<std::string>();
  }
  static Json to_json(const std::string& v) { return v; }
};

template <>
struct Codec<bool> {
  static Json schema() { return {{"type", "boolean"}}; }
  static void parse(const Json& j, const std::string& path, bool& out,
                    std::vector<ArgError>& errors) {
    if (!j.is_boolean()) {
      errors.push_back({path, "expected a boolean, got " + describe_json(j)});
      return;
    }
    out = j.get<bool>();
  }
  static Json to_json(bool v) { return v; }
};

template <typename T>
struct Codec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static Json schema() { return {{"type", "integer"}}; }
  static void parse(const Json& j, const std::string& path, T& out, std::vector<ArgError>& errors) {
    if (j.is_number_float()) {
      double d = j.get<double>();
      if (auto exact = exact_int64(d)) return parse(Json(*exact), path, out, errors);  // 3.0 is 3
      if (std::isfinite(d) && std::trunc(d) == d) {
        errors.push_back({path, "integer " + j.dump() + " is out of range"});
        return;
      }
    }
    if (!j.is_number_integer() && !j.is_number_unsigned()) {
      errors.push_back({path, "expected an integer, got " + describe_json(j)});
      return;
    }
    if (j.is_number_unsigned()) {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        errors.push_back({path, "integer " + j.dump() + " is out of range"});
        return;
      }
      out = static_cast<T>(u);
      return;
    }
    auto v = j.get<int64_t>();
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (v > 0 &&
         static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      errors.push_back({path, "integer " + j.dump() + " is out of range"});
      return;
    }
    out = static_cast<T>(v);
  }
  static Json to_json(T v) { return v; }
};

template <typename T>
struct Codec<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static Json schema() { return {{"type", "number"}}; }
  static void parse(const Json& j, const std::string& path, T& out, std::vector<ArgError>& errors) {
    if (!j.is_number()) {
      errors.push_back({path, "expected a number, got " + describe_json(j)});
      return;
    }
    out = static_cast<T>(j.get<double>());
  }
  static Json to_json(T v) { return v; }
};

template <>
struct Codec<Json> {
  static Json schema() { return Json::object(); }
  static void parse(const Json& j, const std::string&, Json& out, std::vector<ArgError>&) {
    out = j;
  }
  static Json to_json(const Json& v) { return v; }
};

template <typename T>
struct Codec<std::optional<T>> {
  static Json schema() { return Codec<T>::schema(); }  // nullability is expressed by `required`
  static void parse(const Json& j, const std::string& path, std::optional<T>& out,
                    std::vector<ArgError>& errors) {
    if (j.is_null()) {
      out.reset();
      return;
    }
    T value{};
    size_t before = errors.size();
    Codec<T>::parse(j, path, value, errors);
    if (errors.size() == before) out = std::move(value);
  }
  static Json to_json(const std::optional<T>& v) {
    return v ? Codec<T>::to_json(*v) : Json(nullptr);
  }
};

template <typename T>
struct Codec<std::vector<T>> {
  static Json schema() { return {{"type", "array"}, {"items", Codec<T>::schema()}}; }
  static void parse(const Json& j, const std::string& path, std::vector<T>& out,
                    std::vector<ArgError>& errors) {
    if (!j.is_array()) {
      errors.push_back({path, "expected an array, got " + describe_json(j)});
      return;
    }
    out.clear();
    for (size_t i = 0; i < j.size(); ++i) {
      T value{};
      Codec<T>::parse(j[i], index_path(path, i), value, errors);
      out.push_back(std::move(value));
    }
  }
  static Json to_json(const std::vector<T>& v) {
    Json out = Json::array();
    for (const auto& x : v) out.push_back(Codec<T>::to_json(x));
    return out;
  }
};

template <typename T>
struct Codec<std::map<std::string, T>> {
  static Json schema() {
    return {{"type", "object"}, {"additionalProperties", Codec<T>::schema()}};
  }
  static void parse(const Json& j, const std::string& path, std::map<std::string, T>& out,
                    std::vector<ArgError>& errors) {
    if (!j.is_object()) {
      errors.push_back({path, "expected an object, got " + describe_json(j)});
      return;
    }
    out.clear();
    for (const auto& [k, v] : j.items()) {
      T value{};
      Codec<T>::parse(v, join_path(path, k), value, errors);
      out.emplace(k, std::move(value));
    }
  }
  static Json to_json(const std::map<std::string, T>& v) {
    Json out = Json::object();
    for (const auto& [k, x] : v) out[k] = Codec<T>::to_json(x);
    return out;
  }
};

template <typename S, typename M>
void field_schema(const Field<S, M>& f, const S& defaults, Json& properties, Json& required) {
  Json s = Codec<M>::schema();
  if (f.description && *f.description) s["description"] = f.description;
  if (!f.allowed.empty()) {
    if constexpr (std::is_same_v<M, std::string> || std::is_same_v<M, std::optional<std::string>>) {
      s["enum"] = f.allowed;
    }
  }
  if (f.minimum) s["minimum"] = *f.minimum;
  if (f.maximum) s["maximum"] = *f.maximum;
  if (f.has_default) {
    s["default"] = Codec<M>::to_json(defaults.*(f.member));
  } else if (!IsOptional<M>::value) {
    required.push_back(f.name);
  }
  properties[f.name] = std::move(s);
}

template <typename M>
std::optional<double> numeric_value(const M& v) {
  if constexpr (std::is_arithmetic_v<M> && !std::is_same_v<M, bool>) {
    return static_cast<double>(v);
  } else if constexpr (IsOptional<M>::value) {
    if (v) return numeric_value(*v);
    return std::nullopt;
  } else {
    return std::nullopt;
  }
}

template <typename M>
std::optional<std::string> string_value(const M& v) {
  if constexpr (std::is_same_v<M, std::string>) {
    return v;
  } else if constexpr (std::is_same_v<M, std::optional<std::string>>) {
    return v;
  } else {
    return std::nullopt;
  }
}

template <typename S, typename M>
void field_parse(const Field<S, M>& f, const Json& object, const std::string& path, S& out,
                 std::vector<ArgError>& errors) {
  std::string p = join_path(path, f.name);
  auto it = object.find(f.name);
  if (it == object.end()) {
    if (!f.has_default && !IsOptional<M>::value) errors.push_back({p, "field required"});
    return;
  }
  size_t before = errors.size();
  Codec<M>::parse(*it, p, out.*(f.member), errors);
  if (errors.size() != before) return;
  if (!f.allowed.empty()) {
    if (auto s = string_value(out.*(f.member))) {
      bool ok = false;
      std::string list;
      for (const auto& a : f.allowed) {
        ok = ok || a == *s;
        list += (list.empty() ? "" : ", ") + ("\"" + a + "\"");
      }
      if (!ok) errors.push_back({p, "must be one of " + list + ", got \"" + *s + "\""});
    }
  }
  if (auto n = numeric_value(out.*(f.member))) {
    if (f.minimum && *n < *f.minimum)
      errors.push_back({p, "must be >= " + number_text(*f.minimum) + ", got " + it->dump()});
    if (f.maximum && *n > *f.maximum)
      errors.push_back({p, "must be <= " + number_text(*f.maximum) + ", got " + it->dump()});
  }
}

template <HasFields T>
struct Codec<T> {
  static Json schema() {
    Json properties = Json::object();
    Json required = Json::array();
    const T defaults{};
    std::apply([&](const auto&... f) { (field_schema(f, defaults, properties, required), ...); },
               T::fields());
    Json s = {{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
    if (!required.empty()) s["required"] = required;
    return s;
  }
  static void parse(const Json& j, const std::string& path, T& out, std::vector<ArgError>& errors) {
    if (!j.is_object()) {
      errors.push_back(
          {path.empty() ? "(arguments)" : path, "expected an object, got " + describe_json(j)});
      return;
    }
    std::apply([&](const auto&... f) { (field_parse(f, j, path, out, errors), ...); }, T::fields());
    for (const auto& [k, _] : j.items()) {
      bool known = false;
      std::apply([&](const auto&... f) { ((known = known || k == f.name), ...); }, T::fields());
      if (!known) errors.push_back({join_path(path, k), "unknown field (not in the schema)"});
    }
  }
  static Json to_json(const T& v) {
    Json out = Json::object();
    std::apply(
        [&](const auto&... f) {
          ((out[f.name] = Codec<std::decay_t<decltype(v.*(f.member))>>::to_json(v.*(f.member))),
           ...);
        },
        T::fields());
    return out;
  }
};

}  // namespace schema_internal

// The JSON schema of T (an object schema for a struct with fields()).
template <typename T>
Json json_schema() {
  return schema_internal::Codec<T>::schema();
}

// Validates `args` against T and converts; every problem is collected into `errors`.
template <typename T>
std::optional<T> parse_args(const Json& args, std::vector<ArgError>& errors) {
  T out{};
  size_t before = errors.size();
  schema_internal::Codec<T>::parse(args, "", out, errors);
  if (errors.size() != before) return std::nullopt;
  return out;
}

// Like above; InvalidArgument with format_arg_errors() text on failure.
template <typename T>
core::Result<T> parse_args(const Json& args) {
  std::vector<ArgError> errors;
  auto value = parse_args<T>(args, errors);
  if (!value) return core::invalid_argument(format_arg_errors(errors));
  return std::move(*value);
}

// T back to JSON (the inverse of parse_args).
template <typename T>
Json to_json_value(const T& value) {
  return schema_internal::Codec<T>::to_json(value);
}

// Checks `value` against a JSON schema (the subset tools use: type, properties, required,
// additionalProperties, items, enum, minimum, maximum, anyOf/oneOf, nullable types lists).
// Unsupported keywords are ignored. Used for tools defined directly by a JSON schema.
std::vector<ArgError> validate_json_schema(const Json& value, const Json& schema);

}  // namespace codeact::agent
