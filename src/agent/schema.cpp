// Messages for argument errors, and the JSON-schema subset check used by schema-defined tools.
#include "codeact/agent/schema.hpp"

#include "codeact/core/strings.hpp"

namespace codeact::agent {

std::string format_arg_errors(const std::vector<ArgError>& errors) {
  std::string out = std::to_string(errors.size()) +
                    (errors.size() == 1 ? " validation error:" : " validation errors:");
  for (const auto& e : errors)
    out += "\n- " + (e.path.empty() ? std::string("(arguments)") : e.path) + ": " + e.message;
  return out;
}

namespace schema_internal {

std::string describe_json(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    default: {
      return core::abbreviate(core::dump_json(v), 60);
    }
  }
}

std::string number_text(double v) {
  if (auto exact = exact_int64(v)) return std::to_string(*exact);
  return Json(v).dump();
}

std::optional<int64_t> exact_int64(double d) {
  // [-2^63, 2^63): both bounds are exact doubles; NaN fails the comparison.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return std::nullopt;
  auto i = static_cast<int64_t>(d);
  if (static_cast<double>(i) != d) return std::nullopt;
  return i;
}

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

std::string index_path(const std::string& base, size_t index) {
  return (base.empty() ? std::string("(arguments)") : base) + "[" + std::to_string(index) + "]";
}

}  // namespace schema_internal

namespace {

using schema_internal::describe_json;

bool type_matches(const Json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "integer")
    return v.is_number_integer() || v.is_number_unsigned() ||
           (v.is_number_float() && schema_internal::exact_int64(v.get<double>()));
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "null") return v.is_null();
  return true;
}

std::string article(const std::string& type) {
  return (type == "integer" || type == "object" || type == "array") ? "an " + type : "a " + type;
}

void check(const Json& v, const Json& schema, const std::string& path,
           std::vector<ArgError>& errors) {
  if (!schema.is_object()) return;
  const std::string shown = path.empty() ? "(arguments)" : path;
  for (const char* key : {"anyOf", "oneOf"}) {
    auto it = schema.find(key);
    if (it != schema.end() && it->is_array() && !it->empty()) {
      bool any = false;
      for (const auto& alt : *it) {
        std::vector<ArgError> sub;
        check(v, alt, path, sub);
        if (sub.empty()) {
          any = true;
          break;
        }
      }
      if (!any) {
        errors.push_back(
            {shown, "does not match any of the allowed schemas, got " + describe_json(v)});
        return;
      }
    }
  }
  if (auto it = schema.find("type"); it != schema.end()) {
    bool ok = false;
    std::string wanted;
    if (it->is_string()) {
      ok = type_matches(v, it->get<std::string>());
      wanted = article(it->get<std::string>());
    } else if (it->is_array()) {
      for (const auto& t : *it) {
        if (!t.is_string()) continue;
        ok = ok || type_matches(v, t.get<std::string>());
        wanted += (wanted.empty() ? "" : " or ") + article(t.get<std::string>());
      }
    } else {
      ok = true;
    }
    if (!ok) {
      errors.push_back({shown, "expected " + wanted + ", got " + describe_json(v)});
      return;
    }
  }
  if (auto it = schema.find("enum"); it != schema.end() && it->is_array()) {
    bool found = false;
    for (const auto& e : *it) found = found || e == v;
    if (!found) {
      std::string list;
      for (const auto& e : *it) list += (list.empty() ? "" : ", ") + core::dump_json(e);
      errors.push_back({shown, "must be one of " + list + ", got " + describe_json(v)});
    }
  }
  if (v.is_number()) {
    if (auto it = schema.find("minimum");
        it != schema.end() && it->is_number() && v.get<double>() < it->get<double>()) {
      errors.push_back({shown, "must be >= " + schema_internal::number_text(it->get<double>()) +
                                   ", got " + v.dump()});
    }
    if (auto it = schema.find("maximum");
        it != schema.end() && it->is_number() && v.get<double>() > it->get<double>()) {
      errors.push_back({shown, "must be <= " + schema_internal::number_text(it->get<double>()) +
                                   ", got " + v.dump()});
    }
  }
  if (v.is_object()) {
    Json properties = schema.value("properties", Json::object());
    if (auto it = schema.find("required"); it != schema.end() && it->is_array()) {
      for (const auto& r : *it) {
        if (r.is_string() && !v.contains(r.get<std::string>())) {
          errors.push_back(
              {schema_internal::join_path(path, r.get<std::string>()), "field required"});
        }
      }
    }
    auto additional = schema.find("additionalProperties");
    for (const auto& [k, item] : v.items()) {
      std::string p = schema_internal::join_path(path, k);
      if (properties.is_object() && properties.contains(k)) {
        check(item, properties[k], p, errors);
      } else if (additional != schema.end()) {
        if (additional->is_boolean() && !additional->get<bool>()) {
          errors.push_back({p, "unknown field (not in the schema)"});
        } else if (additional->is_object()) {
          check(item, *additional, p, errors);
        }
      }
    }
  }
  if (v.is_array()) {
    if (auto it = schema.find("items"); it != schema.end() && it->is_object()) {
      for (size_t i = 0; i < v.size(); ++i)
        check(v[i], *it, schema_internal::index_path(path, i), errors);
    }
  }
}

}  // namespace

std::vector<ArgError> validate_json_schema(const Json& value, const Json& schema) {
  std::vector<ArgError> errors;
  check(value, schema, "", errors);
  return errors;
}

}  // namespace codeact::agent
