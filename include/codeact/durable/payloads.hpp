// What crosses Temporal: the durable workflows' inputs and outputs and the codeact.* activities'
// payloads, each a struct with ONE JSON mapping (to_json / from_json here, nowhere else).
//
// from_json is strict: a missing required key, a value of the wrong type and an unknown key (a
// misspelling) are InvalidArgument errors naming the payload and the key, never a silent
// default; null means "not set" for optional keys. The exceptions are what clients read from
// a worker that may be newer (ChatOutput, AgentOutputReply, ProgressReply): they ignore keys
// they do not know. What a failure does:
//   - a malformed activity input fails the activity as InvalidArgument, which is not retried;
//   - a malformed workflow input or activity result fails the workflow with the message (workflow
//     code reads payloads only through these functions, so nothing there throws).
// The readers accept every shape these workflows have written (tests/durable/histories): runs in
// flight keep replaying across upgrades. No payload holds a credential: names and data only.
//
// Plain data; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codeact/agent/agent.hpp"
#include "codeact/agent/toolset.hpp"
#include "codeact/codeact/agent_binding.hpp"
#include "codeact/codeact/sandbox_run.hpp"
#include "codeact/codeact/sandbox_tools.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/llm/messages.hpp"
#include "codeact/llm/model.hpp"
#include "codeact/sandbox/sandbox_types.hpp"

