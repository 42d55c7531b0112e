// Filters (`x | join(', ')`), tests (`x is defined`) and the Python methods templates commonly
// call (`d.items()`, `s.strip()`) of the Jinja-subset engine. The list is in docs/templates.md.
#include <algorithm>
#include <bitset>
#include <cmath>
#include <set>

#include "template_internal.hpp"

namespace codeact::core::template_internal {
namespace {

std::string str_of(const Value& v) { return v.undefined ? "" : python_str(v.json); }

bool is_string_filter(const std::string& n) {
  return n == "upper" || n == "lower" || n == "trim" || n == "string" || n == "capitalize" ||
         n == "title" || n == "replace" || n == "indent" || n == "join";
}
bool is_sequence_filter(const std::string& n) {
  return n == "items" || n == "list" || n == "sort" || n == "map" || n == "reverse" || n == "sum" ||
         n == "unique";
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string strip(const std::string& s, const std::string& chars, bool left, bool right) {
  std::bitset<256> strip_it;  // one look per byte, however long `chars` is
  for (char c : chars) strip_it.set(static_cast<unsigned char>(c));
  auto stripped = [&](char c) { return strip_it.test(static_cast<unsigned char>(c)); };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && stripped(s[b])) ++b;
  }
  if (right) {
    while (e > b && stripped(s[e - 1])) --e;
  }
  return s.substr(b, e - b);
}
const std::string kWhitespace = " \t\n\r\f\v";

// s.replace(from, to, count) (all when count < 0; `from` empty leaves `s` as it is), spending
// the result's size first.
Result<std::string> replace_all(const std::string& s, const std::string& from,
                                const std::string& to, int64_t count, const CallSite& site) {
  if (from.empty()) return s;
  auto limit = static_cast<uint64_t>(count < 0 ? INT64_MAX : count);
  uint64_t n = 0;
  for (size_t pos = 0; n < limit && (pos = find_text(s, from, pos)) != std::string::npos;
       pos += from.size()) {
    ++n;
  }
  size_t size = s.size() - n * from.size();
  const size_t left = site.budget.left();
  if (size > left || (!to.empty() && n > (left - size) / to.size()))
    return site.too_large("this replace");
  size += n * to.size();
  CODEACT_TRY_STATUS(site.spend(size, "this replace"));
  std::string out;
  out.reserve(size);
  size_t done = 0;
  for (uint64_t i = 0; i < n; ++i) {
    size_t pos = find_text(s, from, done);
    out.append(s, done, pos - done);
    out += to;
    done = pos + from.size();
  }
  out.append(s, done);
  return out;
}

bool has_nan(const Json& v) {
  if (v.is_number_float()) return std::isnan(v.get<double>());
  if (v.is_array() || v.is_object()) {
    return std::any_of(v.begin(), v.end(), [](const Json& item) { return has_nan(item); });
  }
  return false;
}

Json attribute_of(const Json& v, const std::string& attr) {
  if (v.is_object() && v.contains(attr)) return v[attr];
  return nullptr;
}

bool json_less(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() < b.get<double>();
  return a < b;
}

Result<int64_t> int_arg(const Value* v, int64_t fallback, const std::string& what,
                        const CallSite& site) {
  if (v == nullptr || v->undefined || v->json.is_null()) return fallback;
  if (v->json.is_number_integer() || v->json.is_number_unsigned()) return v->json.get<int64_t>();
  if (v->json.is_boolean()) return v->json.get<bool>() ? 1 : 0;
  return site.error(what + " must be an integer, got " + type_name(v->json));
}

Result<std::string> indent_text(const std::string& s, const std::string& pad, bool first,
                                bool blank, const CallSite& site) {
  size_t lines = 1 + static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  if (!pad.empty() && lines > site.budget.left() / pad.size()) return site.too_large("this indent");
  CODEACT_TRY_STATUS(site.spend(s.size() + lines * pad.size(), "this indent"));
  std::string out;
  size_t start = 0;
  bool is_first = true;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    bool do_pad = (is_first ? first : true) && (blank || !line.empty());
    if (!is_first) out += '\n';
    out += (do_pad ? pad : "") + line;
    is_first = false;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace

Result<Value> apply_filter(const std::string& name, Value input, const Args& args,
                           const CallSite& site) {
  if (name == "default" || name == "d") {
    const Value* fallback = args.get(0, "default_value");
    const Value* boolean = args.get(1, "boolean");
    bool use_fallback = input.undefined || (boolean && !boolean->undefined &&
                                            truthy(boolean->json) && !truthy(input.json));
    if (use_fallback) return fallback ? *fallback : Value{Json(""), false, ""};
    return input;
  }
  if (input.undefined) {
    if (site.strict) return site.error(input.hint + " (filter '" + name + "')");
    if (name == "length" || name == "count") return Value{Json(0)};
    if (is_string_filter(name))
      input.json = "";
    else if (is_sequence_filter(name))
      input.json = Json::array();
    else if (name == "first" || name == "last")
      return input;
    else
      input.json = nullptr;
    input.undefined = false;
  }
  const Json& v = input.json;

  if (name == "length" || name == "count") {
    if (v.is_string()) return Value{Json(utf8_length(v.get_ref<const std::string&>()))};
    if (v.is_array() || v.is_object()) return Value{Json(v.size())};
    return site.error("object of type '" + type_name(v) + "' has no len() (filter '" + name + "')");
  }
  if (name == "join") {
    const Value* sep = args.get(0, "d");
    const Value* attr = args.get(1, "attribute");
    CODEACT_TRY(auto items, iterate(v, site));
    std::string out;
    std::string separator = sep ? str_of(*sep) : "";
    if (!separator.empty() && items.size() > site.budget.left() / separator.size())
      return site.too_large("this join");
    CODEACT_TRY_STATUS(site.spend(separator.size() * items.size(), "this join"));
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += separator;
      out += python_str(attr ? attribute_of(items[i], str_of(*attr)) : items[i]);
    }
    return Value{Json(out)};
  }
  if (name == "tojson") {
    const Value* indent = args.get(0, "indent");
    CODEACT_TRY(auto n, int_arg(indent, -1, "tojson indent", site));
    auto text = python_json_dumps(v, n, true, site.budget.left());
    if (!text) return site.too_large("filter 'tojson'");
    CODEACT_TRY_STATUS(site.spend(text->size(), "filter 'tojson'"));
    return Value{Json(std::move(*text))};
  }
  if (name == "upper") return Value{Json(upper(python_str(v)))};
  if (name == "lower") return Value{Json(lower(python_str(v)))};
  if (name == "trim") {
    const Value* chars = args.get(0, "chars");
    return Value{
        Json(strip(python_str(v), chars && !chars->json.is_null() ? str_of(*chars) : kWhitespace,
                   true, true))};
  }
  if (name == "string") return Value{Json(python_str(v))};
  if (name == "capitalize") {
    std::string s = lower(python_str(v));
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return Value{Json(s)};
  }
  if (name == "title") {
    std::string s = python_str(v);
    bool start = true;
    for (auto& c : s) {
      auto u = static_cast<unsigned char>(c);
      if (std::isalpha(u)) {
        c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
        start = false;
      } else {
        start = true;
      }
    }
    return Value{Json(s)};
  }
  if (name == "replace") {
    const Value* from = args.get(0, "old");
    const Value* to = args.get(1, "new");
    if (!from || !to) return site.error("filter 'replace' needs two arguments (old, new)");
    CODEACT_TRY(auto count, int_arg(args.get(2, "count"), -1, "replace count", site));
    CODEACT_TRY(auto text, replace_all(python_str(v), str_of(*from), str_of(*to), count, site));
    return Value{Json(std::move(text))};
  }
  if (name == "indent") {
    const Value* width = args.get(0, "width");
    std::string pad = "    ";
    if (width && width->json.is_string()) {
      pad = width->json.get<std::string>();
    } else {
      CODEACT_TRY(auto n, int_arg(width, 4, "indent width", site));
      if (n > 0) CODEACT_TRY_STATUS(site.spend(static_cast<size_t>(n), "this indent"));
      pad = std::string(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
    }
    const Value* first = args.get(1, "first");
    const Value* blank = args.get(2, "blank");
    CODEACT_TRY(auto text, indent_text(python_str(v), pad, first && truthy(first->json),
                                       blank && truthy(blank->json), site));
    return Value{Json(std::move(text))};
  }
  if (name == "items") {
    if (v.is_array() && v.empty()) return Value{Json::array()};
    if (!v.is_object()) return site.error("filter 'items' needs a dict, got " + type_name(v));
    Json out = Json::array();
    for (const auto& [k, item] : v.items()) out.push_back(Json::array({k, item}));
    return Value{out};
  }
  if (name == "list") {
    CODEACT_TRY(auto items, iterate(v, site));
    return Value{Json(items)};
  }
  if (name == "first" || name == "last") {
    CODEACT_TRY(auto items, iterate(v, site));
    if (items.empty()) return Value::undef("filter '" + name + "' of an empty sequence");
    return Value{name == "first" ? items.front() : items.back()};
  }
  if (name == "reverse") {
    if (v.is_string()) {
      CODEACT_TRY(auto chars, iterate(v, site));
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it)
        out += it->get_ref<const std::string&>();
      return Value{Json(out)};
    }
    CODEACT_TRY(auto items, iterate(v, site));
    std::reverse(items.begin(), items.end());
    return Value{Json(items)};
  }
  if (name == "sort") {
    CODEACT_TRY(auto items, iterate(v, site));
    const Value* reverse = args.get(0, "reverse");
    const Value* attr = args.get(2, "attribute");
    std::string key = attr ? str_of(*attr) : "";
    std::stable_sort(items.begin(), items.end(), [&](const Json& a, const Json& b) {
      return key.empty() ? json_less(a, b) : json_less(attribute_of(a, key), attribute_of(b, key));
    });
    if (reverse && truthy(reverse->json)) std::reverse(items.begin(), items.end());
    return Value{Json(items)};
  }
  if (name == "unique") {
    CODEACT_TRY(auto items, iterate(v, site));
    Json out = Json::array();
    // Json's < agrees with its == (1 and 1.0 are one value, as in Python), but for NaN, which
    // equals nothing: a value holding one is kept without entering the set.
    std::set<Json> seen;
    for (auto& item : items) {
      if (has_nan(item) || seen.insert(item).second) out.push_back(item);
    }
    return Value{out};
  }
  if (name == "map") {
    CODEACT_TRY(auto items, iterate(v, site));
    const Value* attr = nullptr;
    for (const auto& [k, val] : args.keyword) {
      if (k == "attribute") attr = &val;
    }
    Json out = Json::array();
    if (attr) {
      for (const auto& item : items) out.push_back(attribute_of(item, str_of(*attr)));
      return Value{out};
    }
    if (args.positional.empty())
      return site.error("filter 'map' needs a filter name or attribute=");
    std::string filter = str_of(args.positional[0]);
    // a map of maps would recurse once per argument, past what the parser's nesting limit sees
    if (filter == "map") return site.error("filter 'map' cannot apply 'map'");
    Args rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const auto& item : items) {
      CODEACT_TRY(auto mapped, apply_filter(filter, Value{item}, rest, site));
      CODEACT_TRY_STATUS(site.spend(kStepWeight + json_weight(mapped.json), "this map"));
      out.push_back(std::move(mapped.json));
    }
    return Value{out};
  }
  if (name == "sum") {
    CODEACT_TRY(auto items, iterate(v, site));
    Json total = 0;
    for (const auto& item : items) {
      if (!item.is_number())
        return site.error("filter 'sum' needs numbers, got " + type_name(item));
      if (total.is_number_integer() && item.is_number_integer()) {
        auto a = signed_int(total), b = signed_int(item);
        int64_t sum = 0;
        if (!a || !b || __builtin_add_overflow(*a, *b, &sum))
          return site.error("integer overflow in filter 'sum'");
        total = sum;
      } else
        total = total.get<double>() + item.get<double>();
    }
    return Value{total};
  }
  if (name == "min" || name == "max") {
    CODEACT_TRY(auto items, iterate(v, site));
    if (items.empty()) return Value::undef("filter '" + name + "' of an empty sequence");
    auto it = name == "min" ? std::min_element(items.begin(), items.end(), json_less)
                            : std::max_element(items.begin(), items.end(), json_less);
    return Value{*it};
  }
  if (name == "int") {
    const Value* fallback = args.get(0, "default");
    Json d = fallback ? fallback->json : Json(0);
    if (v.is_number_float()) {
      auto truncated = truncate_to_int64(v.get<double>());
      return truncated ? Value{Json(*truncated)} : Value{d};
    }
    if (v.is_number() || v.is_boolean())
      return Value{Json(v.is_boolean() ? (v.get<bool>() ? 1 : 0) : v.get<int64_t>())};
    if (v.is_string()) {
      try {
        size_t used = 0;
        std::string s = strip(v.get<std::string>(), kWhitespace, true, true);
        double parsed = std::stod(s, &used);
        auto truncated = truncate_to_int64(parsed);
        if (used == s.size() && truncated) return Value{Json(*truncated)};
      } catch (...) {
      }
    }
    return Value{d};
  }
  if (name == "float") {
    const Value* fallback = args.get(0, "default");
    Json d = fallback ? fallback->json : Json(0.0);
    if (v.is_number()) return Value{Json(v.get<double>())};
    if (v.is_string()) {
      try {
        size_t used = 0;
        std::string s = strip(v.get<std::string>(), kWhitespace, true, true);
        double parsed = std::stod(s, &used);
        if (used == s.size()) return Value{Json(parsed)};
      } catch (...) {
      }
    }
    return Value{d};
  }
  if (name == "abs") {
    if (v.is_number_unsigned()) return Value{v};
    if (v.is_number_integer()) {
      if (v.get<int64_t>() == INT64_MIN) return site.error("integer overflow in filter 'abs'");
      return Value{Json(std::abs(v.get<int64_t>()))};
    }
    if (v.is_number()) return Value{Json(std::fabs(v.get<double>()))};
    return site.error("filter 'abs' needs a number, got " + type_name(v));
  }
  if (name == "round") {
    if (!v.is_number()) return site.error("filter 'round' needs a number, got " + type_name(v));
    CODEACT_TRY(auto precision, int_arg(args.get(0, "precision"), 0, "round precision", site));
    const Value* method = args.get(1, "method");
    std::string m = method ? str_of(*method) : "common";
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = v.get<double>() * scale;
    double r = m == "floor" ? std::floor(x) : m == "ceil" ? std::ceil(x) : std::round(x);
    return Value{Json(r / scale)};
  }
  return site.error("unknown filter '" + name + "'");
}

