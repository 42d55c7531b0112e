// The workflow side of the durable agent: the ONE bound agent, run by the ONE loop, with each of
// its effects turned into an activity (after pydantic-ai's TemporalAgent / temporalize_toolset).
//
//   DurableModel     the agent's model: each request is a codeact.model_request activity; the
//                    worker renders the instructions there (they read the sandbox) and reports
//                    them, so the conversation records what the model was told, as in direct mode
//                    (agent::AsyncModel::evaluates_instructions).
//   DurableToolset   stands for one of the bound agent's toolsets, by its id: it lists the tools
//                    the worker listed for that toolset, and each call is a codeact.tool_call
//                    activity routed to the toolset with that id. Any toolset, not just the
//                    sandbox's.
//
// The contract a toolset gets in durable mode (it differs from direct mode in two ways):
//   - Its tools are listed ONCE per workflow run, by codeact.agent_prepare, and that list serves
//     every step (a chat lists them again after each continue-as-new). A toolset whose tools
//     change during a run is not asked again: a tool it no longer has is refused on the worker
//     and goes back to the model as a retry prompt ("unknown tool ..."), a tool it gained is not
//     offered. Listing per step would schedule one more activity per step (new commands in
//     every workflow history).
//   - call_tool's RunContext is the step's (deps, run id and step, usage, prompt, the call's
//     name, id and retries) without executor, cancel and messages: ctx.messages is null, as
//     shipping the conversation with every call would make each step's payload as large as its
//     model request. A toolset that needs the conversation runs in direct mode only.
//   ActivityRunSteps the steps of codeact::SandboxRun as activities (codeact.sandbox_start,
//                    codeact.sandbox_files, codeact.sandbox_finish, codeact.agent_prepare); its
//                    prepare step builds the agent::Agent from what the worker's binding reported
//                    (AgentPrepareOutput) with DurableToolsets, and drivers with a DurableModel
//                    and the workflow's clock.
//
// Everything goes through an ActivityCaller: a workflow's (workflows.cpp: WorkflowContext
// execute_activity with the policy's options), or a test's that runs the activities in-process.
// Payloads are built and read only through payloads.hpp: a malformed result is an error, never a
// throw. Thread-compatible: used from the workflow's one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codeact/agent/agent.hpp"
#include "codeact/codeact/sandbox_run.hpp"
#include "codeact/core/result.hpp"
#include "codeact/durable/payloads.hpp"

namespace codeact::durable {

// How the workflow side reaches the worker.
class ActivityCaller {
 public:
  virtual ~ActivityCaller() = default;
  // Schedules the activity and gives its result, or its failure as an Error. (By value: the
  // coroutine runs after the caller's temporaries are gone.)
  virtual agent::Task<core::Result<Json>> call(std::string activity, Json input,
                                               ActivityPolicy policy) = 0;
  // A cancel of the run was requested: no new model request or tool call is scheduled.
  virtual bool cancel_requested() const = 0;
  // Timestamps for message parts (RFC 3339), deterministic in a workflow.
  virtual std::string now() = 0;
};

class DurableModel final : public agent::AsyncModel {
 public:
  // REQUIRES: `caller` outlives this object.
  DurableModel(ActivityCaller& caller, AgentTarget target, ActivityPolicy policy,
               std::string model_name);
  agent::Task<core::Result<agent::ModelReply>> request(const agent::ModelCall& call) override;
  std::string model_name() const override { return model_name_; }
  bool evaluates_instructions() const override { return true; }

 private:
  ActivityCaller& caller_;
  AgentTarget target_;
  ActivityPolicy policy_;
  std::string model_name_;
};

class DurableToolset final : public agent::Toolset {
 public:
  // REQUIRES: `caller` outlives this object.
  DurableToolset(ActivityCaller& caller, AgentTarget target, ToolsetListing listing,
                 ActivityPolicy policy);
  std::string id() const override { return listing_.id; }
  // The tools the worker listed when the agent was prepared (see the contract above).
  agent::Task<core::Result<std::vector<agent::ToolInfo>>> get_tools(
      const agent::RunContext& ctx) override;
  agent::Task<agent::ToolResult> call_tool(const agent::ToolCall& call,
                                           const agent::RunContext& ctx) override;

 private:
  ActivityCaller& caller_;
  AgentTarget target_;
  ToolsetListing listing_;
  ActivityPolicy policy_;
};

// The agent::Agent a workflow runs for `prepared` (model calls go through the drivers).
std::shared_ptr<agent::Agent> durable_agent(ActivityCaller& caller, const AgentTarget& target,
                                            const AgentPrepareOutput& prepared,
                                            const ActivityPolicies& policies);

class ActivityRunSteps final : public codeact::RunSteps {
 public:
  // `target` without sandbox_id: the steps name the sandbox. REQUIRES: `caller` outlives this.
  ActivityRunSteps(ActivityCaller& caller, AgentTarget target, ActivityPolicies policies);

  agent::Task<core::Result<codeact::SandboxStarted>> start_sandbox(
      const codeact::SandboxPlan& plan) override;
  agent::Task<core::Result<std::vector<sandbox::FileEntry>>> list_output(
      const std::string& sandbox_id) override;
  agent::Task<core::Status> finish_sandbox(const std::string& sandbox_id, codeact::SandboxEnd end,
                                           bool remove_volume) override;
  agent::Task<core::Result<codeact::PreparedAgent>> prepare_agent(
      const std::string& sandbox_id) override;

 private:
  ActivityCaller& caller_;
  AgentTarget target_;
  ActivityPolicies policies_;
};

}  // namespace codeact::durable
