#include "codeact/codeact/codeact_agent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>

#include "codeact/codeact/prompt_variables.hpp"
#include "codeact/core/log.hpp"

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

std::string random_suffix() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

bool has_key(const agent::LlmProviderConfig& p) { return !p.api_key.empty() || p.name == "ollama"; }

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

Json CodeActAgentOutput::to_json() const {
  return Json{{"message", message}, {"container_id", container_id}, {"file_paths", file_paths}};
}

// ---------------------------------------------------------------------------------------------
// Building

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
  auto config = agent::AppConfig::load(config_path);
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

Result<std::shared_ptr<llm::Model>> BaseAgent::llm_model(const AgentBuilder& builder) const {
  CODEACT_TRY(auto name, resolve_model_name(builder));
  llm::ModelConfig config = builder.model_config;
  if (config.llm_config.empty() && builder.config.raw.is_object()) {
    config.llm_config = builder.config.raw.value("llm", Json::object());
  }
  if (!config.env && builder.env) config.env = builder.env;
  CODEACT_TRY(auto model, llm::make_model(name, config));
  return std::shared_ptr<llm::Model>(std::move(model));
}

Result<std::shared_ptr<const agent::AgentPrompt>> BaseAgent::prompts(
    const AgentBuilder& builder) const {
  if (!builder.prompts)
    return core::failed_precondition("agent \"" + name_ + "\": no prompts loaded");
  return builder.prompts->get(name_);
}

Result<std::shared_ptr<functions::SandboxFunctions>> BaseAgent::functions(
    const AgentBuilder& builder, const std::vector<std::string>& extra_mcp_servers) const {
  functions::SandboxFunctionsOptions options;
  options.mcp_servers = mcp_servers(builder);
  for (const auto& name : extra_mcp_servers) {
    if (std::find(options.mcp_servers.begin(), options.mcp_servers.end(), name) == options.mcp_servers.end())
      options.mcp_servers.push_back(name);
  }
  options.host_functions = host_functions();
  options.python_functions = custom_functions();
  if (options.mcp_servers.empty() && options.host_functions.empty() &&
      options.python_functions.empty()) {
    return std::shared_ptr<functions::SandboxFunctions>();
  }
  if (!options.mcp_servers.empty()) {
    options.mcp = builder.mcp;
    if (!options.mcp) {
      CODEACT_TRY(auto entries, mcp::parse_mcp_servers(builder.config.raw));
      options.mcp = std::make_shared<mcp::McpServerSet>(std::move(entries));
    }
  }
  return std::make_shared<functions::SandboxFunctions>(std::move(options));
}

Result<std::shared_ptr<agent::Agent>> CodeActAgent::bind(
    const AgentBuilder& builder, std::shared_ptr<llm::Model> model,
    std::shared_ptr<sandbox::SandboxManager> manager, const std::string& sandbox_id,
    const SandboxToolsOptions& tools_options, const std::vector<std::string>& extra_mcp_servers) const {
  CODEACT_TRY(auto prompt, prompts(builder));
  CODEACT_TRY(auto fns, functions(builder, extra_mcp_servers));
  agent::AgentOptions options;
  options.name = name();
  if (!prompt->system_prompt_source.empty()) {
    CODEACT_TRY(auto vars, sandbox_prompt_variables(*manager, sandbox_id, fns.get()));
    CODEACT_TRY(auto system, prompt->system_prompt.render(vars.to_json()));
    if (!system.empty()) options.system_prompts.push_back(std::move(system));
  }
  if (!prompt->instructions_source.empty()) {
    options.instructions_fn = sandbox_instructions(prompt, manager, sandbox_id, fns);
  }
  SandboxToolsOptions to = tools_options;
  to.sandbox_id = sandbox_id;
  options.max_tool_retries = to.max_retries;
  std::shared_ptr<agent::Toolset> tools = std::make_shared<SandboxTools>(manager, to, fns);
  auto excluded = excluded_tools();
  if (!excluded.empty()) tools = agent::FilteredToolset::excluding(tools, excluded);
  options.toolsets.push_back(std::move(tools));
  return std::make_shared<agent::Agent>(std::move(model), std::move(options));
}

