// CodeAct agents (after the seed's BaseAgent -> CodeActAgent -> SimpleAgent) and a direct-mode run.
//
//   BaseAgent     supplies what every agent needs: its name (the key in agent_prompts.yml), the
//                 model (hook llm_model; default: --model, else app_conf.yml llm.<provider>), its
//                 prompts, and the functions sandbox code may call — MCP servers (hook
//                 mcp_servers, names from app_conf.yml mcp_servers), C++ host functions and
//                 custom Python functions (hooks host_functions / custom_functions).
//   CodeActAgent  binds an agent::Agent to one sandbox: SandboxTools (the sandbox id fixed), the
//                 functions::SandboxFunctions bridge for cells, and instructions re-rendered before every model
//                 request from the sandbox's live state (sandbox_instructions()).
//   SimpleAgent   the minimal concrete agent, "simple_agent".
//   make_agent()  by name: "simple_agent", or any agent listed in agent_prompts.yml.
//
// There is ONE agent loop (agent::Agent::run_task). run_direct() drives it in-process; the durable
// layer will drive the same bound agent inside a workflow by wrapping its model and toolsets
// (agent::RunDrivers), with the sandbox lifecycle and the prompt-variable gathering as activities.
// For that, everything a worker needs to rebuild a bound agent is data: the agent name, the
// model name, SandboxToolsOptions and the sandbox id.
//
// The output (CodeActAgentOutput, the seed's shape) is filled by codeact, not by the model:
// message = the model's final answer, file_paths = files under /output that appeared or changed
// during the run.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codeact/agent/agent.hpp"
#include "codeact/agent/prompts.hpp"
#include "codeact/functions/host_function.hpp"
#include "codeact/functions/python_functions.hpp"
#include "codeact/codeact/prompt_variables.hpp"
#include "codeact/codeact/sandbox_tools.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/core/config.hpp"
#include "codeact/llm/model.hpp"
#include "codeact/llm/model_factory.hpp"
#include "codeact/mcp/server_set.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace codeact::codeact {

struct CodeActAgentOutput {
  std::string message;
  std::string container_id;             // the sandbox id
  std::vector<std::string> file_paths;  // produced during the run, sandbox paths (/output/...)
  core::Json to_json() const;
};

// ---------------------------------------------------------------------------------------------
// Building

// What agents are built from (the seed's AgentBuilder): prompts, app config, the model to use.
struct AgentBuilder {
  std::shared_ptr<const agent::PromptBook> prompts;
  agent::AppConfig config;        // llm.<provider>, mcp_servers
  std::string model;              // "provider:model"; "" = from config (resolve_model_name)
  llm::ModelConfig model_config;  // transport, retries; llm_config is filled from `config`
  std::shared_ptr<mcp::McpServerSet>
      mcp;              // null = built from config.mcp_servers when an agent asks
  core::EnvLookup env;  // null = the process environment

  // Loads agent_prompts.yml and app_conf.yml (search order of agent/prompts.hpp). A missing
  // app_conf.yml is not an error (providers then come from the environment); a missing
  // agent_prompts.yml is NotFound naming where it was looked for.
  static core::Result<AgentBuilder> load(const std::string& prompts_path = "",
                                         const std::string& config_path = "");
};

// The model name to use: `builder.model` if set, else the first provider of app_conf.yml `llm:`
// (in the order gemini, openai, anthropic, then the others) whose api key is set (in the file or
// <PROVIDER>_API_KEY), as "<provider>:<model_name>". FailedPrecondition otherwise, saying which
// flag or environment variable to set.
core::Result<std::string> resolve_model_name(const AgentBuilder& builder);

class BaseAgent {
 public:
  explicit BaseAgent(std::string name) : name_(std::move(name)) {}
  virtual ~BaseAgent() = default;
  const std::string& name() const { return name_; }

