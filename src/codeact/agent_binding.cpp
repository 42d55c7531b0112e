// AgentBinder / AgentBinding: a CodeAct agent bound to a sandbox, resolved through its hooks once
// for both modes.
#include "codeact/codeact/agent_binding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/codeact/prompt_variables.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/mcp/server_config.hpp"

namespace codeact::codeact {

using core::Result;

struct AgentBinder::Shared {
  std::mutex mu;
  // builder.mcp is set (once) when an agent first needs MCP servers; read only under mu.
  AgentBuilder builder;  // GUARDED_BY(mu)
  std::shared_ptr<sandbox::SandboxBackend> backend;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<llm::Model>>
      models;                                                                     // GUARDED_BY(mu)
  std::map<std::string, std::shared_ptr<functions::SandboxFunctions>> functions;  // GUARDED_BY(mu)

  // The builder an agent's hooks see, its McpServerSet shared by every binding of this binder.
  Result<AgentBuilder> builder_for(const CodeActAgent& agent, const BindOptions& options) {
    std::lock_guard lock(mu);
    const bool needs_mcp = !options.mcp_servers.empty() || !agent.mcp_servers(builder).empty();
    if (needs_mcp && !builder.mcp) {
      CODEACT_TRY(auto entries, mcp::parse_mcp_servers(builder.config.raw));
      builder.mcp = std::make_shared<mcp::McpServerSet>(std::move(entries));
    }
    return builder;
  }

