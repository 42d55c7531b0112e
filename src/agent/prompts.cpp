// agent_prompts.yml and app_conf.yml: loading, template parsing and rendering, interpolation.
#include "codeact/agent/prompts.hpp"

#include <cctype>

namespace codeact::agent {

using core::Result;

Json PromptVariables::to_json() const {
  Json vars = Json::object();
  for (const auto& [k, v] : sandbox_variable_names) vars[k] = v;
  Json out{{"container_id", container_id},   {"python_packages", python_packages},
           {"system_packages", system_packages}, {"sandbox_variable_names", vars},
           {"sandbox_files", sandbox_files},   {"tools_as_func", tools_as_func}};
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) out[k] = v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// PromptBook

Result<PromptBook> PromptBook::load(const std::string& explicit_path, core::TemplateOptions options) {
  CODEACT_TRY(auto path, core::find_config_file(kPromptsFileName, kPromptsPathEnv, explicit_path));
  CODEACT_TRY(auto doc, core::load_yaml_file(path));
  return from_json(doc, path, options);
}

Result<PromptBook> PromptBook::parse(const std::string& yaml_text, const std::string& source,
                                     core::TemplateOptions options) {
  CODEACT_TRY(auto doc, core::parse_yaml(yaml_text, source));
  return from_json(doc, source, options);
}

Result<PromptBook> PromptBook::from_json(const Json& document, const std::string& source,
                                         core::TemplateOptions options) {
  if (document.is_null()) return core::invalid_argument(source + ": the prompts file is empty");
  if (!document.is_object()) {
    return core::invalid_argument(source + ": expected a mapping of agent name -> {system_prompt, instructions}");
  }
  PromptBook book;
  book.source_ = source;
  for (const auto& [agent, entry] : document.items()) {
    if (!entry.is_object()) {
      return core::invalid_argument(source + ": agent '" + agent + "' must be a mapping with system_prompt and instructions");
    }
    std::string texts[2];
    const char* keys[2] = {"system_prompt", "instructions"};
    for (int i = 0; i < 2; ++i) {
      auto it = entry.find(keys[i]);
      if (it == entry.end() || it->is_null()) continue;
      if (!it->is_string()) return core::invalid_argument(source + ": " + agent + "." + keys[i] + " must be a string");
      texts[i] = it->get<std::string>();
    }
    CODEACT_TRY(auto sys, core::Template::parse(texts[0], source + ":" + agent + ".system_prompt", options));
    CODEACT_TRY(auto ins, core::Template::parse(texts[1], source + ":" + agent + ".instructions", options));
    book.prompts_[agent] = std::make_shared<const AgentPrompt>(AgentPrompt{agent, texts[0], texts[1], sys, ins});
  }
  return book;
}

Result<std::shared_ptr<const AgentPrompt>> PromptBook::get(const std::string& agent_name) const {
  auto it = prompts_.find(agent_name);
  if (it != prompts_.end()) return it->second;
  std::string names;
  for (const auto& [k, _] : prompts_) names += (names.empty() ? "" : ", ") + k;
  return core::not_found(source_ + " has no prompts for agent '" + agent_name + "' (it has: " +
                         (names.empty() ? std::string("none") : names) + ")");
}

std::vector<std::string> PromptBook::agent_names() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : prompts_) out.push_back(k);
  return out;
}

Result<std::string> PromptBook::render_system_prompt(const std::string& agent_name, const Json& variables) const {
  CODEACT_TRY(auto p, get(agent_name));
  return p->system_prompt.render(variables);
}

Result<std::string> PromptBook::render_instructions(const std::string& agent_name, const Json& variables) const {
  CODEACT_TRY(auto p, get(agent_name));
  return p->instructions.render(variables);
}

// ---------------------------------------------------------------------------------------------
// AppConfig

Result<AppConfig> AppConfig::load(const std::string& explicit_path, const core::EnvLookup& env) {
  CODEACT_TRY(auto path, core::find_config_file(kConfigFileName, kConfigPathEnv, explicit_path));
  CODEACT_TRY(auto doc, core::load_yaml_file(path));
  auto config = from_json(doc, path, env);
  if (!config.ok()) return std::move(config).error().with_context(path);
  return config;
}

Result<AppConfig> AppConfig::from_json(const Json& document, const std::string& source, const core::EnvLookup& env) {
  AppConfig c;
  c.source = source;
  if (document.is_null()) return c;
  if (!document.is_object()) return core::invalid_argument("app config: expected a mapping at the top level");
  CODEACT_TRY(c.raw, core::interpolate_env(document, env));
  if (c.raw.contains("temporal")) {
    const Json& t = c.raw["temporal"];
    if (!t.is_object()) return core::invalid_argument("app config: temporal must be a mapping (url, namespace)");
    c.temporal_url = core::json_string(t, "url");
    c.temporal_namespace = core::json_string(t, "namespace", "default");
    if (c.temporal_namespace.empty()) c.temporal_namespace = "default";
  }
  if (c.raw.contains("llm")) {
    const Json& llm = c.raw["llm"];
    if (!llm.is_object()) return core::invalid_argument("app config: llm must be a mapping of provider -> settings");
    for (const auto& [name, p] : llm.items()) {
      if (!p.is_object()) return core::invalid_argument("app config: llm." + name + " must be a mapping");
      LlmProviderConfig pc;
      pc.name = name;
      pc.api_key = core::json_string(p, "api_key");
      pc.model_name = core::json_string(p, "model_name");
      for (const auto& [k, v] : p.items()) {
        if (k != "api_key" && k != "model_name") pc.settings[k] = v;
      }
      if (pc.api_key.empty()) {
        std::string var;
        for (char ch : name) var += std::isalnum(static_cast<unsigned char>(ch)) ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : '_';
        if (auto key = env(var + "_API_KEY")) pc.api_key = *key;
      }
      c.llm[name] = std::move(pc);
    }
  }
  if (c.raw.contains("mcp_servers")) c.mcp_servers = c.raw["mcp_servers"];
  return c;
}

Result<LlmProviderConfig> AppConfig::provider(const std::string& name) const {
  auto it = llm.find(name);
  if (it != llm.end()) return it->second;
  std::string names;
  for (const auto& [k, _] : llm) names += (names.empty() ? "" : ", ") + k;
  return core::not_found("no llm." + name + " in " + (source.empty() ? std::string("the app config") : source) +
                         " (configured providers: " + (names.empty() ? std::string("none") : names) + ")");
}

}  // namespace codeact::agent
