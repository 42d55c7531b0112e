// Python semantics of template values: str()/repr() printing, truthiness, type names and
// json.dumps, so prompts render the same text jinja2 would.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "codeact/core/strings.hpp"
#include "template_internal.hpp"

namespace codeact::core {
namespace {

std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    // Python's repr switches to exponent notation below 1e-4 and from 1e16.
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." +
            digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return (negative ? "-" : "") + out;
  }
  out = digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return (negative ? "-" : "") + out + exp_buf;
}

// Decodes one UTF-8 code point at s[i]; advances i. Invalid bytes decode as U+FFFD.
uint32_t decode_utf8(const std::string& s, size_t& i) {
  auto b = static_cast<unsigned char>(s[i]);
  int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || i + static_cast<size_t>(len) > s.size()) {
    ++i;
    return 0xfffd;
  }
  uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
  for (int k = 1; k < len; ++k) {
    auto c = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    if ((c & 0xc0) != 0x80) {
      ++i;
      return 0xfffd;
    }
    cp = (cp << 6) | (c & 0x3f);
  }
  i += static_cast<size_t>(len);
  return cp;
}

void json_string(std::string& out, const std::string& s, bool html_safe) {
  out += '"';
  size_t i = 0;
  char buf[16];
  while (i < s.size()) {
    uint32_t cp = decode_utf8(s, i);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    bool escape = cp < 0x20 || cp > 0x7e ||
                  (html_safe && (cp == '<' || cp == '>' || cp == '&' || cp == '\''));
    if (!escape) {
      out += static_cast<char>(cp);
    } else if (cp > 0xffff) {
      uint32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
      out += buf;
    } else {
      std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      out += buf;
    }
  }
  out += '"';
}

// Appends `v` as json.dumps prints it; false as soon as `out` would be longer than `max_size`
// (then `out` holds part of it).
bool json_dump(std::string& out, const Json& v, int64_t indent, int64_t depth, bool html_safe,
               size_t max_size) {
  auto newline = [&](int64_t d) {
    int64_t pad = 0;
    if (__builtin_mul_overflow(indent, d, &pad) || static_cast<uint64_t>(pad) >= max_size ||
        out.size() + 1 + static_cast<size_t>(pad) > max_size)
      return false;
    out += '\n';
    out.append(static_cast<size_t>(pad), ' ');
    return true;
  };
  switch (v.type()) {
    case Json::value_t::null:
      out += "null";
      break;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case Json::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      break;
    case Json::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      break;
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d < 0 ? "-Infinity" : "Infinity";
      else
        out += python_float(d);
      break;
    }
    case Json::value_t::string:
      json_string(out, v.get_ref<const std::string&>(), html_safe);
      break;
    case Json::value_t::array:
    case Json::value_t::object: {
      const bool array = v.is_array();
      if (v.empty()) {
        out += array ? "[]" : "{}";
        break;
      }
      out += array ? '[' : '{';
      bool first = true;
      auto member = [&](const std::string* key, const Json& item) {
        if (!first) out += indent >= 0 ? "," : ", ";
        first = false;
        if (indent >= 0 && !newline(depth + 1)) return false;
        if (key) {
          json_string(out, *key, html_safe);
          out += ": ";
        }
        return json_dump(out, item, indent, depth + 1, html_safe, max_size);
      };
      if (array) {
        for (const auto& item : v) {
          if (!member(nullptr, item)) return false;
        }
      } else {
        for (const auto& [key, item] : v.items()) {  // nlohmann objects iterate in key order
          if (!member(&key, item)) return false;
        }
      }
      if (indent >= 0 && !newline(depth)) return false;
      out += array ? ']' : '}';
      break;
    }
    default:
      out += "null";
      break;
  }
  return out.size() <= max_size;
}

}  // namespace

std::string python_repr(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "None";
    case Json::value_t::boolean:
      return value.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer:
      return std::to_string(value.get<int64_t>());
    case Json::value_t::number_unsigned:
      return std::to_string(value.get<uint64_t>());
    case Json::value_t::number_float:
      return python_float(value.get<double>());
    case Json::value_t::string:
      return python_repr_string(value.get_ref<const std::string&>());
    case Json::value_t::array: {
      std::vector<std::string> items;
      for (const auto& item : value) items.push_back(python_repr(item));
      return "[" + join(items, ", ") + "]";
    }
    case Json::value_t::object: {
      std::vector<std::string> items;
      for (const auto& [key, item] : value.items())
        items.push_back(python_repr_string(key) + ": " + python_repr(item));
      return "{" + join(items, ", ") + "}";
    }
    default:
      return "None";
  }
}

std::string python_str(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  return python_repr(value);
}