  // The agent's functions plus the requested servers, made once per binder.
  Result<std::shared_ptr<functions::SandboxFunctions>> functions_of(
      const CodeActAgent& agent, const AgentBuilder& b, std::vector<std::string> servers) {
    std::sort(servers.begin(), servers.end());
    const std::string key = agent.name() + "|" + core::join(servers, "|");
    {
      std::lock_guard lock(mu);
      if (auto it = functions.find(key); it != functions.end()) return it->second;
    }
    CODEACT_TRY(auto made, agent.sandbox_functions(b, servers));
    std::lock_guard lock(mu);
    return functions.try_emplace(key, std::move(made)).first->second;
  }
};

struct AgentBinding::State {
  std::shared_ptr<AgentBinder::Shared> shared;
  std::shared_ptr<const CodeActAgent> agent;
  AgentBuilder builder;  // what the agent's hooks see (model = options.model when given)
  BindOptions options;
  std::shared_ptr<const agent::AgentPrompt> prompt;
  std::shared_ptr<functions::SandboxFunctions> functions;
  std::vector<std::shared_ptr<agent::Toolset>> toolsets;
};

// ---------------------------------------------------------------------------------------------

AgentBinder::AgentBinder(AgentBuilder builder, std::shared_ptr<sandbox::SandboxBackend> backend)
    : shared_(std::make_shared<Shared>()) {
  shared_->builder = std::move(builder);
  shared_->backend = std::move(backend);
}

AgentBinder::~AgentBinder() = default;

AgentBuilder AgentBinder::builder() const {
  std::lock_guard lock(shared_->mu);
  return shared_->builder;
}
const std::shared_ptr<sandbox::SandboxBackend>& AgentBinder::backend() const {
  return shared_->backend;
}

Result<AgentBinding> AgentBinder::bind(std::shared_ptr<const CodeActAgent> agent,
                                       const BindOptions& options) {
  if (!agent) return core::invalid_argument("binding an agent: no agent given");
  auto st = std::make_shared<AgentBinding::State>();
  st->shared = shared_;
  st->agent = agent;
  st->options = options;
  st->options.tools.sandbox_id = options.sandbox_id;
  const std::string who = "agent \"" + agent->name() + "\"";
  CODEACT_TRY_STATUS(st->options.tools.validate());
  CODEACT_TRY(st->builder, shared_->builder_for(*agent, options));
  if (!options.model.empty()) st->builder.model = options.model;
  CODEACT_TRY(st->prompt, agent->prompts(st->builder));

  std::vector<std::string> servers = agent->mcp_servers(st->builder);
  for (const auto& name : options.mcp_servers) {
    if (std::find(servers.begin(), servers.end(), name) == servers.end()) servers.push_back(name);
  }
  CODEACT_TRY(st->functions, shared_->functions_of(*agent, st->builder, servers));

  std::shared_ptr<agent::Toolset> tools =
      std::make_shared<SandboxTools>(shared_->backend, st->options.tools, st->functions);
  const auto excluded = agent->excluded_tools();
  if (!excluded.empty()) tools = agent::FilteredToolset::excluding(tools, excluded);
  st->toolsets.push_back(std::move(tools));
  for (auto& own : agent->toolsets(st->builder)) {
    if (own) st->toolsets.push_back(std::move(own));
  }
  std::set<std::string> ids;
  for (const auto& t : st->toolsets) {
    if (!ids.insert(t->id()).second) {
      return core::invalid_argument(fmt::format(
          "{}: two toolsets have the id \"{}\"; the durable layer routes tool calls by id, give "
          "one another id()",
          who, t->id()));
    }
  }
  return AgentBinding(std::move(st));
}

// ---------------------------------------------------------------------------------------------

const std::string& AgentBinding::agent_name() const { return state_->agent->name(); }
const BindOptions& AgentBinding::options() const { return state_->options; }
const std::vector<std::shared_ptr<agent::Toolset>>& AgentBinding::toolsets() const {
  return state_->toolsets;
}
const std::shared_ptr<functions::SandboxFunctions>& AgentBinding::functions() const {
  return state_->functions;
}

Result<std::shared_ptr<agent::Toolset>> AgentBinding::toolset(const std::string& id) const {
  std::vector<std::string> ids;
  for (const auto& t : state_->toolsets) {
    if (t->id() == id) return t;
    ids.push_back("\"" + t->id() + "\"");
  }
  return core::not_found(fmt::format("agent \"{}\" has no toolset \"{}\" (it has {})", agent_name(),
                                     id, core::join(ids, ", ")));
}

Result<std::shared_ptr<llm::Model>> AgentBinding::model() const {
  auto& shared = *state_->shared;
  const auto key = std::make_pair(agent_name(), state_->options.model);
  {
    std::lock_guard lock(shared.mu);
    if (auto it = shared.models.find(key); it != shared.models.end()) return it->second;
  }
  CODEACT_TRY(auto made, state_->agent->llm_model(state_->builder));
  if (!made) return core::internal_error("agent \"" + agent_name() + "\": llm_model gave no model");
  std::lock_guard lock(shared.mu);
  return shared.models.try_emplace(key, std::move(made)).first->second;
}

Result<std::string> AgentBinding::model_name() const {
  CODEACT_TRY(auto m, model());
  const std::string system = m->system();
  return system.empty() ? m->model_name() : system + ":" + m->model_name();
}

Result<std::vector<std::string>> AgentBinding::system_prompts() const {
  std::vector<std::string> out;
  if (state_->prompt->system_prompt_source.empty()) return out;
  CODEACT_TRY(auto vars,
              sandbox_prompt_variables(*state_->shared->backend, state_->options.sandbox_id,
                                       state_->functions.get()));
  CODEACT_TRY(auto text, state_->prompt->system_prompt.render(vars.to_json()));
  if (!text.empty()) out.push_back(std::move(text));
  return out;
}

agent::AgentOptions AgentBinding::agent_options(std::vector<std::string> system_prompts) const {
  agent::AgentOptions o;
  o.name = agent_name();
  o.system_prompts = std::move(system_prompts);
  if (!state_->prompt->instructions_source.empty()) {
    o.instructions_fn = sandbox_instructions(state_->prompt, state_->shared->backend,
                                             state_->options.sandbox_id, state_->functions);
  }
  o.toolsets = state_->toolsets;
  o.max_tool_retries = state_->options.tools.max_retries;
  return o;
}

Result<std::shared_ptr<agent::Agent>> AgentBinding::agent() const {
  CODEACT_TRY(auto m, model());
  CODEACT_TRY(auto system, system_prompts());
  return std::make_shared<agent::Agent>(std::move(m), agent_options(std::move(system)));
}

}  // namespace codeact::codeact