  // Hooks (the seed's _get_llm_model, _get_mcp_toolsets, _get_custom_functions).
  virtual core::Result<std::shared_ptr<llm::Model>> llm_model(const AgentBuilder& builder) const;
  // Names of app_conf.yml mcp_servers whose tools sandbox code may call. Default: none.
  virtual std::vector<std::string> mcp_servers(const AgentBuilder&) const { return {}; }
  virtual std::vector<functions::HostFunction> host_functions() const { return {}; }
  virtual std::vector<functions::PythonFunctionSource> custom_functions() const { return {}; }

  // This agent's entry of agent_prompts.yml (NotFound listing the agents there).
  core::Result<std::shared_ptr<const agent::AgentPrompt>> prompts(
      const AgentBuilder& builder) const;
  // The functions callable from cells, or null when the hooks give none. `extra_mcp_servers`
  // (names of app_conf.yml mcp_servers, e.g. from `codeact run --mcp`) are offered too.
  core::Result<std::shared_ptr<functions::SandboxFunctions>> functions(
      const AgentBuilder& builder, const std::vector<std::string>& extra_mcp_servers = {}) const;

 private:
  std::string name_;
};

// A direct-mode run: sandbox, limits, what to show while it runs.
struct CodeActRunOptions {
  std::string sandbox_id;  // "" = "run-<random>"; an existing sandbox is resumed with its state
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  bool network = false;
  bool keep_sandbox = false;   // leave the container running at the end
  bool remove_volume = false;  // also remove the sandbox's volume at the end
  SandboxToolsOptions tools;   // sandbox_id is set by the run
  std::vector<std::string> mcp_servers;  // app_conf.yml mcp_servers callable from cells (besides the agent's)
  std::optional<agent::UsageLimits> usage_limits;
  std::vector<llm::ModelMessage> message_history;
  std::string run_id;  // "" = random
  agent::EventHandler on_event;
  std::function<void(const std::string&)> on_progress;  // sandbox lifecycle lines
  const core::CancelToken* cancel = nullptr;
};

struct CodeActRunResult {
  CodeActAgentOutput output;
  agent::AgentRunResult run;
  std::string model_name;
};

class CodeActAgent : public BaseAgent {
 public:
  using BaseAgent::BaseAgent;

  // Tools the model does not get (the seed's blacklist). Default: none.
  virtual std::vector<std::string> excluded_tools() const { return {}; }

  // The agent loop bound to `sandbox_id` (which must be running). The system prompt is rendered
  // once with the sandbox's variables at bind time; the instructions before every request.
  core::Result<std::shared_ptr<agent::Agent>> bind(const AgentBuilder& builder,
                                                   std::shared_ptr<llm::Model> model,
                                                   std::shared_ptr<sandbox::SandboxManager> manager,
                                                   const std::string& sandbox_id,
                                                   const SandboxToolsOptions& tools,
                                                   const std::vector<std::string>& extra_mcp_servers = {}) const;

  // Direct mode: starts (or resumes) the sandbox, runs the task, collects the produced files and
  // stops the sandbox (volume kept unless remove_volume). On failure the sandbox's container is
  // removed (volume kept unless remove_volume) and the error says what failed; a usage limit is
  // ResourceExhausted naming it.
  core::Result<CodeActRunResult> run_direct(const std::string& task, const AgentBuilder& builder,
                                            std::shared_ptr<sandbox::SandboxManager> manager,
                                            CodeActRunOptions options) const;
};

class SimpleAgent final : public CodeActAgent {
 public:
  SimpleAgent() : CodeActAgent("simple_agent") {}
};

// "simple_agent" -> SimpleAgent; another name listed in the builder's prompts -> a CodeActAgent
// of that name; NotFound listing the known agents otherwise.
core::Result<std::shared_ptr<CodeActAgent>> make_agent(const std::string& name,
                                                       const AgentBuilder& builder);

// Files under `root` that are new or changed (size or mtime) in `after` compared to `before`.
std::vector<std::string> produced_files(const std::vector<sandbox::FileEntry>& before,
                                        const std::vector<sandbox::FileEntry>& after);

}  // namespace codeact::codeact
