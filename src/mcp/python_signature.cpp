// JSON Schema -> Python annotations, literals and function signatures (see python_signature.hpp).
#include "codeact/mcp/python_signature.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "codeact/core/strings.hpp"

namespace codeact::mcp {
namespace {

const std::set<std::string, std::less<>> kKeywords = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

constexpr int kMaxDepth = 12;

std::string camel(std::string_view s) {
  std::string out;
  bool up = true;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      up = false;
    } else {
      up = true;
    }
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "T" + out;
  return out;
}

// Joins union members, dropping duplicates and keeping None last.
std::string join_union(const std::vector<std::string>& parts) {
  std::vector<std::string> uniq;
  bool has_none = false, has_any = false;
  for (const auto& p : parts) {
    if (p == "None") {
      has_none = true;
    } else if (p == "Any") {
      has_any = true;
    } else if (std::find(uniq.begin(), uniq.end(), p) == uniq.end()) {
      uniq.push_back(p);
    }
  }
  if (has_any) return has_none && uniq.empty() ? "Any" : "Any";
  if (has_none) uniq.push_back("None");
  if (uniq.empty()) return "Any";
  std::string out;
  for (size_t i = 0; i < uniq.size(); ++i) out += (i ? " | " : "") + uniq[i];
  return out;
}

bool has_none(const std::string& annotation) {
  return annotation == "None" || annotation == "Any" ||
         (annotation.size() > 7 && annotation.compare(annotation.size() - 7, 7, " | None") == 0);
}

struct Converter {
  const Json& root;
  std::vector<std::string>* classes;
  std::set<std::string> class_names;
  std::vector<std::string> ref_stack;
  std::map<std::string, std::string> ref_class;  // $ref -> class name already made

  const Json* resolve(const std::string& ref) const {
    if (ref == "#") return &root;
    if (ref.rfind("#/", 0) != 0) return nullptr;
    try {
      const Json& j = root.at(Json::json_pointer(ref.substr(1)));
      return &j;
    } catch (const std::exception&) {
      return nullptr;
    }
  }

  std::string unique_class(std::string base) {
    std::string name = base;
    for (int i = 2; class_names.count(name); ++i) name = base + std::to_string(i);
    class_names.insert(name);
    return name;
  }

  std::string object_type(const Json& schema, const std::string& hint, int depth) {
    const Json* props = schema.contains("properties") && schema["properties"].is_object()
                            ? &schema["properties"]
                            : nullptr;
    if (props && !props->empty() && classes) {
      std::string title = schema.contains("title") && schema["title"].is_string()
                              ? schema["title"].get<std::string>()
                              : "";
      std::string name = unique_class(camel(!hint.empty()    ? hint
                                            : !title.empty() ? title
                                                             : "Object"));
      std::set<std::string> required;
      if (schema.contains("required") && schema["required"].is_array()) {
        for (const auto& r : schema["required"]) {
          if (r.is_string()) required.insert(r.get<std::string>());
        }
      }
      // Reserve the name before recursing so a cycle can refer to it.
      std::vector<std::string> lines;
      bool functional = false;
      for (const auto& [key, sub] : props->items()) {
        if (python_identifier(key) != key) functional = true;
      }
      for (const auto& [key, sub] : props->items()) {
        std::string t = convert(sub, camel(name) + camel(key), depth + 1);
        if (!required.count(key)) t = "NotRequired[" + t + "]";
        std::string desc =
            sub.is_object() && sub.contains("description") && sub["description"].is_string()
                ? sub["description"].get<std::string>()
                : "";
        if (functional) {
          lines.push_back(fmt::format("{}: {}", core::python_repr_string(key), t));
        } else {
          lines.push_back(
              fmt::format("    {}: {}{}", key, t, desc.empty() ? "" : "  # " + first_line(desc)));
        }
      }
      std::string cls;
      if (functional) {
        cls = fmt::format("{} = TypedDict({}, {{", name, core::python_repr_string(name));
        for (size_t i = 0; i < lines.size(); ++i) cls += (i ? ", " : "") + lines[i];
        cls += "})";
      } else {
        cls = fmt::format("class {}(TypedDict):\n", name);
        for (const auto& l : lines) cls += l + "\n";
        cls.pop_back();
      }
      classes->push_back(cls);
      return name;
    }
    if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object() &&
        !schema["additionalProperties"].empty()) {
      return "dict[str, " + convert(schema["additionalProperties"], hint + "Value", depth + 1) +
             "]";
    }
    return "dict[str, Any]";
  }

