// The ONE binding of a CodeAct agent to a sandbox, used by both modes.
//
// A binding resolves everything the agent is made of through the agent's hooks
// (codeact_agent.hpp): its model (llm_model), its prompts (the agent's entry of agent_prompts.yml),
// the functions cells may call (mcp_servers, host_functions, custom_functions), its toolsets
// (SandboxTools on the bound sandbox minus excluded_tools(), then toolsets()) and the instructions
// re-rendered from the sandbox before every request.
//
//   direct mode   binding.agent() is the agent::Agent that run_direct() runs in-process;
//   durable mode  a worker binds the same agent again from BindOptions (plain data) for each
//                 activity and serves it from the binding: codeact.agent_prepare reports
//                 system_prompts() and the tools of toolsets(), codeact.model_request calls
//                 model() with the instructions of agent_options(), codeact.tool_call routes a
//                 call to toolset(id). The workflow runs the loop on agent_options()' data with
//                 those effects as activities (durable/workflows.hpp).
//
// AgentBinder keeps what bindings may share for its whole life: the model clients (per agent and
// model name), and the sandbox functions (per agent and MCP servers), so MCP servers start once
// per process. A binding is cheap to make: it reads nothing from the sandbox until
// system_prompts() or agent() is called, and resolves the model on first use.
//
// Thread-safety: AgentBinder and AgentBinding are thread-safe; a binding shares its binder's
// caches (it keeps them alive).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codeact/agent/agent.hpp"
#include "codeact/codeact/agent_builder.hpp"
#include "codeact/codeact/sandbox_tools.hpp"
#include "codeact/core/result.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/llm/model.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"

namespace codeact::codeact {

class CodeActAgent;

// What an agent is bound to: data only, so that a worker can bind the same agent again.
struct BindOptions {
  std::string sandbox_id;     // REQUIRED: the sandbox the agent works in
  std::string model;          // "provider:model" given to the llm_model hook; "" = the builder's
  SandboxToolsOptions tools;  // its sandbox_id is replaced by `sandbox_id`
  // app_conf.yml mcp_servers whose tools cells may call, besides the agent's own.
  std::vector<std::string> mcp_servers;
};

class AgentBinding {
 public:
  const std::string& agent_name() const;
  const BindOptions& options() const;

  // The model the agent's llm_model hook gives for options().model (resolved once per binder).
  core::Result<std::shared_ptr<llm::Model>> model() const;
  // "<system>:<model name>" of model(), e.g. "openai:gpt-4.1".
  core::Result<std::string> model_name() const;

  // The toolsets the model calls, in order: SandboxTools (without the agent's excluded_tools()),
  // then the agent's own toolsets(). Their ids are unique.
  const std::vector<std::shared_ptr<agent::Toolset>>& toolsets() const;
  // The toolset with this id, or NotFound naming the ids there are.
  core::Result<std::shared_ptr<agent::Toolset>> toolset(const std::string& id) const;
  // The functions cells may call; null when the agent offers none.
  const std::shared_ptr<functions::SandboxFunctions>& functions() const;

  // The agent's system prompt rendered with the sandbox's variables now (none when its template
  // is empty). Blocking: reads the sandbox.
  core::Result<std::vector<std::string>> system_prompts() const;
  // The agent::Agent options of this binding, with the given system prompts: the agent's name,
  // the instructions (rendered from the sandbox before every request), the toolsets and the
  // retries of SandboxToolsOptions::max_retries. The durable layer carries exactly these across
  // to the workflow (durable::AgentPrepareOutput): an option set here must travel there too.
  agent::AgentOptions agent_options(std::vector<std::string> system_prompts) const;
  // The agent::Agent with model() and the system prompts rendered now. Blocking.
  core::Result<std::shared_ptr<agent::Agent>> agent() const;

 private:
  friend class AgentBinder;
  struct State;
  explicit AgentBinding(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

class AgentBinder {
 public:
  AgentBinder(AgentBuilder builder, std::shared_ptr<sandbox::SandboxBackend> backend);
  ~AgentBinder();
  AgentBinder(const AgentBinder&) = delete;
  AgentBinder& operator=(const AgentBinder&) = delete;

  // Binds `agent` to options.sandbox_id. Errors: no prompts for the agent, its functions (an MCP
  // server not in app_conf.yml), toolsets with the same id, bad SandboxToolsOptions.
  core::Result<AgentBinding> bind(std::shared_ptr<const CodeActAgent> agent,
                                  const BindOptions& options);

  // A copy of the builder bindings start from (with the McpServerSet they share once one
  // needed it), taken under the binder's lock: safe while other threads bind.
  AgentBuilder builder() const;
  const std::shared_ptr<sandbox::SandboxBackend>& backend() const;

 private:
  friend class AgentBinding;  // a binding shares the caches
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace codeact::codeact
