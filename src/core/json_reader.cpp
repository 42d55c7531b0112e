#include "codeact/core/json_reader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "codeact/core/strings.hpp"

namespace codeact::core {

namespace {

std::string preview(const Json& v) { return json_preview(v); }

}  // namespace

Status JsonReader::valid() const {
  if (j_.is_object()) return ok_status();
  return invalid_argument(fmt::format("{}: expected a JSON object, got {}", what_, preview(j_)));
}

Error JsonReader::missing(const char* key) const {
  return invalid_argument(fmt::format("{}: \"{}\" is required", what_, key));
}

std::string JsonReader::context_of(const char* key) const {
  return fmt::format("{}: \"{}\"", what_, key);
}

Error JsonReader::wrong(const char* key, std::string_view expected, const Json& v) const {
  return invalid_argument(
      fmt::format("{}: \"{}\" must be {}, got {}", what_, key, expected, preview(v)));
}

Error JsonReader::wrong(const char* key, std::string_view expected) const {
  auto it = j_.find(key);
  return wrong(key, expected, it == j_.end() ? Json() : *it);
}

Status JsonReader::finish() const {
  std::vector<std::string> unknown;
  for (const auto& [key, _] : j_.items()) {
    if (!known_.count(key)) unknown.push_back("\"" + key + "\"");
  }
  if (unknown.empty()) return ok_status();
  std::vector<std::string> known(known_.begin(), known_.end());
  return invalid_argument(fmt::format("{}: unknown key{} {} (known: {})", what_,
                                      unknown.size() > 1 ? "s" : "", join(unknown, ", "),
                                      join(known, ", ")));
}

Status JsonReader::convert(const char* key, const Json& v, std::string& out) const {
  if (!v.is_string()) return wrong(key, "a string", v);
  out = v.get<std::string>();
  return ok_status();
}

Status JsonReader::convert(const char* key, const Json& v, bool& out) const {
  if (!v.is_boolean()) return wrong(key, "true or false", v);
  out = v.get<bool>();
  return ok_status();
}

// A finite number (a YAML document can hold .nan and .inf; JSON cannot).
Status JsonReader::convert(const char* key, const Json& v, double& out) const {
  if (!v.is_number()) return wrong(key, "a number", v);
  const double d = v.get<double>();
  if (!std::isfinite(d)) return wrong(key, "a finite number", v);
  out = d;
  return ok_status();
}

// An integer that fits int64_t; a float only when it is a whole number in range (casting a NaN
// or an out-of-range double to an integer is undefined behaviour).
Status JsonReader::convert(const char* key, const Json& v, int64_t& out) const {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return wrong(key, "an integer of at most 64 bits", v);
    out = static_cast<int64_t>(v.get<uint64_t>());
    return ok_status();
  }
  if (v.is_number_integer()) {
    out = v.get<int64_t>();
    return ok_status();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // [-2^63, 2^63): both bounds are exact doubles.
    if (std::isfinite(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
        std::trunc(d) == d) {
      out = static_cast<int64_t>(d);
      return ok_status();
    }
  }
  return wrong(key, "an integer", v);
}

Status JsonReader::convert(const char* key, const Json& v, int& out) const {
  int64_t wide = 0;
  CODEACT_TRY_STATUS(convert(key, v, wide));
  if (wide < INT32_MIN || wide > INT32_MAX) return wrong(key, "a 32-bit integer", v);
  out = static_cast<int>(wide);
  return ok_status();
}

Status JsonReader::convert(const char* key, const Json& v, std::vector<std::string>& out) const {
  if (!v.is_array()) return wrong(key, "a list of strings", v);
  std::vector<std::string> items;
  for (const auto& item : v) {
    if (!item.is_string()) return wrong(key, "a list of strings", v);
    items.push_back(item.get<std::string>());
  }
  out = std::move(items);
  return ok_status();
}

Status JsonReader::convert(const char*, const Json& v, Json& out) const {
  out = v;
  return ok_status();
}

}  // namespace codeact::core