std::vector<std::string> produced_files(const std::vector<sandbox::FileEntry>& before,
                                        const std::vector<sandbox::FileEntry>& after) {
  std::map<std::string, std::pair<int64_t, double>> old;
  for (const auto& f : before) old[f.path] = {f.size, f.mtime};
  std::vector<std::string> out;
  for (const auto& f : after) {
    auto it = old.find(f.path);
    if (it == old.end() || it->second.first != f.size || it->second.second != f.mtime)
      out.push_back(f.path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<CodeActRunResult> CodeActAgent::run_direct(const std::string& task,
                                                  const AgentBuilder& builder,
                                                  std::shared_ptr<sandbox::SandboxManager> manager,
                                                  CodeActRunOptions options) const {
  auto progress = [&](const std::string& line) {
    if (options.on_progress) options.on_progress(line);
  };
  CODEACT_TRY(auto model, llm_model(builder));

  sandbox::SandboxOptions so;
  so.id = options.sandbox_id.empty() ? "run-" + random_suffix() : options.sandbox_id;
  so.python_packages = options.python_packages;
  so.system_packages = options.system_packages;
  so.network = options.network;
  const std::string id = so.id;
  progress(
      fmt::format("starting sandbox {}{}", id, so.network ? " (network on)" : " (no network)"));
  auto started = manager->start(so);
  if (!started.ok())
    return std::move(started).error().with_context("starting sandbox \"" + id + "\"");
  progress(started->resumed ? fmt::format("sandbox {} resumed with its state", id)
                            : fmt::format("sandbox {} started", id));

  // Ends the sandbox's run: stop (success) or remove the container (failure); volume on request.
  auto finish = [&](bool success) {
    if (options.keep_sandbox) {
      progress(fmt::format("sandbox {} left running (--keep-sandbox)", id));
      return;
    }
    core::Status s = (success && !options.remove_volume)
                         ? manager->stop(id)
                         : manager->remove(id, options.remove_volume);
    if (!s.ok()) {
      core::log().warn("sandbox \"{}\": cleanup failed: {}", id, s.error().message());
      progress(fmt::format("could not clean up sandbox {}: {}", id, s.error().message()));
      return;
    }
    if (success && !options.remove_volume) {
      progress(fmt::format("sandbox {} stopped (its volume {} keeps the state)", id,
                           sandbox::SandboxManager::volume_name(id)));
    } else {
      progress(fmt::format("sandbox {} removed{}", id,
                           options.remove_volume ? " with its volume" : " (volume kept)"));
    }
  };

  auto before = manager->list_files(id, "/output");
  if (!before.ok()) {
    finish(false);
    return std::move(before).error().with_context("listing files of sandbox \"" + id + "\"");
  }
  auto bound = bind(builder, model, manager, id, options.tools, options.mcp_servers);
  if (!bound.ok()) {
    finish(false);
    return std::move(bound).error();
  }

  agent::RunOptions ro;
  ro.message_history = std::move(options.message_history);
  ro.deps = Json{{"sandbox_id", id}};
  ro.on_event = options.on_event;
  ro.usage_limits = options.usage_limits;
  ro.cancel = options.cancel;
  ro.run_id = options.run_id;
  auto run = (*bound)->run(task, std::move(ro));
  if (!run.ok()) {
    finish(false);
    return std::move(run).error();
  }

  CodeActRunResult out;
  out.model_name = model->model_name();
  out.output.message = run->output_text();
  out.output.container_id = id;
  auto after = manager->list_files(id, "/output");
  if (!after.ok()) {
    finish(false);
    return std::move(after).error().with_context("listing files of sandbox \"" + id +
                                                 "\" after the run");
  }
  out.output.file_paths = produced_files(*before, *after);
  out.run = std::move(*run);
  finish(true);
  return out;
}

Result<std::shared_ptr<CodeActAgent>> make_agent(const std::string& name,
                                                 const AgentBuilder& builder) {
  if (name == "simple_agent") return std::shared_ptr<CodeActAgent>(std::make_shared<SimpleAgent>());
  if (builder.prompts) {
    auto names = builder.prompts->agent_names();
    if (std::find(names.begin(), names.end(), name) != names.end())
      return std::make_shared<CodeActAgent>(name);
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return core::not_found(fmt::format("no agent \"{}\" in {} (agents there: {})", name,
                                       builder.prompts->source(), list.empty() ? "none" : list));
  }
  return core::not_found("no agent \"" + name + "\": no prompts loaded");
}

}  // namespace codeact::codeact