Result<bool> apply_test(const std::string& name, const Value& input, const Args& args,
                        const CallSite& site) {
  if (name == "defined") return !input.undefined;
  if (name == "undefined") return input.undefined;
  if (input.undefined) {
    if (site.strict) return site.error(input.hint + " (test '" + name + "')");
    return false;
  }
  const Json& v = input.json;
  const Value* arg = args.get(0, "value");
  auto need_arg = [&]() -> Status {
    if (!arg) return site.error("test '" + name + "' needs an argument");
    return ok_status();
  };
  if (name == "none") return v.is_null();
  if (name == "boolean") return v.is_boolean();
  if (name == "true") return v.is_boolean() && v.get<bool>();
  if (name == "false") return v.is_boolean() && !v.get<bool>();
  if (name == "integer") return v.is_number_integer() || v.is_number_unsigned();
  if (name == "float") return v.is_number_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_object();
  if (name == "sequence") return v.is_array() || v.is_string() || v.is_object();
  if (name == "iterable") return v.is_array() || v.is_string() || v.is_object();
  if (name == "lower") return v.is_string() && lower(v.get<std::string>()) == v.get<std::string>();
  if (name == "upper") return v.is_string() && upper(v.get<std::string>()) == v.get<std::string>();
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (!v.is_number_integer() && !v.is_number_unsigned()) {
      return site.error("test '" + name + "' needs an integer, got " + type_name(v));
    }
    int64_t n = v.get<int64_t>();
    if (name == "even") return n % 2 == 0;
    if (name == "odd") return n % 2 != 0;
    CODEACT_TRY_STATUS(need_arg());
    CODEACT_TRY(auto d, int_arg(arg, 1, "divisibleby argument", site));
    if (d == 0) return site.error("test 'divisibleby' with 0");
    return d == -1 || n % d == 0;  // INT64_MIN % -1 would trap
  }
  if (name == "eq" || name == "equalto" || name == "==" || name == "sameas") {
    CODEACT_TRY_STATUS(need_arg());
    return !arg->undefined && v == arg->json;
  }
  if (name == "ne" || name == "!=") {
    CODEACT_TRY_STATUS(need_arg());
    return arg->undefined || v != arg->json;
  }
  if (name == "lt" || name == "<" || name == "gt" || name == ">" || name == "le" || name == "ge") {
    CODEACT_TRY_STATUS(need_arg());
    const Json& o = arg->json;
    if (name == "lt" || name == "<") return json_less(v, o);
    if (name == "gt" || name == ">") return json_less(o, v);
    if (name == "le") return !json_less(o, v);
    return !json_less(v, o);
  }
  if (name == "in") {
    CODEACT_TRY_STATUS(need_arg());
    const Json& c = arg->json;
    if (c.is_string())
      return v.is_string() && find_text(c.get_ref<const std::string&>(),
                                        v.get_ref<const std::string&>()) != std::string::npos;
    if (c.is_array()) return std::find(c.begin(), c.end(), v) != c.end();
    if (c.is_object()) return v.is_string() && c.contains(v.get<std::string>());
    return false;
  }
  return site.error("unknown test '" + name + "'");
}