  static std::string first_line(const std::string& s) {
    auto nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
  }

  std::string convert(const Json& schema, const std::string& hint, int depth) {
    if (depth > kMaxDepth) return "Any";
    if (schema.is_boolean()) return schema.get<bool>() ? "Any" : "None";
    if (!schema.is_object() || schema.empty()) return "Any";
    std::string base;
    if (schema.contains("$ref") && schema["$ref"].is_string()) {
      std::string ref = schema["$ref"].get<std::string>();
      if (auto it = ref_class.find(ref); it != ref_class.end()) return it->second;
      if (std::find(ref_stack.begin(), ref_stack.end(), ref) != ref_stack.end()) {
        // A recursive type: refer to it by name (annotations are never evaluated).
        return camel(ref.substr(ref.rfind('/') + 1));
      }
      const Json* target = resolve(ref);
      if (!target) return "Any";
      ref_stack.push_back(ref);
      std::string def_name = ref.substr(ref.rfind('/') + 1);
      base = convert(*target, def_name, depth + 1);
      ref_stack.pop_back();
      if (!base.empty() && std::isupper(static_cast<unsigned char>(base[0])) &&
          base.find('[') == std::string::npos) {
        ref_class[ref] = base;
      }
    } else if (schema.contains("const")) {
      base = "Literal[" + python_literal(schema["const"]) + "]";
    } else if (schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) {
      std::vector<std::string> lits;
      bool null = false;
      for (const auto& v : schema["enum"]) {
        if (v.is_null()) {
          null = true;
        } else {
          lits.push_back(python_literal(v));
        }
      }
      std::string lit;
      if (!lits.empty()) {
        lit = "Literal[";
        for (size_t i = 0; i < lits.size(); ++i) lit += (i ? ", " : "") + lits[i];
        lit += "]";
      }
      base = lits.empty() ? "None" : null ? lit + " | None" : lit;
    } else if ((schema.contains("anyOf") && schema["anyOf"].is_array()) ||
               (schema.contains("oneOf") && schema["oneOf"].is_array())) {
      const Json& alts = schema.contains("anyOf") ? schema["anyOf"] : schema["oneOf"];
      std::vector<std::string> parts;
      for (const auto& alt : alts) parts.push_back(convert(alt, hint, depth + 1));
      base = join_union(parts);
    } else if (schema.contains("allOf") && schema["allOf"].is_array() && !schema["allOf"].empty()) {
      if (schema["allOf"].size() == 1) {
        base = convert(schema["allOf"][0], hint, depth + 1);
      } else {
        Json merged = Json::object();
        bool objects = true;
        for (const auto& part : schema["allOf"]) {
          const Json* p = &part;
          if (part.is_object() && part.contains("$ref") && part["$ref"].is_string()) {
            p = resolve(part["$ref"].get<std::string>());
          }
          if (!p || !p->is_object() || !p->contains("properties")) {
            objects = false;
            break;
          }
          merged["type"] = "object";
          for (const auto& [k, v] : (*p)["properties"].items()) merged["properties"][k] = v;
          if (p->contains("required")) {
            for (const auto& r : (*p)["required"]) merged["required"].push_back(r);
          }
        }
        base = objects ? convert(merged, hint, depth + 1) : "Any";
      }
    } else if (schema.contains("type") && schema["type"].is_array()) {
      std::vector<std::string> parts;
      for (const auto& t : schema["type"]) {
        Json one = schema;
        one["type"] = t;
        parts.push_back(convert(one, hint, depth + 1));
      }
      base = join_union(parts);
    } else {
      std::string type = schema.contains("type") && schema["type"].is_string()
                             ? schema["type"].get<std::string>()
                             : "";
      if (type.empty()) {
        if (schema.contains("properties"))
          type = "object";
        else if (schema.contains("items") || schema.contains("prefixItems"))
          type = "array";
      }
      if (type == "string") {
        base = "str";
      } else if (type == "integer") {
        base = "int";
      } else if (type == "number") {
        base = "float";
      } else if (type == "boolean") {
        base = "bool";
      } else if (type == "null") {
        base = "None";
      } else if (type == "array") {
        if (schema.contains("prefixItems") && schema["prefixItems"].is_array()) {
          base = "tuple[";
          size_t i = 0;
          for (const auto& item : schema["prefixItems"])
            base += (i++ ? ", " : "") + convert(item, hint + "Item", depth + 1);
          base += "]";
        } else if (schema.contains("items") && !schema["items"].is_array()) {
          base = "list[" + convert(schema["items"], hint + "Item", depth + 1) + "]";
        } else {
          base = "list[Any]";
        }
      } else if (type == "object") {
        base = object_type(schema, hint, depth);
      } else {
        base = "Any";
      }
    }
    if (core::json_bool(schema, "nullable") && !has_none(base)) base += " | None";
    return base;
  }
};

}  // namespace

