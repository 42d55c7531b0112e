// agent_prompts.yml: loading, template parsing and rendering.
#include "codeact/agent/prompts.hpp"

#include "codeact/core/strings.hpp"

namespace codeact::agent {

using core::Result;

Json PromptVariables::to_json() const {
  Json vars = Json::object();
  for (const auto& [k, v] : sandbox_variable_names) vars[k] = v;
  Json out{{"container_id", container_id},       {"python_packages", python_packages},
           {"system_packages", system_packages}, {"sandbox_variable_names", vars},
           {"sandbox_files", sandbox_files},     {"tools_as_func", tools_as_func}};
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) out[k] = v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// PromptBook

Result<PromptBook> PromptBook::load(const std::string& explicit_path,
                                    core::TemplateOptions options) {
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
    return core::invalid_argument(
        source + ": expected a mapping of agent name -> {system_prompt, instructions}");
  }
  PromptBook book;
  book.source_ = source;
  for (const auto& [agent, entry] : document.items()) {
    if (!entry.is_object()) {
      return core::invalid_argument(source + ": agent '" + agent +
                                    "' must be a mapping with system_prompt and instructions");
    }
    std::string texts[2];
    const char* keys[2] = {"system_prompt", "instructions"};
    for (int i = 0; i < 2; ++i) {
      auto it = entry.find(keys[i]);
      if (it == entry.end() || it->is_null()) continue;
      if (!it->is_string())
        return core::invalid_argument(source + ": " + agent + "." + keys[i] + " must be a string");
      texts[i] = it->get<std::string>();
    }
    CODEACT_TRY(auto sys,
                core::Template::parse(texts[0], source + ":" + agent + ".system_prompt", options));
    CODEACT_TRY(auto ins,
                core::Template::parse(texts[1], source + ":" + agent + ".instructions", options));
    book.prompts_[agent] =
        std::make_shared<const AgentPrompt>(AgentPrompt{agent, texts[0], texts[1], sys, ins});
  }
  return book;
}

Result<std::shared_ptr<const AgentPrompt>> PromptBook::get(const std::string& agent_name) const {
  auto it = prompts_.find(agent_name);
  if (it != prompts_.end()) return it->second;
  const std::string names = core::join(agent_names(), ", ");
  return core::not_found(source_ + " has no prompts for agent '" + agent_name +
                         "' (it has: " + (names.empty() ? std::string("none") : names) + ")");
}

std::vector<std::string> PromptBook::agent_names() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : prompts_) out.push_back(k);
  return out;
}

Result<std::string> PromptBook::render_system_prompt(const std::string& agent_name,
                                                     const Json& variables) const {
  CODEACT_TRY(auto p, get(agent_name));
  return p->system_prompt.render(variables);
}

Result<std::string> PromptBook::render_instructions(const std::string& agent_name,
                                                    const Json& variables) const {
  CODEACT_TRY(auto p, get(agent_name));
  return p->instructions.render(variables);
}

}  // namespace codeact::agent
