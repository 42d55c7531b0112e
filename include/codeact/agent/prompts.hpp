// Prompts and application config: `agent_prompts.yml` and `app_conf.yml`, the seed's two files,
// with its search order and the template variables it documents.
//
// agent_prompts.yml maps an agent name to {system_prompt, instructions}; both are Jinja templates
// (core/template.hpp, docs/templates.md), parsed when the file is loaded so a syntax error is
// reported at startup with the agent, field, line and column. They are rendered with
// PromptVariables (container_id, python_packages, system_packages, sandbox_variable_names,
// sandbox_files, tools_as_func); the CodeAct agent renders the instructions before every model
// request, so the model sees the sandbox's current state (codeact/prompt_variables.hpp).
// Prompts are NOT ${VAR}-interpolated: they hold shell and Python text where ${...} is meaningful.
//
// app_conf.yml holds temporal.url, temporal.namespace, llm.<provider>.{api_key, model_name, ...}
// and mcp_servers; every string is ${VAR} / ${VAR:-default} interpolated from the environment.
// An empty llm.<provider>.api_key falls back to the <PROVIDER>_API_KEY environment variable.
//
// Search order for both (core::find_config_file): the explicit path, then APP_PROMPTS_PATH /
// APP_CONFIG_PATH, ./<file>, ~/.config/codeact/<file>, /etc/codeact/<file>.
//
// Thread-safety: loaded objects are immutable; rendering is thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codeact/agent/agent.hpp"
#include "codeact/core/config.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/core/template.hpp"

namespace codeact::agent {

inline constexpr const char* kPromptsFileName = "agent_prompts.yml";
inline constexpr const char* kPromptsPathEnv = "APP_PROMPTS_PATH";
inline constexpr const char* kConfigFileName = "app_conf.yml";
inline constexpr const char* kConfigPathEnv = "APP_CONFIG_PATH";

// The variables the seed's templates use. to_json() gives the template context; `extra` members
// are added to it (and win on a name clash).
struct PromptVariables {
  std::string container_id;
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  std::map<std::string, std::string> sandbox_variable_names;  // name -> type name
  std::vector<std::string> sandbox_files;
  std::vector<std::string> tools_as_func;  // Python signatures with docstrings
  Json extra = Json::object();

  Json to_json() const;
};

struct AgentPrompt {
  std::string name;
  std::string system_prompt_source;
  std::string instructions_source;
  core::Template system_prompt;
  core::Template instructions;
};

class PromptBook {
 public:
  // Finds and loads agent_prompts.yml (search order above).
  static core::Result<PromptBook> load(const std::string& explicit_path = "",
                                       core::TemplateOptions options = {});
  // From YAML text; `source` names it in errors.
  static core::Result<PromptBook> parse(const std::string& yaml_text, const std::string& source = kPromptsFileName,
                                        core::TemplateOptions options = {});
  // From the parsed document: an object of agent name -> {system_prompt, instructions}. Both
  // fields are optional strings ("" when absent); other keys are ignored.
  static core::Result<PromptBook> from_json(const Json& document, const std::string& source = kPromptsFileName,
                                            core::TemplateOptions options = {});

  // NotFound naming the file and the agents it has.
  core::Result<std::shared_ptr<const AgentPrompt>> get(const std::string& agent_name) const;
  std::vector<std::string> agent_names() const;
  const std::string& source() const { return source_; }

  core::Result<std::string> render_system_prompt(const std::string& agent_name, const Json& variables) const;
  core::Result<std::string> render_instructions(const std::string& agent_name, const Json& variables) const;

 private:
  std::string source_;
  std::map<std::string, std::shared_ptr<const AgentPrompt>> prompts_;
};

struct LlmProviderConfig {
  std::string name;  // the key under llm: ("gemini", "openai", ...)
  std::string api_key;
  std::string model_name;
  Json settings = Json::object();  // every other key under llm.<name> (base_url, temperature, ...)
};

struct AppConfig {
  std::string source;               // the file it came from ("" when built from JSON)
  std::string temporal_url;         // "" = not configured (codeact starts an embedded server)
  std::string temporal_namespace = "default";
  std::map<std::string, LlmProviderConfig> llm;
  Json mcp_servers = Json::object();  // kept as written; the mcp module interprets it
  Json raw = Json::object();          // the whole interpolated document

  // Finds and loads app_conf.yml (search order above), interpolating ${VAR}.
  static core::Result<AppConfig> load(const std::string& explicit_path = "",
                                      const core::EnvLookup& env = core::getenv_string);
  // From a parsed document (interpolated here).
  static core::Result<AppConfig> from_json(const Json& document, const std::string& source = "",
                                           const core::EnvLookup& env = core::getenv_string);

  // The provider's config; NotFound naming the configured providers.
  core::Result<LlmProviderConfig> provider(const std::string& name) const;
};

}  // namespace codeact::agent
