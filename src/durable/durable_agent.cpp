// DurableModel, DurableToolset and ActivityRunSteps: the bound agent's effects as activities.
#include "codeact/durable/durable_agent.hpp"

#include "codeact/durable/activities.hpp"

namespace codeact::durable {

using core::Result;

DurableModel::DurableModel(ActivityCaller& caller, AgentTarget target, ActivityPolicy policy,
                           std::string model_name)
    : caller_(caller),
      target_(std::move(target)),
      policy_(policy),
      model_name_(std::move(model_name)) {}

agent::Task<Result<agent::ModelReply>> DurableModel::request(const agent::ModelCall& call) {
  if (caller_.cancel_requested()) co_return core::cancelled("the run was cancelled");
  ModelRequestInput in;
  in.target = target_;
  in.messages = *call.messages;
  in.settings = call.settings;
  in.params = call.params;
  if (call.ctx) in.ctx = *call.ctx;
  auto task = caller_.call(kModelRequestActivity, in.to_json(), policy_);
  Result<Json> r = co_await task;
  if (!r.ok()) co_return std::move(r).error();
  auto out = ModelRequestOutput::from_json(*r);
  if (!out.ok()) co_return std::move(out).error();
  co_return agent::ModelReply{std::move(out->response), std::move(out->instructions)};
}

DurableToolset::DurableToolset(ActivityCaller& caller, AgentTarget target, ToolsetListing listing,
                               ActivityPolicy policy)
    : caller_(caller), target_(std::move(target)), listing_(std::move(listing)), policy_(policy) {}

agent::Task<Result<std::vector<agent::ToolInfo>>> DurableToolset::get_tools(
    const agent::RunContext&) {
  co_return listing_.tools;
}

agent::Task<agent::ToolResult> DurableToolset::call_tool(const agent::ToolCall& call,
                                                         const agent::RunContext& ctx) {
  if (caller_.cancel_requested()) co_return core::cancelled("the run was cancelled");
  ToolCallInput in;
  in.target = target_;
  in.toolset = listing_.id;
  in.call = call;
  in.ctx = ctx;
  auto task = caller_.call(kToolCallActivity, in.to_json(), policy_);
  Result<Json> r = co_await task;
  if (!r.ok()) co_return std::move(r).error();
  auto parsed = tool_result_from_json(*r);
  if (!parsed.ok()) co_return std::move(parsed).error();
  co_return std::move(*parsed);
}

std::shared_ptr<agent::Agent> durable_agent(ActivityCaller& caller, const AgentTarget& target,
                                            const AgentPrepareOutput& prepared,
                                            const ActivityPolicies& policies) {
  agent::AgentOptions options;
  options.name = target.agent;
  options.system_prompts = prepared.system_prompts;
  options.max_tool_retries = prepared.max_tool_retries;
  for (const auto& listing : prepared.toolsets)
    options.toolsets.push_back(
        std::make_shared<DurableToolset>(caller, target, listing, policies.tool));
  return std::make_shared<agent::Agent>(nullptr, std::move(options));
}

// ---------------------------------------------------------------------------------------------

ActivityRunSteps::ActivityRunSteps(ActivityCaller& caller, AgentTarget target,
                                   ActivityPolicies policies)
    : caller_(caller), target_(std::move(target)), policies_(std::move(policies)) {}

agent::Task<Result<codeact::SandboxStarted>> ActivityRunSteps::start_sandbox(
    const codeact::SandboxPlan& plan) {
  auto task =
      caller_.call(kSandboxStartActivity, SandboxStartInput{plan}.to_json(), policies_.sandbox);
  Result<Json> r = co_await task;
  if (!r.ok()) co_return std::move(r).error();
  auto out = SandboxStartOutput::from_json(*r);
  if (!out.ok()) co_return std::move(out).error();
  co_return codeact::SandboxStarted{out->resumed, out->volume, out->host};
}

agent::Task<Result<std::vector<sandbox::FileEntry>>> ActivityRunSteps::list_output(
    const std::string& sandbox_id) {
  auto task = caller_.call(kSandboxFilesActivity, SandboxFilesInput{sandbox_id}.to_json(),
                           policies_.sandbox);
  Result<Json> r = co_await task;
  if (!r.ok()) co_return std::move(r).error();
  auto out = SandboxFilesOutput::from_json(*r);
  if (!out.ok()) co_return std::move(out).error();
  co_return std::move(out->files);
}

agent::Task<core::Status> ActivityRunSteps::finish_sandbox(const std::string& sandbox_id,
                                                           codeact::SandboxEnd end,
                                                           bool remove_volume) {
  auto task =
      caller_.call(kSandboxFinishActivity,
                   SandboxFinishInput{sandbox_id, end, remove_volume}.to_json(), policies_.sandbox);
  Result<Json> r = co_await task;
  if (!r.ok()) co_return std::move(r).error();
  auto out = SandboxFinishOutput::from_json(*r);
  if (!out.ok()) co_return std::move(out).error();
  co_return core::ok_status();
}

agent::Task<Result<codeact::PreparedAgent>> ActivityRunSteps::prepare_agent(
    const std::string& sandbox_id) {
  AgentTarget target = target_;
  target.bind.sandbox_id = sandbox_id;
  target.bind.tools.sandbox_id = sandbox_id;
  auto task =
      caller_.call(kAgentPrepareActivity, AgentPrepareInput{target}.to_json(), policies_.sandbox);
  Result<Json> r = co_await task;
  if (!r.ok()) co_return std::move(r).error();
  auto prepared = AgentPrepareOutput::from_json(*r);
  if (!prepared.ok()) co_return std::move(prepared).error();
  codeact::PreparedAgent out;
  out.agent = durable_agent(caller_, target, *prepared, policies_);
  out.model_name = prepared->model;
  out.drivers.model =
      std::make_shared<DurableModel>(caller_, target, policies_.model, prepared->model);
  ActivityCaller* caller = &caller_;
  out.drivers.now = [caller] { return caller->now(); };
  co_return out;
}

}  // namespace codeact::durable