std::string python_identifier(std::string_view name) {
  std::string out;
  for (char c : name) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (std::isalnum(u) || c == '_') && u < 0x80 ? c : '_';
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  if (kKeywords.count(out)) out += "_";
  return out;
}

std::string python_literal(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "None";
    case Json::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return v.dump();
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (std::isnan(d)) return "float('nan')";
      if (std::isinf(d)) return d > 0 ? "float('inf')" : "-float('inf')";
      std::string s = v.dump();
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      return s;
    }
    case Json::value_t::string:
      return core::python_repr_string(v.get<std::string>());
    case Json::value_t::array: {
      std::vector<std::string> items;
      for (const auto& e : v) items.push_back(python_literal(e));
      return "[" + core::join(items, ", ") + "]";
    }
    case Json::value_t::object: {
      std::vector<std::string> items;
      for (const auto& [k, e] : v.items())
        items.push_back(core::python_repr_string(k) + ": " + python_literal(e));
      return "{" + core::join(items, ", ") + "}";
    }
    default:
      return "None";
  }
}

std::string python_type(const Json& schema, const Json& root, std::vector<std::string>* classes) {
  Converter c{root, classes};
  return c.convert(schema, "", 0);
}

bool wraps_result(const Json& s) {
  return s.is_object() && s.contains("properties") && s["properties"].is_object() &&
         s["properties"].size() == 1 && s["properties"].contains("result") &&
         !s.contains("additionalProperties");
}

