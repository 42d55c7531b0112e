#include "codeact/core/config.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codeact/core/strings.hpp"

namespace codeact::core {
namespace {

bool looks_like_int(const std::string& s) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// How much of a document to_json may build. Aliases share nodes in yaml-cpp's tree but become
// copies in Json: an alias to an enclosing node is a cycle, and aliases of aliases grow
// exponentially ("billion laughs"); both must end in an error, not a crash or all memory.
struct YamlBudget {
  const std::string& what;
  size_t nodes_left = 100'000;
};

Result<Json> to_json(const YAML::Node& node, YamlBudget& budget, int depth = 0) {
  if (depth > kMaxJsonDepth) {
    return invalid_argument(
        fmt::format("{} is nested more than {} levels deep (an alias inside the node it names?)",
                    budget.what, kMaxJsonDepth));
  }
  if (budget.nodes_left-- == 0) {
    return invalid_argument(
        fmt::format("{} expands to more than 100000 values (aliases of aliases?)", budget.what));
  }
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return Json(nullptr);
    case YAML::NodeType::Sequence: {
      Json arr = Json::array();
      for (const auto& item : node) {
        CODEACT_TRY(auto v, to_json(item, budget, depth + 1));
        arr.push_back(std::move(v));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      Json obj = Json::object();
      for (const auto& kv : node) {
        CODEACT_TRY(auto v, to_json(kv.second, budget, depth + 1));
        obj[kv.first.as<std::string>()] = std::move(v);
      }
      return obj;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return Json(s);  // quoted scalar: stays a string
      if (s == "~" || s == "null" || s == "Null" || s == "NULL") return Json(nullptr);
      if (s == "true" || s == "True" || s == "TRUE") return Json(true);
      if (s == "false" || s == "False" || s == "FALSE") return Json(false);
      if (looks_like_int(s)) {
        try {
          return Json(std::stoll(s));
        } catch (...) {
          return Json(s);
        }
      }
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size() &&
          (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.'))
        return Json(d);
      return Json(s);
    }
  }
  return Json(nullptr);
}

Result<Json> interpolate(const Json& value, const EnvLookup& env, const std::string& path) {
  if (value.is_string()) {
    CODEACT_TRY(auto s, interpolate_string(value.get<std::string>(), env, path));
    return Json(std::move(s));
  }
  if (value.is_object()) {
    Json out = Json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      CODEACT_TRY(auto v,
                  interpolate(it.value(), env, path.empty() ? it.key() : path + "." + it.key()));
      out[it.key()] = std::move(v);
    }
    return out;
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (size_t i = 0; i < value.size(); ++i) {
      CODEACT_TRY(auto v, interpolate(value[i], env, fmt::format("{}[{}]", path, i)));
      out.push_back(std::move(v));
    }
    return out;
  }
  return value;
}

bool file_exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::optional<std::string> getenv_string(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

Result<Json> parse_yaml(const std::string& text, const std::string& what) {
  try {
    YAML::Node root = YAML::Load(text);
    YamlBudget budget{what};
    return to_json(root, budget);
  } catch (const YAML::Exception& e) {
    return invalid_argument(fmt::format("{} is not valid YAML (line {}, column {}): {}", what,
                                        e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

Result<Json> load_yaml_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_yaml(ss.str(), path);
}

Result<std::string> interpolate_string(const std::string& text, const EnvLookup& env,
                                       const std::string& where) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '$' || i + 1 >= text.size()) {
      out.push_back(c);
      continue;
    }
    if (text[i + 1] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    if (text[i + 1] != '{') {
      out.push_back(c);
      continue;
    }
    size_t close = text.find('}', i + 2);
    if (close == std::string::npos) {
      return invalid_argument(fmt::format("unterminated ${{...}} in {}{}",
                                          where.empty() ? "value" : where,
                                          where.empty() ? "" : " (config key)"));
    }
    std::string expr = text.substr(i + 2, close - i - 2);
    std::string name = expr;
    std::optional<std::string> fallback;
    if (auto d = expr.find(":-"); d != std::string::npos) {
      name = expr.substr(0, d);
      fallback = expr.substr(d + 2);
    }
    auto v = env(name);
    if (v && !(v->empty() && fallback)) {
      out += *v;
    } else if (fallback) {
      out += *fallback;
    } else {
      return invalid_argument(
          fmt::format("environment variable {} is not set (used by {}); set it or write "
                      "${{{}:-default}}",
                      name, where.empty() ? "a config value" : where, name));
    }
    i = close;
  }
  return out;
}

Result<Json> interpolate_env(const Json& value, const EnvLookup& env) {
  return interpolate(value, env, "");
}

Result<std::string> find_config_file(const std::string& file_name, const std::string& env_var,
                                     const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (file_exists(explicit_path)) return explicit_path;
    return not_found(fmt::format("config file {} does not exist", explicit_path));
  }
  std::vector<std::string> tried;
  if (auto v = getenv_string(env_var); v && !v->empty()) {
    if (file_exists(*v)) return *v;
    return not_found(fmt::format("{}={} points to a file that does not exist", env_var, *v));
  }
  tried.push_back("$" + env_var + " (unset)");
  std::vector<std::string> candidates = {"./" + file_name};
  if (auto home = getenv_string("HOME"))
    candidates.push_back(*home + "/.config/codeact/" + file_name);
  candidates.push_back("/etc/codeact/" + file_name);
  for (const auto& c : candidates) {
    if (file_exists(c)) return c;
    tried.push_back(c);
  }
  return not_found(fmt::format("no {} found; looked at: {}", file_name, join(tried, ", ")));
}

std::string data_dir() {
  std::string dir;
  if (auto v = getenv_string("CODEACT_HOME"); v && !v->empty()) {
    dir = *v;
  } else if (auto x = getenv_string("XDG_DATA_HOME"); x && !x->empty()) {
    dir = *x + "/codeact";
  } else {
    dir = getenv_string("HOME").value_or("/tmp") + "/.local/share/codeact";
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return dir;
}

}  // namespace codeact::core
