// AgentBuilder (after the seed's): what CodeAct agents are built from — the prompts
// (agent_prompts.yml), the application config (app_conf.yml: llm.<provider>, mcp_servers) and the
// model to use — and the rule that picks the default model.
//
// Plain data, copyable; the McpServerSet it may hold is shared (its sessions belong to whoever
// made it). Thread-safe to read.
#pragma once

#include <memory>
#include <string>

#include "codeact/agent/prompts.hpp"
#include "codeact/core/app_config.hpp"
#include "codeact/core/config.hpp"
#include "codeact/core/result.hpp"
#include "codeact/llm/model_factory.hpp"
#include "codeact/mcp/server_set.hpp"

namespace codeact::codeact {

struct AgentBuilder {
  std::shared_ptr<const agent::PromptBook> prompts;
  core::AppConfig config;         // llm.<provider>, mcp_servers
  std::string model;              // "provider:model"; "" = from config (resolve_model_name)
  llm::ModelConfig model_config;  // transport, retries; llm_config is filled from `config`
  std::shared_ptr<mcp::McpServerSet> mcp;  // null = built from config.mcp_servers when needed
  core::EnvLookup env;                     // null = the process environment

  // Loads agent_prompts.yml and app_conf.yml (search order of agent/prompts.hpp). A missing
  // app_conf.yml is not an error (providers then come from the environment); a missing
  // agent_prompts.yml gives the built-in prompts of "simple_agent", unless `prompts_path` named
  // one (then NotFound naming where it was looked for).
  static core::Result<AgentBuilder> load(const std::string& prompts_path = "",
                                         const std::string& config_path = "");
};

// The model name to use: `builder.model` if set, else the first provider of app_conf.yml `llm:`
// (in the order gemini, openai, anthropic, then the others) whose api key is set (in the file or
// <PROVIDER>_API_KEY), as "<provider>:<model_name>". FailedPrecondition otherwise, saying which
// flag or environment variable to set.
core::Result<std::string> resolve_model_name(const AgentBuilder& builder);

}  // namespace codeact::codeact
