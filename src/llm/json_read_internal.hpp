// Reading JSON objects field by field into C++ values with errors that name the JSON path.
// Used by the from_json functions of messages.cpp and model.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::llm::internal {

using core::Json;
using core::Status;

inline core::Error field_error(std::string_view path, std::string_view key, std::string_view want) {
  return core::invalid_argument(std::string(path) + "." + std::string(key) + ": expected " +
                                std::string(want));
}

inline Status require_object(const Json& j, std::string_view path) {
  if (!j.is_object()) {
    return core::invalid_argument(std::string(path) + ": expected a JSON object, got " +
                                  std::string(j.type_name()));
  }
  return core::ok_status();
}

// Absent or null leaves `out` unchanged unless `required`.
inline Status read_string(const Json& j, const char* key, std::string& out, std::string_view path,
                          bool required = false) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return field_error(path, key, "a string (missing)");
    return core::ok_status();
  }
  if (!it->is_string()) return field_error(path, key, "a string");
  out = it->get<std::string>();
  return core::ok_status();
}

inline Status read_int(const Json& j, const char* key, int64_t& out, std::string_view path) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return core::ok_status();
  if (!it->is_number_integer() && !it->is_number_unsigned())
    return field_error(path, key, "an integer");
  out = it->get<int64_t>();
  return core::ok_status();
}

inline Status read_opt_int(const Json& j, const char* key, std::optional<int64_t>& out,
                           std::string_view path) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return core::ok_status();
  if (!it->is_number_integer() && !it->is_number_unsigned())
    return field_error(path, key, "an integer");
  out = it->get<int64_t>();
  return core::ok_status();
}

inline Status read_opt_double(const Json& j, const char* key, std::optional<double>& out,
                              std::string_view path) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return core::ok_status();
  if (!it->is_number()) return field_error(path, key, "a number");
  out = it->get<double>();
  return core::ok_status();
}

inline Status read_bool(const Json& j, const char* key, bool& out, std::string_view path) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return core::ok_status();
  if (!it->is_boolean()) return field_error(path, key, "a boolean");
  out = it->get<bool>();
  return core::ok_status();
}

inline Status read_opt_bool(const Json& j, const char* key, std::optional<bool>& out,
                            std::string_view path) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return core::ok_status();
  if (!it->is_boolean()) return field_error(path, key, "a boolean");
  out = it->get<bool>();
  return core::ok_status();
}

}  // namespace codeact::llm::internal