namespace codeact::durable {

using core::Json;

// ---------------------------------------------------------------------------------------------
// Activity options (app_conf.yml `durable.activities`, and the workflow input's "activities")

// The longest time an activity option (or a chat's idle timeout) may say: ten years. Larger
// values, like NaN and infinities, are InvalidArgument errors, not overflowing timeouts.
inline constexpr double kMaxPolicySeconds = 10.0 * 365 * 24 * 3600;

// Every duration is in seconds, finite and at most kMaxPolicySeconds.
struct ActivityPolicy {
  double start_to_close_seconds = 600;
  double heartbeat_seconds = 10;  // 0 = no heartbeat timeout
  int max_attempts = 0;           // 0 = unlimited
  double initial_retry_seconds = 1;
  Json to_json() const;
  // Missing keys keep `defaults`.
  static core::Result<ActivityPolicy> from_json(const Json& j, ActivityPolicy defaults);
};

struct ActivityPolicies {
  ActivityPolicy model{300, 10, 5, 1};
  ActivityPolicy tool{1800, 10, 10, 1};   // a cell's own timeout is enforced by the kernel
  ActivityPolicy sandbox{900, 10, 5, 1};  // start may build an image or install packages
  // How long an activity may wait on its sandbox's host queue for that host's worker to take it
  // (a schedule-to-start timeout, docs/deploy.md) before the run gives the host up as lost:
  // long enough for a worker's restart or the host's reboot. 0 = wait for the host however long
  // it is away.
  double host_timeout_seconds = 600;
  // Whether a run's model requests are local activities (run by the worker running the
  // workflow, only the answer recorded; docs/temporal.md) or activities of their own (each
  // request's whole conversation in history, queries answered at once while it runs).
  bool local_model_requests = true;
  Json to_json() const;
  // {model?, tool?, sandbox?, host_timeout_seconds?, local_model_requests?}; missing kinds and
  // keys keep their defaults. to_json writes host_timeout_seconds and local_model_requests only
  // when they are not the default (workers before them refuse unknown keys).
  static core::Result<ActivityPolicies> from_json(const Json& j);
};

// ---------------------------------------------------------------------------------------------
// Workflow inputs and outputs

// What a task run needs; the input of CodeActTaskWorkflow. No secrets.
struct TaskInput {
  std::string task;                    // REQUIRED
  std::string agent = "simple_agent";  // a name the worker knows (registered, or agent_prompts.yml)
  std::string model;                   // "provider:model"; "" = the worker's configured model
  std::string sandbox_id;              // "" = the workflow id
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  // Names of the worker's app_conf.yml mcp_servers whose tools cells may call (besides the
  // agent's own). Names only: the servers, their credentials and sessions live on the worker.
  std::vector<std::string> mcp_servers;
  bool network = false;
  std::string disk;           // the sandbox's disk limit ("10g", "none"); "" = the worker's default
  bool keep_sandbox = false;  // leave container and volume as they are at the end (wins)
  bool remove_volume = false;  // remove the container and its volume at the end
  std::optional<agent::UsageLimits> usage_limits;
  codeact::SandboxToolsOptions tools;  // sandbox_id is filled in by the workflow
  ActivityPolicies activities;
  std::vector<llm::ModelMessage> message_history;
  // The sandbox starts as a fork of another's checkpoint (a forked chat); JSON "fork_from":
  // {sandbox, checkpoint}, written only when set.
  std::optional<codeact::SandboxFork> fork_from;
  // The host (a worker's --host-id) the sandbox lives on, or must start on; "" = the host of the
  // first worker that takes its start (docs/deploy.md). Written only when set.
  std::string host;
  // The sandbox's state is on shared storage, so it may move when its host is lost: carried by
  // a chat's continue-as-new, whose run starts no sandbox to learn it from (sandbox_host.hpp).
  // JSON "shared_storage", written only when true.
  bool shared_storage = false;

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
  std::string warning;  // "" = none; e.g. stopping the sandbox at the end failed
  Json to_json() const;
  static core::Result<TaskOutput> from_json(const Json& j);
};

// One answered message of a chat: {task, output, files, usage} when the agent answered,
// {task, output: null, files, error} when its run failed; with "message_id" when the message
// carried an id.
struct ChatTurn {
  std::string task;
  std::string message_id;             // the ChatMessage's id; "" when it had none
  std::optional<std::string> output;  // unset when the run failed
  std::vector<std::string> files;     // produced while answering (sandbox paths under /output)
  Json usage = Json::object();        // requests, tokens, tool_calls; written when answered
  std::optional<std::string> error;   // why the run failed
  // The checkpoint its last cell made ({sandbox, checkpoint}; unset when no cell committed):
  // where a chat forked after this turn starts (durable/chat_fork.hpp).
  std::optional<codeact::SandboxFork> checkpoint;
  Json to_json() const;
  static core::Result<ChatTurn> from_json(const Json& j);
};

// The turn that answers the message with id `message_id`, if there is one yet (null otherwise,
// and for an empty id). Points into `turns`.
const ChatTurn* find_turn(const std::vector<ChatTurn>& turns, const std::string& message_id);

// A message for a chat: the send_user_task signal's argument, a string or {"task": ...,
// "id"?: ...}. The id is the sender's: the turn that answers the message carries it as
// message_id, so a sender finds its answer whatever else was sent meanwhile. to_json writes
// the bare string when there is no id. from_json refuses an empty task.
struct ChatMessage {
  std::string task;
  std::string id;  // "" = none
  Json to_json() const;
  static core::Result<ChatMessage> from_json(const Json& j);
};

struct ChatInput {
  TaskInput base;  // everything but task; base.task is unused
  double idle_timeout_seconds = 3600;
  int max_turns_per_run = 20;
  // Carried across continue-as-new:
  std::vector<ChatTurn> turns;
  std::vector<ChatMessage> pending;  // messages received, not yet answered
  bool sandbox_started = false;
  int runs = 1;  // workflow runs of this chat so far (1 + continue-as-new count)
  Json to_json() const;
  // null is a chat with defaults. "pending" items are messages (ChatMessage).
  static core::Result<ChatInput> from_json(const Json& j);
};

// The result of CodeActChatWorkflow.
struct ChatOutput {
  std::vector<ChatTurn> turns;
  std::string sandbox_id;
  std::string reason;  // "stopped" | "idle"
  int runs = 1;
  std::string warning;  // "" = none; e.g. stopping the sandbox at the end failed
  Json to_json() const;
  static core::Result<ChatOutput> from_json(const Json& j);
};

// A send_user_task signal that was not a message, as the chat reports it.
struct RejectedMessage {
  std::string sent;  // what was sent, as JSON cut to 60 characters
  std::string error;
  Json to_json() const;
  static core::Result<RejectedMessage> from_json(const Json& j);
};

// The rejection of the message with id `message_id` (its `sent` names the id: a rejected
// message's preview starts with its keys in order, "id" first), if it was rejected; null
// otherwise, and for an empty id. Points into `rejected`.
const RejectedMessage* find_rejected(const std::vector<RejectedMessage>& rejected,
                                     const std::string& message_id);

// The reply of the chat's "conversation" query: what a fork of the chat starts from
// (durable/chat_fork.hpp).
struct ConversationReply {
  TaskInput base;  // the chat's input (sandbox_id filled in; task, message_history unused)
  std::vector<ChatTurn> turns;
  std::vector<llm::ModelMessage> messages;  // the conversation as the model reads it now
  Json to_json() const;
  static core::Result<ConversationReply> from_json(const Json& j);
};

// The reply of the chat's "agent_output" query.
struct AgentOutputReply {
  std::vector<ChatTurn> turns;
  int64_t pending = 0;  // messages queued, not yet answered
  std::string status;   // "starting" | "idle" | "running" | "finishing" | a reason
  std::string sandbox_id;
  std::vector<RejectedMessage> rejected;  // this workflow run's malformed messages
  Json to_json() const;
  static core::Result<AgentOutputReply> from_json(const Json& j);
};

// The reply of the "progress" query (both workflows), argument {since: n} or n.
struct ProgressReply {
  // Agent events (agent::to_json), and {"event_kind": "sandbox" | "files" | "message_rejected" |
  // "cancelled" | "user_message" {task, turn} (before the agent answers it) | "turn_failed"
  // {turn, error} (a chat's turn) | "run_failed" {error} (the workflow fails with it)}. These
  // live in query state only (no commands), so adding a kind keeps old histories replaying.
  std::vector<Json> events;
  int64_t next = 0;  // the index to ask for next
  std::string status;
  std::string sandbox_id;
  std::string run_id;  // the workflow run: `next` restarts at 0 after a continue-as-new
  Json to_json() const;
  static core::Result<ProgressReply> from_json(const Json& j);
};

// ---------------------------------------------------------------------------------------------
// Activity payloads

// The bound agent an agent activity serves: which agent, bound how (codeact::BindOptions). The
// worker binds the same agent again from it. JSON: the keys agent, sandbox_id, model, mcp_servers
// and tools at the top level of the activity's input.
struct AgentTarget {
  std::string agent;          // REQUIRED
  codeact::BindOptions bind;  // bind.sandbox_id REQUIRED
};

// codeact.sandbox_start
struct SandboxStartInput {
  codeact::SandboxPlan plan;  // keep_sandbox / remove_volume do not travel (the end decides)
  Json to_json() const;
  static core::Result<SandboxStartInput> from_json(const Json& j);
};
struct SandboxStartOutput {
  std::string sandbox_id;
  bool resumed = false;
  std::string volume;
  std::string host;  // the worker's host id; "" from workers before hosts (written when set)
  // On shared storage (written only then): another host can start it (SandboxHost moves it when
  // its host is lost), and the cell whose state it has.
  bool shared = false;
  int64_t cell = 0;
  Json to_json() const;
  static core::Result<SandboxStartOutput> from_json(const Json& j);
};

// codeact.sandbox_files
struct SandboxFilesInput {
  std::string sandbox_id;
  Json to_json() const;
  static core::Result<SandboxFilesInput> from_json(const Json& j);
};
struct SandboxFilesOutput {
  std::vector<sandbox::FileEntry> files;  // under /output
  Json to_json() const;
  static core::Result<SandboxFilesOutput> from_json(const Json& j);
};

// codeact.sandbox_finish
struct SandboxFinishInput {
  std::string sandbox_id;
  codeact::SandboxEnd end = codeact::SandboxEnd::kStop;  // JSON "mode": "stop" | "remove" | "keep"
  bool remove_volume = false;
  Json to_json() const;
  static core::Result<SandboxFinishInput> from_json(const Json& j);
};
struct SandboxFinishOutput {
  codeact::SandboxEnd end = codeact::SandboxEnd::kStop;
  bool volume_removed = false;
  Json to_json() const;
  static core::Result<SandboxFinishOutput> from_json(const Json& j);
};

// codeact.agent_prepare
struct AgentPrepareInput {
  AgentTarget target;
  Json to_json() const;
  static core::Result<AgentPrepareInput> from_json(const Json& j);
};
// The tools of one of the bound agent's toolsets, as listed on the worker.
struct ToolsetListing {
  std::string id;
  std::vector<agent::ToolInfo> tools;
};
// The bound agent as the workflow runs it (AgentBinding: its system prompt rendered from the
// sandbox, its toolsets' tools, its retries, its model's name). Reads the first shape too, whose
// one toolset ("tools") was SandboxTools.
struct AgentPrepareOutput {
  std::vector<std::string> system_prompts;
  std::vector<ToolsetListing> toolsets;
  int max_tool_retries = 3;
  std::string model;
  Json to_json() const;
  static core::Result<AgentPrepareOutput> from_json(const Json& j);
};

// codeact.model_request: the model request of one step; the worker renders the instructions
// (they read the sandbox) and puts them on the last request before calling the model.
struct ModelRequestInput {
  AgentTarget target;
  std::vector<llm::ModelMessage> messages;
  llm::ModelSettings settings;
  llm::ModelRequestParameters params;
  std::optional<agent::RunContext> ctx;  // the step's context for the instructions
  // The host whose engine holds the sandbox the instructions read ("" = any worker may render
  // them): a worker of another host refuses with kSandboxElsewhereType (activities.hpp).
  std::string sandbox_host;
  Json to_json() const;
  static core::Result<ModelRequestInput> from_json(const Json& j);
};
// Reads the first shape too: the bare response, no instructions (the workflow then recorded
// none).
struct ModelRequestOutput {
  llm::ModelResponse response;
  std::optional<std::string> instructions;  // what the worker put on the request
  Json to_json() const;
  static core::Result<ModelRequestOutput> from_json(const Json& j);
};

// codeact.tool_call: one call of one of the bound agent's toolsets; the result is a ToolResult.
struct ToolCallInput {
  AgentTarget target;
  std::string toolset = codeact::SandboxTools::kId;  // the toolset's id()
  agent::ToolCall call;
  agent::RunContext ctx;  // executor, cancel and messages are not sent (messages is null there)
  Json to_json() const;
  static core::Result<ToolCallInput> from_json(const Json& j);
};

// ---------------------------------------------------------------------------------------------
// Values inside payloads

// {deps, agent_name, run_id, run_step, usage, prompt, tool_name, tool_call_id, retry, max_retries}
Json to_json(const agent::RunContext& ctx);
core::Result<agent::RunContext> run_context_from_json(const Json& j);
// {"kind": "return", content, text?} | {"kind": "retry", message} | {"kind": "error", code,
// message}
Json to_json(const agent::ToolResult& result);
core::Result<agent::ToolResult> tool_result_from_json(const Json& j);
// {definition, max_retries (null = the agent's), sequential}
Json to_json(const agent::ToolInfo& info);
core::Result<agent::ToolInfo> tool_info_from_json(const Json& j);
// {sandbox_id, default_timeout_seconds, max_timeout_seconds, max_output_bytes, max_read_bytes,
//  max_retries, files_root}; missing keys keep their defaults; the result is validate()d unless
// sandbox_id is empty (a workflow input's options, bound later).
Json to_json(const codeact::SandboxToolsOptions& options);
core::Result<codeact::SandboxToolsOptions> sandbox_tools_options_from_json(const Json& j);
// {path, size, mtime}
Json to_json(const sandbox::FileEntry& file);
Json to_json(const agent::UsageLimits& limits);
core::Result<agent::UsageLimits> usage_limits_from_json(const Json& j);

}  // namespace codeact::durable
