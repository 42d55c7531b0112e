// CodeActActivities: the worker side of the durable agent — the six codeact.* activities as
// functions of their typed payloads (payloads.hpp), served from the ONE binding of the agent they
// name (codeact::AgentBinder) on the worker's own config, API keys, MCP sessions and sandboxes.
//
//   codeact.sandbox_start   start (or resume) the sandbox              (codeact::start_sandbox)
//   codeact.sandbox_files   its files under /output
//   codeact.sandbox_finish  stop, remove or keep it                     (codeact::end_sandbox)
//   codeact.agent_prepare   bind the agent: system prompt from the sandbox, the tools of each
//                           toolset, retries, the model's name (fails early without a model)
//   codeact.model_request   render the instructions from the sandbox's live state, put them on
//                           the last request, call the agent's model (its llm_model hook)
//   codeact.tool_call       one call of the toolset with the given id (SandboxTools: "sandbox");
//                           a cell's output is published while it runs (live_output.hpp)
//
// What fails how: a malformed payload, an unknown agent or toolset, and the model's mistakes are
// non-retryable (InvalidArgument/NotFound/...: a ModelRetry the model reads, for tool calls);
// Docker, kernel and provider trouble (Unavailable, DeadlineExceeded, ...) is returned as an
// error, so Temporal retries the activity (cells and scripts carry their execution id, so a retry
// never runs them twice).
//
// register_codeact() (workflows.hpp) registers call() under each name, with a heartbeat while it
// works. Cancellation: `cancel` (null = none) is set when the workflow cancels the activity (a
// cancelled run, or a chat's cancelled turn) — never because the worker stops, so a cell is not
// interrupted by a worker that goes away (its retry elsewhere gets the result by its execution
// id). A cell then stops as if interrupted, and a model call is abandoned. Thread-safe:
// activities run concurrently.
#pragma once

#include <memory>
#include <string>

#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/durable/payloads.hpp"
#include "codeact/durable/workflows.hpp"

namespace codeact::durable {

inline constexpr const char* kSandboxStartActivity = "codeact.sandbox_start";
inline constexpr const char* kSandboxFilesActivity = "codeact.sandbox_files";
inline constexpr const char* kSandboxFinishActivity = "codeact.sandbox_finish";
inline constexpr const char* kAgentPrepareActivity = "codeact.agent_prepare";
inline constexpr const char* kModelRequestActivity = "codeact.model_request";
inline constexpr const char* kToolCallActivity = "codeact.tool_call";

// The ApplicationFailure type (non-retryable) of a codeact.model_request sent to a worker of
// another host than its input's sandbox_host: the workflow, whose local activity ran in whichever
// worker took its task, then sends the request to the sandbox's host queue.
inline constexpr const char* kSandboxElsewhereType = "SandboxElsewhere";

class CodeActActivities {
 public:
  explicit CodeActActivities(std::shared_ptr<WorkerEnv> env);
  ~CodeActActivities();

  core::Result<SandboxStartOutput> sandbox_start(const SandboxStartInput& in);
  core::Result<SandboxFilesOutput> sandbox_files(const SandboxFilesInput& in);
  core::Result<SandboxFinishOutput> sandbox_finish(const SandboxFinishInput& in);
  core::Result<AgentPrepareOutput> agent_prepare(const AgentPrepareInput& in);
  core::Result<ModelRequestOutput> model_request(const ModelRequestInput& in,
                                                 const core::CancelToken* cancel = nullptr);
  // The call's result, or an error worth retrying (see above). While it runs, what the call
  // prints is published to WorkerEnv::live_output under `workflow_id` (the workflow the activity
  // works for; "" = not published).
  core::Result<agent::ToolResult> tool_call(const ToolCallInput& in,
                                            const std::string& workflow_id = "",
                                            const core::CancelToken* cancel = nullptr);

  // The activity `name` from and to JSON, as Temporal runs it, for the workflow `workflow_id`
  // (temporal::ActivityInfo::workflow_id; "" = none). NotFound for another name. Throws
  // temporal::ApplicationError of kSandboxElsewhereType for a codeact.model_request whose
  // sandbox_host is not this worker's host (WorkerEnv::host_id).
  core::Result<Json> call(const std::string& name, const Json& input,
                          const std::string& workflow_id = "",
                          const core::CancelToken* cancel = nullptr);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace codeact::durable
