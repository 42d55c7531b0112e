// The durable CodeAct agent: the agent loop (agent::Agent::run_task) inside Temporal workflows,
// each model request and each tool call an activity (DESIGN.md §1, layer `durable`).
//
// Workflows (names, signals and queries are stable: any Temporal client can drive them):
//   CodeActTaskWorkflow(TaskInput) -> TaskOutput
//       start (or resume) the sandbox -> run the agent -> stop the sandbox. On failure or
//       cancellation the sandbox's container is removed (its volume is kept unless
//       remove_volume). Query "progress" {since: n} -> {events: [...], next, status}.
//   CodeActChatWorkflow(ChatInput) -> {turns: [...], sandbox_id, reason, runs}
//       one sandbox for a conversation. Signal "send_user_task" (a string, or {"task": ...})
//       queues a message; signal "stop_chat" ends the chat after the current message. Query
//       "agent_output" -> {turns: [{task, output, files, error?}], pending, status, sandbox_id};
//       "progress" as above. Ends after idle_timeout_seconds without a message. Continues as new
//       (carrying the conversation, the turns and queued messages) when the server suggests it
//       or after max_turns_per_run messages, so a chat can run for ever.
//   SimpleAgentWorkflow(user_task: str) -> str   the seed's workflow: a task run with defaults.
//
// Activities ("codeact.*", registered by register_codeact):
//   codeact.sandbox_start, codeact.agent_prepare, codeact.model_request, codeact.tool_call,
//   codeact.sandbox_finish. They run on a worker holding a WorkerEnv: its prompts, config, model
//   clients (API keys from the worker's own config/environment), MCP sessions and the Docker
//   connection. Payloads carry names and data only: the model name, the agent name, the sandbox
//   id, the conversation (tool outputs cut to SandboxToolsOptions limits) — never a credential.
//
// Exactly-once cells: the run id the loop sees is "<workflow id>/<first run id>[/<turn>]", so
// every execute_python call carries execution id "<run id>/<step>/<tool_call_id>", the same on
// every retry of the activity and on every replay; the kernel answers a known id with the
// recorded result. Long calls heartbeat; a worker that dies is noticed after heartbeat_seconds
// and the call is retried elsewhere.
//
// Instructions are rendered on the worker, inside codeact.model_request, from the sandbox's live
// state just before the model is called (they are not kept in workflow history).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codeact/agent/agent.hpp"
#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "codeact/temporal/worker.hpp"

namespace codeact::durable {

using core::Json;

inline constexpr const char* kTaskWorkflow = "CodeActTaskWorkflow";
inline constexpr const char* kChatWorkflow = "CodeActChatWorkflow";
inline constexpr const char* kSimpleAgentWorkflow = "SimpleAgentWorkflow";
inline constexpr const char* kSendUserTask = "send_user_task";
inline constexpr const char* kStopChat = "stop_chat";
inline constexpr const char* kAgentOutputQuery = "agent_output";
inline constexpr const char* kProgressQuery = "progress";
inline constexpr const char* kDefaultTaskQueue = "codeact";

// Options of one kind of activity.
struct ActivityPolicy {
  double start_to_close_seconds = 600;
  double heartbeat_seconds = 10;  // 0 = no heartbeat timeout
  int max_attempts = 0;           // 0 = unlimited
  double initial_retry_seconds = 1;
  Json to_json() const;
  static core::Result<ActivityPolicy> from_json(const Json& j, ActivityPolicy defaults);
};

struct ActivityPolicies {
  ActivityPolicy model{300, 10, 5, 1};
  ActivityPolicy tool{1800, 10, 10, 1};  // a cell's own timeout is enforced by the kernel
  ActivityPolicy sandbox{900, 10, 5, 1};  // start may build an image or install packages
  Json to_json() const;
  // Missing fields keep their defaults. Accepts the `durable.activities` section of app_conf.yml.
  static core::Result<ActivityPolicies> from_json(const Json& j);
};

// What a task run needs; JSON-serializable (it is the workflow's input). No secrets.
struct TaskInput {
  std::string task;                    // REQUIRED
  std::string agent = "simple_agent";  // a name make_agent() knows on the worker
  std::string model;                   // "provider:model"; "" = the worker's configured model
  std::string sandbox_id;              // "" = the workflow id
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  // Names of the worker's app_conf.yml mcp_servers whose tools cells may call (besides the
  // agent's own). Names only: the servers, their credentials and sessions live on the worker.
  std::vector<std::string> mcp_servers;
  bool network = false;
  bool keep_sandbox = false;   // leave the container running at the end
  bool remove_volume = false;  // remove the volume at the end
  std::optional<agent::UsageLimits> usage_limits;
  codeact::SandboxToolsOptions tools;  // sandbox_id is filled in by the workflow
  ActivityPolicies activities;
  std::vector<llm::ModelMessage> message_history;

  Json to_json() const;
  // A bare string is a task with defaults (the seed's SimpleAgentWorkflow input).
  static core::Result<TaskInput> from_json(const Json& j);
};

struct TaskOutput {
  std::string output;
  std::string workflow_id;
  std::string sandbox_id;
  std::vector<std::string> files;  // produced during the run (sandbox paths under /output)
  Json usage = Json::object();     // requests, tokens, tool_calls
  std::string model;
  std::string agent;
  std::string run_id;
  Json to_json() const;
  static core::Result<TaskOutput> from_json(const Json& j);
};

struct ChatInput {
  TaskInput base;  // everything but task; base.task is ignored
  double idle_timeout_seconds = 3600;
  int max_turns_per_run = 20;
  // Carried across continue-as-new:
  Json turns = Json::array();    // [{task, output, files, error?}]
  Json pending = Json::array();  // messages received, not yet answered
  bool sandbox_started = false;
  int runs = 1;  // workflow runs of this chat so far (1 + continue-as-new count)
  Json to_json() const;
  static core::Result<ChatInput> from_json(const Json& j);
};

// What the activities run with, on a worker.
struct WorkerEnv {
  codeact::AgentBuilder builder;  // prompts, config (llm keys, mcp_servers), default model
  std::shared_ptr<sandbox::SandboxManager> manager;
  // Agents by name, for agents defined in C++ (host functions, MCP hooks, excluded tools). A name
  // not here is built by codeact::make_agent (simple_agent, or any agent of agent_prompts.yml).
  std::map<std::string, std::shared_ptr<codeact::CodeActAgent>> agents;
};

// Registers the three workflows and the codeact.* activities on `worker`.
void register_codeact(temporal::Worker& worker, std::shared_ptr<WorkerEnv> env);

// Adds the workflows only (e.g. to a temporal::Replayer for regression checks).
void register_codeact_workflows(temporal::Replayer& replayer);

}  // namespace codeact::durable
