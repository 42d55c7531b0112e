// AgentBuilder: loading prompts and config (with built-in prompts when there are none), and the
// default model.
#include "codeact/codeact/agent_builder.hpp"

#include <algorithm>
#include <vector>

namespace codeact::codeact {
namespace {

using core::Json;
using core::Result;

// Used when no agent_prompts.yml is found, so `codeact run` works out of the box.
constexpr const char* kBuiltinPrompts = R"(simple_agent:
  system_prompt: >-
    You are a careful Python programmer. You solve the user's task by writing code that runs in a
    sandbox, reading what it prints, and continuing until the task is done. Save every file you
    want the user to receive under /output.
  instructions: |
    You work in the sandbox {{ container_id }}. Code you run there keeps its variables, imports
    and files between calls.
    {% if python_packages %}Python packages installed: {{ python_packages | join(", ") }}.
    {% endif %}{% if sandbox_variable_names %}Variables defined: {% for name in sandbox_variable_names %}{{ name }} ({{ sandbox_variable_names[name] }}){% if not loop.last %}, {% endif %}{% endfor %}.
    {% endif %}{% if sandbox_files %}Files: {{ sandbox_files | join(", ") }}.
    {% endif %}{% if tools_as_func %}Functions callable from your Python code (no await needed):
    {% for func in tools_as_func %}
    ```python
    {{ func }}
    ```
    {% endfor %}{% endif %}
    Use execute_python to run code. Reply with a short summary when the task is done.
)";

bool has_key(const core::LlmProviderConfig& p) { return !p.api_key.empty() || p.name == "ollama"; }

std::string provider_prefix(const std::string& config_key) {
  if (config_key == "gemini" || config_key == "google") return "google-gla";
  return config_key;
}

std::string default_model_of(const std::string& config_key) {
  if (config_key == "gemini" || config_key == "google") return "gemini-2.5-pro";
  if (config_key == "openai") return "gpt-4.1";
  if (config_key == "anthropic") return "claude-sonnet-4-5";
  return "";
}

}  // namespace

Result<AgentBuilder> AgentBuilder::load(const std::string& prompts_path,
                                        const std::string& config_path) {
  AgentBuilder b;
  auto book = agent::PromptBook::load(prompts_path);
  if (!book.ok()) {
    if (!prompts_path.empty() || book.error().code() != core::Code::kNotFound)
      return std::move(book).error();
    CODEACT_TRY(auto builtin, agent::PromptBook::parse(kBuiltinPrompts, "built-in prompts"));
    b.prompts = std::make_shared<const agent::PromptBook>(std::move(builtin));
  } else {
    b.prompts = std::make_shared<const agent::PromptBook>(std::move(*book));
  }
  auto config = core::AppConfig::load(config_path);
  if (!config.ok()) {
    if (!config_path.empty() || config.error().code() != core::Code::kNotFound)
      return std::move(config).error();
  } else {
    b.config = std::move(*config);
  }
  return b;
}

Result<std::string> resolve_model_name(const AgentBuilder& builder) {
  if (!builder.model.empty()) return builder.model;
  std::vector<std::string> order = {"gemini", "openai", "anthropic"};
  for (const auto& [name, _] : builder.config.llm) {
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  }
  for (const auto& key : order) {
    auto it = builder.config.llm.find(key);
    if (it == builder.config.llm.end() || !has_key(it->second)) continue;
    std::string model =
        it->second.model_name.empty() ? default_model_of(key) : it->second.model_name;
    if (model.empty()) continue;
    return provider_prefix(key) + ":" + model;
  }
  const core::EnvLookup env = builder.env ? builder.env : core::EnvLookup(core::getenv_string);
  auto set = [&](const char* var) {
    auto v = env(var);
    return v && !v->empty();
  };
  if (set("GEMINI_API_KEY") || set("GOOGLE_API_KEY"))
    return std::string("google-gla:gemini-2.5-pro");
  if (set("OPENAI_API_KEY")) return std::string("openai:gpt-4.1");
  if (set("ANTHROPIC_API_KEY")) return std::string("anthropic:claude-sonnet-4-5");
  return core::failed_precondition(
      "no model configured: set OPENAI_API_KEY, GEMINI_API_KEY or ANTHROPIC_API_KEY (or "
      "llm.<provider>.api_key in " +
      (builder.config.source.empty() ? std::string("app_conf.yml") : builder.config.source) + ")");
}

}  // namespace codeact::codeact
