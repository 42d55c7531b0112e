// PayloadReader: reads one JSON object of a payload field by field, strictly. A missing required
// key, a value of the wrong type and a key nobody reads (a misspelling) are InvalidArgument
// errors naming the payload and the key — never a silent default. null counts as absent for
// optional keys (clients in other languages send it for "not set").
//
//   PayloadReader r(j, "codeact.tool_call input");
//   CODEACT_TRY_STATUS(r.required("agent", in.agent));
//   CODEACT_TRY_STATUS(r.optional("mcp_servers", in.mcp_servers));
//   CODEACT_TRY_STATUS(r.finish());
//
// Internal to the durable layer (payloads.cpp). Not thread-safe; one reader per object.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/core/strings.hpp"

namespace codeact::durable::internal {

using core::Json;

// `v` as JSON, cut to 60 characters: what an error message shows of a wrong value.
inline std::string preview_json(const Json& v) {
  std::string s = core::dump_json(v);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

class PayloadReader {
 public:
  // InvalidArgument unless `j` is an object (check with valid()).
  PayloadReader(const Json& j, std::string what) : j_(j), what_(std::move(what)) {}

  core::Status valid() const {
    if (j_.is_object()) return core::ok_status();
    return core::invalid_argument(
        fmt::format("{}: expected a JSON object, got {}", what_, preview(j_)));
  }
  const std::string& what() const { return what_; }

  // The raw value of `key` (null when absent), marked as read.
  const Json* raw(const char* key) {
    known_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  bool has(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }

  template <typename T>
  core::Status required(const char* key, T& out) {
    const Json* v = raw(key);
    if (!v) return core::invalid_argument(fmt::format("{}: \"{}\" is required", what_, key));
    return convert(key, *v, out);
  }
  template <typename T>
  core::Status optional(const char* key, T& out) {
    const Json* v = raw(key);
    if (!v) return core::ok_status();
    return convert(key, *v, out);
  }
  // An object or value read by `parse` (which names its own errors).
  template <typename T>
  core::Status optional_with(const char* key, T& out,
                             const std::function<core::Result<T>(const Json&)>& parse) {
    const Json* v = raw(key);
    if (!v) return core::ok_status();
    auto parsed = parse(*v);
    if (!parsed.ok())
      return std::move(parsed).error().with_context(fmt::format("{}: \"{}\"", what_, key));
    out = std::move(*parsed);
    return core::ok_status();
  }
  template <typename T>
  core::Status required_with(const char* key, T& out,
                             const std::function<core::Result<T>(const Json&)>& parse) {
    if (!has(key)) {
      known_.insert(key);
      return core::invalid_argument(fmt::format("{}: \"{}\" is required", what_, key));
    }
    return optional_with(key, out, parse);
  }

  // InvalidArgument naming every key of the object that was not read.
  core::Status finish() const {
    std::vector<std::string> unknown;
    for (const auto& [key, _] : j_.items()) {
      if (!known_.count(key)) unknown.push_back("\"" + key + "\"");
    }
    if (unknown.empty()) return core::ok_status();
    std::vector<std::string> known;
    for (const auto& k : known_) known.push_back(k);
    return core::invalid_argument(fmt::format("{}: unknown key{} {} (known: {})", what_,
                                              unknown.size() > 1 ? "s" : "",
                                              core::join(unknown, ", "), core::join(known, ", ")));
  }

 private:
  static std::string preview(const Json& v) { return preview_json(v); }
  core::Status wrong(const char* key, const char* expected, const Json& v) const {
    return core::invalid_argument(
        fmt::format("{}: \"{}\" must be {}, got {}", what_, key, expected, preview(v)));
  }

  core::Status convert(const char* key, const Json& v, std::string& out) const {
    if (!v.is_string()) return wrong(key, "a string", v);
    out = v.get<std::string>();
    return core::ok_status();
  }
  core::Status convert(const char* key, const Json& v, bool& out) const {
    if (!v.is_boolean()) return wrong(key, "true or false", v);
    out = v.get<bool>();
    return core::ok_status();
  }
  // A finite number (a YAML document can hold .nan and .inf; JSON cannot).
  core::Status convert(const char* key, const Json& v, double& out) const {
    if (!v.is_number()) return wrong(key, "a number", v);
    const double d = v.get<double>();
    if (!std::isfinite(d)) return wrong(key, "a finite number", v);
    out = d;
    return core::ok_status();
  }
  // An integer that fits int64_t; a float only when it is a whole number in range (casting a
  // NaN or an out-of-range double to an integer is undefined behaviour).
  core::Status convert(const char* key, const Json& v, int64_t& out) const {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        return wrong(key, "an integer of at most 64 bits", v);
      out = static_cast<int64_t>(v.get<uint64_t>());
      return core::ok_status();
    }
    if (v.is_number_integer()) {
      out = v.get<int64_t>();
      return core::ok_status();
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      // [-2^63, 2^63): both bounds are exact doubles.
      if (std::isfinite(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
          std::trunc(d) == d) {
        out = static_cast<int64_t>(d);
        return core::ok_status();
      }
    }
    return wrong(key, "an integer", v);
  }
  core::Status convert(const char* key, const Json& v, int& out) const {
    int64_t wide = 0;
    CODEACT_TRY_STATUS(convert(key, v, wide));
    if (wide < INT32_MIN || wide > INT32_MAX) return wrong(key, "a 32-bit integer", v);
    out = static_cast<int>(wide);
    return core::ok_status();
  }
  core::Status convert(const char* key, const Json& v, std::vector<std::string>& out) const {
    if (!v.is_array()) return wrong(key, "a list of strings", v);
    std::vector<std::string> items;
    for (const auto& item : v) {
      if (!item.is_string()) return wrong(key, "a list of strings", v);
      items.push_back(item.get<std::string>());
    }
    out = std::move(items);
    return core::ok_status();
  }
  core::Status convert(const char*, const Json& v, Json& out) const {
    out = v;
    return core::ok_status();
  }

  const Json& j_;
  std::string what_;
  std::set<std::string> known_;
};

}  // namespace codeact::durable::internal
