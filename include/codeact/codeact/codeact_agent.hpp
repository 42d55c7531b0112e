// CodeAct agents (after the seed's BaseAgent -> CodeActAgent -> SimpleAgent) and a direct-mode run.
//
//   BaseAgent     what every agent supplies through its hooks: its name (the key in
//                 agent_prompts.yml), the model (llm_model; default: --model, else app_conf.yml
//                 llm.<provider>), and the functions sandbox code may call — MCP servers
//                 (mcp_servers, names from app_conf.yml mcp_servers), C++ host functions and
//                 custom Python functions (host_functions / custom_functions).
//   CodeActAgent  adds the tools the model calls: SandboxTools on its sandbox minus
//                 excluded_tools(), plus any toolsets() of its own (run on the host).
//   SimpleAgent   the minimal concrete agent, "simple_agent".
//   make_agent()  by name: "simple_agent", or any agent listed in agent_prompts.yml.
//
// An agent is bound to a sandbox by AgentBinder (agent_binding.hpp) — the ONE binding both modes
// use — and a run's sandbox goes through SandboxRun (sandbox_run.hpp) in both modes.
// run_direct() runs them in this process; the durable layer runs the same binding and lifecycle
// inside a workflow, each effect an activity (durable/workflows.hpp). Hooks must be thread-safe
// and answer the same for the same builder: a durable worker calls them again for each activity
// (llm_model and the functions once per worker and model name / MCP servers).
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
#include "codeact/codeact/agent_binding.hpp"
#include "codeact/codeact/agent_builder.hpp"
#include "codeact/codeact/prompt_variables.hpp"
#include "codeact/codeact/sandbox_run.hpp"
#include "codeact/codeact/sandbox_tools.hpp"
#include "codeact/core/cancel.hpp"
#include "codeact/functions/host_function.hpp"
#include "codeact/functions/python_functions.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/llm/model.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"

namespace codeact::codeact {

struct CodeActAgentOutput {
  std::string message;
  std::string container_id;             // the sandbox id
  std::vector<std::string> file_paths;  // produced during the run, sandbox paths (/output/...)
  core::Json to_json() const;
};

class BaseAgent {
 public:
  explicit BaseAgent(std::string name) : name_(std::move(name)) {}
  virtual ~BaseAgent() = default;
  const std::string& name() const { return name_; }

  // Hooks (the seed's _get_llm_model, _get_mcp_toolsets, _get_custom_functions).
  // The model for `builder` (builder.model is the model asked for, "" = the configured one).
  // Default: llm::make_model(resolve_model_name(builder)) with the builder's llm config.
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
  core::Result<std::shared_ptr<functions::SandboxFunctions>> sandbox_functions(
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
  std::string disk;  // the sandbox's disk limit ("10g", "none"); "" = the manager's default
  bool keep_sandbox = false;   // leave the container running at the end
  bool remove_volume = false;  // also remove the sandbox's volume at the end
  SandboxToolsOptions tools;   // sandbox_id is set by the run
  // app_conf.yml mcp_servers callable from cells (besides the agent's).
  std::vector<std::string> mcp_servers;
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
  std::string model_name;  // AgentBinding::model_name(), e.g. "openai:gpt-4.1"
};

class CodeActAgent : public BaseAgent {
 public:
  using BaseAgent::BaseAgent;

  // Tools the model does not get (the seed's blacklist). Default: none.
  virtual std::vector<std::string> excluded_tools() const { return {}; }
  // Toolsets the model calls directly besides the sandbox tools, run on the host (in durable
  // mode each call is a codeact.tool_call activity routed by the toolset's id()). Called once per
  // binding; ids must differ from "sandbox" and from each other. Default: none.
  virtual std::vector<std::shared_ptr<agent::Toolset>> toolsets(const AgentBuilder&) const {
    return {};
  }

  // Direct mode: the SandboxRun of one task in this process — start (or resume) the sandbox,
  // bind the agent, run the task, collect the produced files, stop the sandbox (volume kept
  // unless remove_volume). On failure or a cancel the container is removed (volume kept unless
  // remove_volume) and the error says what failed (and the cleanup, if it failed too); a usage
  // limit is ResourceExhausted naming it. The model is resolved before the sandbox starts.
  core::Result<CodeActRunResult> run_direct(const std::string& task, const AgentBuilder& builder,
                                            std::shared_ptr<sandbox::SandboxBackend> backend,
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

}  // namespace codeact::codeact
