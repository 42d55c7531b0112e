// Fuzzes reading app_conf.yml: YAML into Json (core::parse_yaml), ${VAR} / ${VAR:-default}
// interpolation (core::interpolate_env, core::interpolate_string) and what is read out of the
// document (core::AppConfig, mcp::parse_mcp_servers) with a fixed environment.
#include <map>

#include "codeact/core/app_config.hpp"
#include "codeact/core/config.hpp"
#include "codeact/mcp/server_config.hpp"
#include "fuzz_input.hpp"

namespace {

std::optional<std::string> fake_env(const std::string& name) {
  static const std::map<std::string, std::string> env = {
      {"HOME", "/home/ada"}, {"OPENAI_API_KEY", "sk-test"}, {"TEMPORAL_URL", "localhost:7233"},
      {"EMPTY", ""},         {"DOLLAR", "$HOME"},           {"BRACES", "${HOME}"}};
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(codeact::fuzz::as_text(data, size));
  (void)codeact::core::interpolate_string(text, fake_env, "fuzz");
  auto doc = codeact::core::parse_yaml(text, "app_conf.yml");
  if (!doc.ok()) return 0;
  (void)codeact::core::interpolate_env(*doc, fake_env);
  auto config = codeact::core::AppConfig::from_json(*doc, "app_conf.yml", fake_env);
  if (config.ok()) {
    for (const auto& [name, _] : config->llm) (void)config->provider(name);
    (void)config->provider("missing");
  }
  auto servers = codeact::mcp::parse_mcp_servers(*doc, fake_env);
  if (servers.ok()) {
    for (const auto& entry : *servers) {
      if (!entry.config.ok()) continue;
      (void)entry.config->to_json(true);
      (void)entry.config->describe();
    }
  }
  return 0;
}