Result<Value> call_method(const Value& self, const std::string& name, const Args& args,
                          const CallSite& site) {
  if (self.undefined) {
    if (site.strict) return site.error(self.hint + " (method '" + name + "')");
    return Value::undef(self.hint);
  }
  const Json& v = self.json;
  if (v.is_object()) {
    if (name == "items") return apply_filter("items", self, args, site);
    if (name == "keys" || name == "values") {
      Json out = Json::array();
      for (const auto& [k, item] : v.items()) out.push_back(name == "keys" ? Json(k) : item);
      return Value{out};
    }
    if (name == "get") {
      const Value* key = args.get(0, "key");
      const Value* fallback = args.get(1, "default");
      if (!key) return site.error("dict.get needs a key");
      if (key->json.is_string() && v.contains(key->json.get<std::string>())) {
        return Value{v[key->json.get<std::string>()]};
      }
      return fallback ? *fallback : Value{Json(nullptr)};
    }
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    const Value* a0 = args.get(0, "");
    if (name == "upper") return Value{Json(upper(s))};
    if (name == "lower") return Value{Json(lower(s))};
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      std::string chars = a0 && !a0->json.is_null() ? str_of(*a0) : kWhitespace;
      return Value{Json(strip(s, chars, name != "rstrip", name != "lstrip"))};
    }
    if (name == "startswith" || name == "endswith") {
      if (!a0) return site.error("str." + name + " needs an argument");
      std::string p = str_of(*a0);
      bool r = p.size() <= s.size() &&
               (name == "startswith" ? s.compare(0, p.size(), p) == 0
                                     : s.compare(s.size() - p.size(), p.size(), p) == 0);
      return Value{Json(r)};
    }
    if (name == "replace") {
      const Value* a1 = args.get(1, "");
      if (!a0 || !a1) return site.error("str.replace needs two arguments");
      CODEACT_TRY(auto text, replace_all(s, str_of(*a0), str_of(*a1), -1, site));
      return Value{Json(std::move(text))};
    }
    if (name == "split") {
      Json out = Json::array();
      if (!a0 || a0->json.is_null()) {
        size_t i = 0;
        while (i < s.size()) {
          while (i < s.size() && kWhitespace.find(s[i]) != std::string::npos) ++i;
          size_t j = i;
          while (j < s.size() && kWhitespace.find(s[j]) == std::string::npos) ++j;
          if (j > i) {
            CODEACT_TRY_STATUS(site.spend(sizeof(Json) + (j - i), "this split"));
            out.push_back(s.substr(i, j - i));
          }
          i = j;
        }
        return Value{out};
      }
      std::string sep = str_of(*a0);
      if (sep.empty()) return site.error("str.split: empty separator");
      size_t start = 0, pos;
      while ((pos = find_text(s, sep, start)) != std::string::npos) {
        CODEACT_TRY_STATUS(site.spend(sizeof(Json) + (pos - start), "this split"));
        out.push_back(s.substr(start, pos - start));
        start = pos + sep.size();
      }
      out.push_back(s.substr(start));
      return Value{out};
    }
    if (name == "join") {
      if (!a0) return site.error("str.join needs an iterable");
      return apply_filter("join", *a0, Args{{self}, {}}, site);
    }
    if (name == "title" || name == "capitalize") return apply_filter(name, self, {}, site);
  }
  return site.error("'" + type_name(v) + "' object has no method '" + name + "'");
}

}  // namespace codeact::core::template_internal
