// AppConfig: app_conf.yml, the seed's application config — temporal.url, temporal.namespace,
// llm.<provider>.{api_key, model_name, ...} and mcp_servers (which the mcp module interprets) —
// with every string ${VAR} / ${VAR:-default} interpolated from the environment. An empty
// llm.<provider>.api_key falls back to the <PROVIDER>_API_KEY environment variable.
//
// Search order (find_config_file, config.hpp): the explicit path, then $APP_CONFIG_PATH,
// ./app_conf.yml, ~/.config/codeact/app_conf.yml, /etc/codeact/app_conf.yml.
//
// Plain data, immutable once loaded; thread-safe to read.
#pragma once

#include <cctype>
#include <map>
#include <string>

#include "codeact/core/config.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::core {

inline constexpr const char* kConfigFileName = "app_conf.yml";
inline constexpr const char* kConfigPathEnv = "APP_CONFIG_PATH";

struct LlmProviderConfig {
  std::string name;  // the key under llm: ("gemini", "openai", ...)
  std::string api_key;
  std::string model_name;
  Json settings = Json::object();  // every other key under llm.<name> (base_url, temperature, ...)
};

struct AppConfig {
  std::string source;        // the file it came from ("" when built from JSON)
  std::string temporal_url;  // "" = not configured (codeact starts an embedded server)
  std::string temporal_namespace = "default";
  std::map<std::string, LlmProviderConfig> llm;
  Json mcp_servers = Json::object();  // kept as written; the mcp module interprets it
  Json raw = Json::object();          // the whole interpolated document

  // Finds and loads app_conf.yml (search order above), interpolating ${VAR}.
  static Result<AppConfig> load(const std::string& explicit_path = "",
                                const EnvLookup& env = getenv_string);
  // From a parsed document (interpolated here).
  static Result<AppConfig> from_json(const Json& document, const std::string& source = "",
                                     const EnvLookup& env = getenv_string);

  // The provider's config; NotFound naming the configured providers.
  Result<LlmProviderConfig> provider(const std::string& name) const;
};

inline Result<AppConfig> AppConfig::load(const std::string& explicit_path, const EnvLookup& env) {
  CODEACT_TRY(auto path, find_config_file(kConfigFileName, kConfigPathEnv, explicit_path));
  CODEACT_TRY(auto doc, load_yaml_file(path));
  auto config = from_json(doc, path, env);
  if (!config.ok()) return std::move(config).error().with_context(path);
  return config;
}

inline Result<AppConfig> AppConfig::from_json(const Json& document, const std::string& source,
                                              const EnvLookup& env) {
  AppConfig c;
  c.source = source;
  if (document.is_null()) return c;
  if (!document.is_object())
    return invalid_argument("app config: expected a mapping at the top level");
  CODEACT_TRY(c.raw, interpolate_env(document, env));
  if (c.raw.contains("temporal")) {
    const Json& t = c.raw["temporal"];
    if (!t.is_object())
      return invalid_argument("app config: temporal must be a mapping (url, namespace)");
    c.temporal_url = json_string(t, "url");
    c.temporal_namespace = json_string(t, "namespace", "default");
    if (c.temporal_namespace.empty()) c.temporal_namespace = "default";
  }
  if (c.raw.contains("llm")) {
    const Json& llm = c.raw["llm"];
    if (!llm.is_object())
      return invalid_argument("app config: llm must be a mapping of provider -> settings");
    for (const auto& [name, p] : llm.items()) {
      if (!p.is_object()) return invalid_argument("app config: llm." + name + " must be a mapping");
      LlmProviderConfig pc;
      pc.name = name;
      pc.api_key = json_string(p, "api_key");
      pc.model_name = json_string(p, "model_name");
      for (const auto& [k, v] : p.items()) {
        if (k != "api_key" && k != "model_name") pc.settings[k] = v;
      }
      if (pc.api_key.empty()) {
        std::string var;
        for (char ch : name)
          var += std::isalnum(static_cast<unsigned char>(ch))
                     ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch)))
                     : '_';
        if (auto key = env(var + "_API_KEY")) pc.api_key = *key;
      }
      c.llm[name] = std::move(pc);
    }
  }
  if (c.raw.contains("mcp_servers")) c.mcp_servers = c.raw["mcp_servers"];
  return c;
}

inline Result<LlmProviderConfig> AppConfig::provider(const std::string& name) const {
  auto it = llm.find(name);
  if (it != llm.end()) return it->second;
  std::string names;
  for (const auto& [k, _] : llm) names += (names.empty() ? "" : ", ") + k;
  return not_found(
      "no llm." + name + " in " + (source.empty() ? std::string("the app config") : source) +
      " (configured providers: " + (names.empty() ? std::string("none") : names) + ")");
}

}  // namespace codeact::core
