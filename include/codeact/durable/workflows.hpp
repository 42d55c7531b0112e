// The durable CodeAct agent: the ONE agent loop (agent::Agent::run_task) on the ONE binding of
// the agent (codeact::AgentBinder) in Temporal workflows, with each model request and each tool
// call an activity (DESIGN.md §1, layer `durable`; docs/durable.md).
//
// Workflows (names, signals and queries are stable: any Temporal client can drive them):
//   CodeActTaskWorkflow(TaskInput) -> TaskOutput
//       the codeact::SandboxRun of one task: start (or resume) the sandbox -> bind the agent ->
//       run the task -> end the sandbox as codeact::SandboxPlan::end says (stopped after a
//       success, its container removed after a failure or cancellation; container and volume
//       removed with remove_volume; both left alone with keep_sandbox). A failed run fails (or is
//       cancelled) with the error, and the cleanup's if it failed too; a cancel says what became
//       of the sandbox in a last "cancelled" progress event; a success whose cleanup failed
//       says so in TaskOutput::warning. Query "progress" {since: n} -> ProgressReply.
//   CodeActChatWorkflow(ChatInput) -> ChatOutput {turns, sandbox_id, reason, runs, warning?}
//       one sandbox for a conversation. Signal "send_user_task" (ChatMessage: a string, or
//       {"task": ...}) queues a message; one that is not a message is logged and reported (in
//       "agent_output".rejected and a "message_rejected" progress event), never failing the
//       workflow task. Signal "stop_chat" ends the chat after the current message. Query
//       "agent_output" -> AgentOutputReply; "progress" as above. Ends after
//       idle_timeout_seconds without a message. Continues as new
//       (carrying the conversation, the turns and queued messages) when the server suggests it
//       or after max_turns_per_run messages, so a long chat keeps a bounded history.
//   SimpleAgentWorkflow(user_task: str) -> str   the seed's workflow: a task run with defaults.
//
// Activities: the six codeact.* activities of activities.hpp, registered by register_codeact and
// run on a worker holding a WorkerEnv. Payloads (payloads.hpp) carry names and data only: the
// model name, the agent name, the sandbox id, the conversation (tool outputs cut to
// SandboxToolsOptions limits) — never a credential.
//
// Exactly-once cells: the run id the loop sees is "<workflow id>/<first run id>[/<turn>]", so
// every execute_python call carries execution id "<run id>/<step>/<tool_call_id>", the same on
// every retry of the activity and on every replay; the kernel answers a known id with the
// recorded result. Long calls heartbeat; a worker that dies is noticed after heartbeat_seconds
// and the call is retried elsewhere.
//
// Replay safety: tests/durable/histories holds recorded runs of these workflows; a change must
// keep them replaying (same activities in the same order), or take a new path behind
// ctx.patched("...") (docs/durable.md, "Replay safety").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/durable/live_output.hpp"
#include "codeact/durable/payloads.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"
#include "codeact/temporal/activity.hpp"
#include "codeact/temporal/worker.hpp"
#include "codeact/temporal/workflow.hpp"

namespace codeact::durable {

inline constexpr const char* kTaskWorkflow = "CodeActTaskWorkflow";
inline constexpr const char* kChatWorkflow = "CodeActChatWorkflow";
inline constexpr const char* kSimpleAgentWorkflow = "SimpleAgentWorkflow";
inline constexpr const char* kSendUserTask = "send_user_task";
inline constexpr const char* kStopChat = "stop_chat";
inline constexpr const char* kCancelTurn = "cancel_turn";
inline constexpr const char* kAgentOutputQuery = "agent_output";
inline constexpr const char* kProgressQuery = "progress";
// The chat's input, turns and conversation (ConversationReply): what a fork of it starts from.
inline constexpr const char* kConversationQuery = "conversation";
inline constexpr const char* kDefaultTaskQueue = "codeact";
// The patch under which a chat takes a send_user_task message with an "id" (ChatMessage): runs
// recorded before refused one as an unknown key, and replay so.
inline constexpr const char* kChatMessageIdPatch = "chat-message-id";

// What the activities run with, on a worker.
struct WorkerEnv {
  codeact::AgentBuilder builder;  // prompts, config (llm keys, mcp_servers), default model
  std::shared_ptr<sandbox::SandboxBackend> backend;
  // This worker's host (its --host-id): codeact.sandbox_start reports it, and the run sends the
  // sandbox's later activities to host_task_queue(queue, host_id), which only this host's
  // workers poll (docs/deploy.md). "" = not placed on hosts (every activity on the one queue).
  std::string host_id;
  // Agents by name, for agents defined in C++ (their own model, host functions, MCP hooks,
  // toolsets, excluded tools). A name not here is made by codeact::make_agent (simple_agent, or
  // any agent of agent_prompts.yml).
  std::map<std::string, std::shared_ptr<codeact::CodeActAgent>> agents;
  // Where codeact.tool_call publishes a cell's output while it runs, keyed by workflow id (a
  // server in this process subscribes); null = not published. CodeActWorkerRunner sets one.
  std::shared_ptr<LiveOutput> live_output;
  // Whether workflow `id` has no running run any more (it ended, or was deleted from Temporal);
  // false while it runs and when asking fails. codeact.sandbox_start asks after starting a
  // sandbox, and after a start that failed part-way: one whose workflow was terminated or deleted
  // meanwhile (DELETE /v1/sessions/{id} during the start) is removed at once (none there counts
  // as removed), volume kept, since no workflow code would ever stop it; the activity fails
  // with FailedPrecondition. Null = not asked. CodeActWorkerRunner sets it.
  std::function<bool(const std::string& id)> workflow_ended;
};

// Registers the three workflows and the codeact.* activities on `worker`.
void register_codeact(temporal::Worker& worker, std::shared_ptr<WorkerEnv> env);
// Registers the codeact.* activities served by `activities` (the runner shares one between the
// worker of its task queue and the one of its host's queue, sandbox_host.hpp).
class CodeActActivities;
void register_codeact_activities(temporal::Worker& worker,
                                 std::shared_ptr<CodeActActivities> activities);

// Adds the workflows only (e.g. to a temporal::Replayer for regression checks).
void register_codeact_workflows(temporal::Replayer& replayer);

// The Temporal options of an activity with `policy` (timeouts, heartbeat, retries).
// InvalidArgument when a duration is not a finite number of seconds in [0, kMaxPolicySeconds]
// (ActivityPolicy::from_json refuses those already; this guards policies built in C++).
core::Result<temporal::ActivityOptions> activity_options(const ActivityPolicy& policy);

// The workflows by name.
std::vector<std::pair<std::string, temporal::WorkflowFunction>> workflow_functions();

}  // namespace codeact::durable
