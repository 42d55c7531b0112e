// Prompts: `agent_prompts.yml`, the seed's prompt file, with its search order and the template
// variables it documents. (The other file, app_conf.yml, is core::AppConfig, core/app_config.hpp.)
//
// agent_prompts.yml maps an agent name to {system_prompt, instructions}; both are Jinja templates
// (core/template.hpp, docs/templates.md), parsed when the file is loaded so a syntax error is
// reported at startup with the agent, field, line and column. They are rendered with
// PromptVariables (container_id, python_packages, system_packages, sandbox_variable_names,
// sandbox_files, tools_as_func); the CodeAct agent renders the instructions before every model
// request, so the model sees the sandbox's current state (codeact/prompt_variables.hpp).
// Prompts are NOT ${VAR}-interpolated: they hold shell and Python text where ${...} is meaningful.
//
// Search order (core::find_config_file): the explicit path, then $APP_PROMPTS_PATH,
// ./agent_prompts.yml, ~/.config/codeact/agent_prompts.yml, /etc/codeact/agent_prompts.yml.
//
// Thread-safety: loaded objects are immutable; rendering is thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codeact/core/config.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/core/template.hpp"

namespace codeact::agent {

using core::Json;

inline constexpr const char* kPromptsFileName = "agent_prompts.yml";
inline constexpr const char* kPromptsPathEnv = "APP_PROMPTS_PATH";

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
  static core::Result<PromptBook> parse(const std::string& yaml_text,
                                        const std::string& source = kPromptsFileName,
                                        core::TemplateOptions options = {});
  // From the parsed document: an object of agent name -> {system_prompt, instructions}. Both
  // fields are optional strings ("" when absent); other keys are ignored.
  static core::Result<PromptBook> from_json(const Json& document,
                                            const std::string& source = kPromptsFileName,
                                            core::TemplateOptions options = {});

  // NotFound naming the file and the agents it has.
  core::Result<std::shared_ptr<const AgentPrompt>> get(const std::string& agent_name) const;
  std::vector<std::string> agent_names() const;
  const std::string& source() const { return source_; }

  core::Result<std::string> render_system_prompt(const std::string& agent_name,
                                                 const Json& variables) const;
  core::Result<std::string> render_instructions(const std::string& agent_name,
                                                const Json& variables) const;

 private:
  std::string source_;
  std::map<std::string, std::shared_ptr<const AgentPrompt>> prompts_;
};

}  // namespace codeact::agent
