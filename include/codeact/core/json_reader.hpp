// JsonReader: reads one JSON object field by field into C++ values. A missing required key or a
// value of the wrong type is an InvalidArgument error naming the object (`what`: a payload's
// name or a JSON path such as "messages[0].parts[1]") and the key — never a silent default.
// null counts as absent (clients in other languages send it for "not set"). finish() makes keys
// nobody read (a misspelling) an error too; a reader that accepts documents written by newer
// versions simply does not call it.
//
//   JsonReader r(j, "codeact.tool_call input");
//   CODEACT_TRY_STATUS(r.valid());
//   CODEACT_TRY_STATUS(r.required("agent", in.agent));
//   CODEACT_TRY_STATUS(r.optional("mcp_servers", in.mcp_servers));
//   CODEACT_TRY_STATUS(r.finish());
//
// Values: std::string, bool, double (finite), int64_t (an integral float such as 3.0 too, in
// range: never an undefined cast), int (32-bit),
// std::vector<std::string>, Json (anything), and std::optional of each (set when present).
// Not thread-safe; one reader per object, which must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::core {

class JsonReader {
 public:
  // InvalidArgument unless `j` is an object (check with valid()).
  JsonReader(const Json& j, std::string what) : j_(j), what_(std::move(what)) {}

  // InvalidArgument "<what>: expected a JSON object, got <value>" unless the value is an object.
  Status valid() const;
  const std::string& what() const { return what_; }

  // The raw value of `key` (null when absent or null), marked as read.
  const Json* raw(const char* key) {
    known_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  bool has(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }

  // `out` from `key`; InvalidArgument when it is absent or of the wrong type.
  template <typename T>
  Status required(const char* key, T& out) {
    const Json* v = raw(key);
    if (!v) return missing(key);
    return convert(key, *v, out);
  }
  // `out` from `key` when present (left unchanged otherwise); InvalidArgument when of the
  // wrong type.
  template <typename T>
  Status optional(const char* key, T& out) {
    const Json* v = raw(key);
    if (!v) return ok_status();
    return convert(key, *v, out);
  }
  // An object or value read by `parse` (which names its own errors; they get
  // "<what>: \"<key>\"" as context).
  template <typename T>
  Status optional_with(const char* key, T& out,
                       const std::function<Result<T>(const Json&)>& parse) {
    const Json* v = raw(key);
    if (!v) return ok_status();
    auto parsed = parse(*v);
    if (!parsed.ok()) return std::move(parsed).error().with_context(context_of(key));
    out = std::move(*parsed);
    return ok_status();
  }
  template <typename T>
  Status required_with(const char* key, T& out,
                       const std::function<Result<T>(const Json&)>& parse) {
    if (!has(key)) {
      known_.insert(key);
      return missing(key);
    }
    return optional_with(key, out, parse);
  }

  // InvalidArgument "<what>: \"<key>\" must be <expected>, got <value>": for checks a caller
  // makes itself on raw().
  Error wrong(const char* key, std::string_view expected) const;

  // InvalidArgument naming every key of the object that was not read.
  Status finish() const;

 private:
  Error missing(const char* key) const;
  std::string context_of(const char* key) const;
  Error wrong(const char* key, std::string_view expected, const Json& v) const;

  Status convert(const char* key, const Json& v, std::string& out) const;
  Status convert(const char* key, const Json& v, bool& out) const;
  Status convert(const char* key, const Json& v, double& out) const;
  Status convert(const char* key, const Json& v, int64_t& out) const;
  Status convert(const char* key, const Json& v, int& out) const;
  Status convert(const char* key, const Json& v, std::vector<std::string>& out) const;
  Status convert(const char* key, const Json& v, Json& out) const;
  template <typename T>
  Status convert(const char* key, const Json& v, std::optional<T>& out) const {
    T value{};
    CODEACT_TRY_STATUS(convert(key, v, value));
    out = std::move(value);
    return ok_status();
  }

  const Json& j_;
  std::string what_;
  std::set<std::string> known_;
};

}  // namespace codeact::core
