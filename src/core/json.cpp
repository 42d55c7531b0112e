#include "codeact/core/json.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "codeact/core/strings.hpp"

namespace codeact::core {

bool json_nests_deeper_than(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;  // an unbalanced closer gives no depth back to later openers
    }
  }
  return false;
}

Result<Json> parse_json(std::string_view text, std::string_view what) {
  if (json_nests_deeper_than(text)) {
    return invalid_argument(fmt::format(
        "{} is nested more than {} levels deep; it was refused unparsed", what, kMaxJsonDepth));
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return invalid_argument(
        fmt::format("{} is not valid JSON (byte {}): {}", what, e.byte, e.what()));
  } catch (const Json::exception& e) {
    // A number beyond a double's range (1e400) is out_of_range, not a parse_error.
    return invalid_argument(fmt::format("{} cannot be read: {}", what, e.what()));
  }
}

std::string json_preview(const Json& v, size_t max) { return abbreviate(dump_json(v), max); }

std::string json_string(const Json& j, std::string_view key, std::string fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

int64_t json_int(const Json& j, std::string_view key, int64_t fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  if (it->is_number_float()) {
    // Truncated like a cast, but only where a cast is defined: NaN and 1e300 give the fallback.
    double d = it->get<double>();
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return fallback;
    return static_cast<int64_t>(d);
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}) return fallback;
  return it->get<int64_t>();
}

double json_number(const Json& j, std::string_view key, double fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  return it->get<double>();
}

bool json_bool(const Json& j, std::string_view key, bool fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

const Json& json_object(const Json& j, std::string_view key) {
  static const Json kEmpty = Json::object();
  if (!j.is_object()) return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

std::string dump_json(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace codeact::core