core::Result<PythonSignature> python_signature(const std::string& name,
                                               const std::string& description,
                                               const Json& input_schema,
                                               const Json& output_schema) {
  if (python_identifier(name) != name) {
    return core::invalid_argument(
        fmt::format("function name '{}' is not a Python identifier", name));
  }
  if (!input_schema.is_null() && !input_schema.is_object()) {
    return core::invalid_argument(fmt::format("input schema of {} is not an object", name));
  }
  PythonSignature sig;
  sig.name = name;
  const Json schema = input_schema.is_object() ? input_schema : Json::object();
  Converter conv{schema, &sig.classes};
  conv.class_names.insert(camel(name));

  struct Param {
    std::string py, key, annotation, default_text, desc;
    bool required;
  };
  std::vector<Param> params;
  std::set<std::string> required;
  if (schema.contains("required") && schema["required"].is_array()) {
    for (const auto& r : schema["required"]) {
      if (r.is_string()) required.insert(r.get<std::string>());
    }
  }
  std::set<std::string> used;
  if (schema.contains("properties") && schema["properties"].is_object()) {
    for (const auto& [key, sub] : schema["properties"].items()) {
      Param p;
      p.key = key;
      p.py = python_identifier(key);
      while (used.count(p.py)) p.py += "_";
      used.insert(p.py);
      p.required = required.count(key) > 0;
      p.annotation = conv.convert(sub, camel(name) + camel(key), 1);
      if (!p.required) {
        if (sub.is_object() && sub.contains("default")) {
          p.default_text = python_literal(sub["default"]);
          if (sub["default"].is_null() && !has_none(p.annotation)) p.annotation += " | None";
        } else {
          if (!has_none(p.annotation)) p.annotation += " | None";
          p.default_text = "None";
        }
      }
      if (sub.is_object() && sub.contains("description") && sub["description"].is_string()) {
        p.desc = core::trim(sub["description"].get<std::string>());
      }
      sig.param_names[p.py] = key;
      params.push_back(std::move(p));
    }
  }
  std::stable_partition(params.begin(), params.end(), [](const Param& p) { return p.required; });
  std::string ret = "Any";
  if (output_schema.is_object() && !output_schema.empty()) {
    // The output schema's $refs resolve inside the output schema.
    Converter out{output_schema, &sig.classes};
    out.class_names = conv.class_names;
    ret = wraps_result(output_schema)
              ? out.convert(output_schema["properties"]["result"], camel(name) + "Result", 1)
              : out.convert(output_schema, camel(name) + "Result", 1);
  }
  std::vector<std::string> declared;
  for (const auto& p : params)
    declared.push_back(p.py + ": " + p.annotation + (p.required ? "" : " = " + p.default_text));
  std::string args = core::join(declared, ", ");
  const Json* extra =
      schema.contains("additionalProperties") ? &schema["additionalProperties"] : nullptr;
  if (params.empty() && extra &&
      (extra->is_object() || (extra->is_boolean() && extra->get<bool>()))) {
    sig.var_keyword = true;
    args = "**kwargs: " + (extra->is_object() ? conv.convert(*extra, camel(name) + "Value", 1)
                                              : std::string("Any"));
  }
  sig.signature = fmt::format("def {}({}) -> {}", name, args, ret);

  std::string doc = core::trim(description);
  bool any_desc =
      std::any_of(params.begin(), params.end(), [](const Param& p) { return !p.desc.empty(); });
  if (any_desc) {
    if (!doc.empty()) doc += "\n\n";
    doc += "Args:\n";
    for (const auto& p : params) {
      std::string d = p.desc.empty() ? "" : p.desc;
      auto nl = d.find('\n');
      doc += "    " + p.py + ":" + (d.empty() ? "" : " " + d.substr(0, nl)) + "\n";
      if (nl != std::string::npos) doc += core::indent(d.substr(nl + 1), "        ");
    }
    while (!doc.empty() && doc.back() == '\n') doc.pop_back();
  }
  sig.doc = doc;
  return sig;
}

std::string PythonSignature::text() const {
  std::string out;
  for (const auto& c : classes) out += c + "\n\n";
  out += signature + ":\n";
  if (!doc.empty()) {
    std::string escaped;
    for (char c : doc) {
      if (c == '\\')
        escaped += "\\\\";
      else
        escaped += c;
    }
    for (size_t pos = 0; (pos = escaped.find("\"\"\"", pos)) != std::string::npos; pos += 4) {
      escaped.replace(pos, 3, "\\\"\"\"");
    }
    if (escaped.back() == '"') escaped.insert(escaped.size() - 1, "\\");
    out += "    \"\"\"" + core::indent(escaped, "    ").substr(4);
    if (escaped.find('\n') != std::string::npos)
      out += "    ";
    else
      out.pop_back();
    out += "\"\"\"\n";
  }
  out += "    ...\n";
  return out;
}

}  // namespace codeact::mcp