namespace template_internal {

std::optional<int64_t> parse_int64(std::string_view digits) {
  int64_t value = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::optional<int64_t> signed_int(const Json& integer) {
  if (integer.is_number_unsigned()) {
    auto u = integer.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  return integer.get<int64_t>();
}

std::optional<int64_t> truncate_to_int64(double d) {
  double t = std::trunc(d);  // NaN stays NaN and fails the comparison below
  if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) return std::nullopt;
  return static_cast<int64_t>(t);
}

const Value* Args::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

bool truthy(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return false;
    case Json::value_t::boolean:
      return v.get<bool>();
    case Json::value_t::number_integer:
      return v.get<int64_t>() != 0;
    case Json::value_t::number_unsigned:
      return v.get<uint64_t>() != 0;
    case Json::value_t::number_float:
      return v.get<double>() != 0;
    case Json::value_t::string:
      return !v.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object:
      return !v.empty();
    default:
      return false;
  }
}

std::string type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "NoneType";
    case Json::value_t::boolean:
      return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "int";
    case Json::value_t::number_float:
      return "float";
    case Json::value_t::string:
      return "str";
    case Json::value_t::array:
      return "list";
    case Json::value_t::object:
      return "dict";
    default:
      return "object";
  }
}

std::optional<std::string> python_json_dumps(const Json& value, int64_t indent, bool html_safe,
                                             size_t max_size) {
  std::string out;
  if (!json_dump(out, value, indent, 0, html_safe, max_size)) return std::nullopt;
  return out;
}

Status CallSite::spend(size_t bytes, std::string_view what) const {
  if (budget.spend(bytes)) return ok_status();
  return too_large(what);
}

Error CallSite::too_large(std::string_view what) const {
  return error(std::string(what) + " would take this render past " +
               byte_size_text(static_cast<int64_t>(budget.total())) +
               ", the most one render may make (does a loop or a filter grow without bound?)");
}

std::string short_repr(const Json& value) {
  constexpr size_t kMax = 100;
  if (value.is_string() && value.get_ref<const std::string&>().size() > kMax) {
    auto chars = utf8_chars(value.get_ref<const std::string&>().substr(0, kMax));
    chars.pop_back();  // may be a code point cut in two
    std::string head;
    for (const auto& c : chars) head += c;
    return python_repr(Json(head)) + "...";
  }
  if ((value.is_array() || value.is_object()) && json_weight(value) > 4 * kMax) {
    return std::string(value.is_array() ? "[...]" : "{...}") + " (" + type_name(value) + " of " +
           std::to_string(value.size()) + ")";
  }
  return python_repr(value);
}

size_t json_weight(const Json& value) {
  constexpr size_t kNode = sizeof(Json);
  switch (value.type()) {
    case Json::value_t::string:
      return kNode + value.get_ref<const std::string&>().size();
    case Json::value_t::array: {
      size_t total = kNode;
      for (const auto& item : value) total += json_weight(item);
      return total;
    }
    case Json::value_t::object: {
      size_t total = kNode;
      for (const auto& [key, item] : value.items()) total += kNode + key.size() + json_weight(item);
      return total;
    }
    default:
      return kNode;
  }
}

size_t find_text(std::string_view s, std::string_view part, size_t from) {
  if (from > s.size()) return std::string::npos;
  if (part.empty()) return from;
  const void* at = ::memmem(s.data() + from, s.size() - from, part.data(), part.size());
  return at == nullptr ? std::string::npos
                       : static_cast<size_t>(static_cast<const char*>(at) - s.data());
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) decode_utf8(s, i);
  return n;
}

std::optional<std::string> utf8_char_at(const std::string& s, int64_t index) {
  if (index < 0) index += static_cast<int64_t>(utf8_length(s));
  if (index < 0) return std::nullopt;
  size_t i = 0;
  for (int64_t n = 0; i < s.size(); ++n) {
    size_t start = i;
    decode_utf8(s, i);
    if (n == index) return s.substr(start, i - start);
  }
  return std::nullopt;
}

Result<std::vector<Json>> iterate(const Json& v, const CallSite& site) {
  std::vector<Json> out;
  if (v.is_array()) {
    out.assign(v.begin(), v.end());
  } else if (v.is_object()) {
    for (const auto& [k, _] : v.items()) out.emplace_back(k);  // a dict iterates its keys
  } else if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    constexpr size_t kPerCharacter = sizeof(Json) + sizeof(std::string) + 16;  // + malloc's own
    CODEACT_TRY_STATUS(site.spend(s.size() * kPerCharacter, "splitting this string"));
    for (auto& c : utf8_chars(s)) out.emplace_back(std::move(c));
  } else {
    return site.error("'" + type_name(v) + "' object is not iterable");
  }
  return out;
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    decode_utf8(s, i);
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

}  // namespace template_internal
}  // namespace codeact::core
