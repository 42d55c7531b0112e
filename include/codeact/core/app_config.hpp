// AppConfig: app_conf.yml, the seed's application config — temporal.url, temporal.namespace,
// temporal.tls* and temporal.api_key, llm.<provider>.{api_key, model_name, ...} and mcp_servers
// (which the mcp module interprets) —
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
#include <optional>
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

// temporal.tls, .tls_ca_file, .tls_cert_file, .tls_key_file, .tls_server_name, .api_key: how a
// configured Temporal cluster is reached (docs/deploy.md). The embedded dev server is always
// plain. Kept as written: durable::load_temporal_credentials reads the files and checks that
// they go together, when something connects.
struct TemporalTlsConfig {
  // true, false, or unset (absent or "") = on when any key below is set, as the `temporal` CLI
  // does. false with an API key sends the key in clear (to a plaintext proxy on loopback, say).
  std::optional<bool> tls;
  std::string ca_file;      // PEM roots the server's certificate must chain to; "" = gRPC's
  std::string cert_file;    // mTLS: this client's certificate chain (PEM), with key_file
  std::string key_file;     // mTLS: its private key (PEM)
  std::string server_name;  // the name the server's certificate must carry; "" = the host
  std::string api_key;      // sent as `authorization: Bearer <key>`; "" = none

  bool uses_tls() const {
    if (tls) return *tls;
    return !ca_file.empty() || !cert_file.empty() || !key_file.empty() || !server_name.empty() ||
           !api_key.empty();
  }
  bool empty() const { return !tls && !uses_tls(); }
};

struct AppConfig {
  std::string source;        // the file it came from ("" when built from JSON)
  std::string temporal_url;  // "" = not configured (codeact starts an embedded server)
  std::string temporal_namespace = "default";
  TemporalTlsConfig temporal_tls;
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
    if (t.contains("tls")) {
      const Json& v = t["tls"];
      std::string word = v.is_string() ? v.get<std::string>() : "";
      for (char& ch : word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (v.is_boolean()) {
        c.temporal_tls.tls = v.get<bool>();
      } else if (word == "true" || word == "1" || word == "yes" || word == "on") {
        c.temporal_tls.tls = true;
      } else if (word == "false" || word == "0" || word == "no" || word == "off") {
        c.temporal_tls.tls = false;
      } else if (!(v.is_null() || (v.is_string() && word.empty()))) {
        return invalid_argument(
            "app config: temporal.tls (TEMPORAL_TLS) must be true or false, not " + v.dump());
      }
    }
    c.temporal_tls.ca_file = json_string(t, "tls_ca_file");
    c.temporal_tls.cert_file = json_string(t, "tls_cert_file");
    c.temporal_tls.key_file = json_string(t, "tls_key_file");
    c.temporal_tls.server_name = json_string(t, "tls_server_name");
    c.temporal_tls.api_key = json_string(t, "api_key");
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
