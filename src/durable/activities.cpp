// The worker side of the durable agent: the codeact.* activities, each served from the ONE
// binding of the agent its payload names (the worker's own prompts, config, API keys, MCP
// sessions and sandboxes), so no secret ever travels in a payload.
#include "codeact/durable/activities.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/core/log.hpp"

namespace codeact::durable {
namespace {

using core::Result;
using temporal::ActivityContext;
using temporal::Args;

// Heartbeats while an activity works, so a worker that dies is noticed after the heartbeat
// timeout (not the start-to-close timeout), and sets cancel() when the workflow cancels the
// activity. Only then: ActivityContext::cancelled() is also set when this worker shuts down, and
// a cell must not be rolled back because a worker stops (the retry on another worker picks up
// its result through the execution id). A local activity has no heartbeats: its cancelled() is
// the workflow's cancel (or its timeout), watched here.
class Heartbeat {
 public:
  explicit Heartbeat(ActivityContext& ctx) : ctx_(ctx) {
    if (ctx_.info().local) {  // no heartbeats; cancelled() is the workflow's cancel (or timeout)
      thread_ = std::thread([this] {
        std::unique_lock lock(mu_);
        while (!done_) {
          if (ctx_.cancelled()) cancel_.cancel();
          cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; });
        }
      });
      return;
    }
    if (ctx_.info().heartbeat_timeout.count() <= 0) return;
    // The first beat waits a little: most calls end sooner and never pay for a heartbeat RPC.
    const auto first = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(1000),
                                                           ctx_.info().heartbeat_timeout / 4);
    thread_ = std::thread([this, first] {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, first, [this] { return done_; })) return;
      while (!done_) {
        lock.unlock();
        ctx_.heartbeat();
        if (ctx_.cancel_requested_by_server()) cancel_.cancel();
        lock.lock();
        cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; });
      }
    });
  }
  ~Heartbeat() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  const core::CancelToken* cancel() const { return &cancel_; }

 private:
  ActivityContext& ctx_;
  core::CancelToken cancel_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

// Runs a Task to its end on this (activity) thread.
template <typename T>
T run_here(agent::Task<T> task) {
  agent::RunLoop loop;
  return loop.run(std::move(task));
}

}  // namespace

struct CodeActActivities::State {
  std::shared_ptr<WorkerEnv> env;
  codeact::AgentBinder binder;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const codeact::CodeActAgent>> made;  // GUARDED_BY(mu)

  explicit State(std::shared_ptr<WorkerEnv> e)
      : env(std::move(e)), binder(env->builder, env->backend) {}

  // The agent by name: one registered in C++ (WorkerEnv::agents), else make_agent (once).
  Result<std::shared_ptr<const codeact::CodeActAgent>> agent(const std::string& name) {
    if (auto it = env->agents.find(name); it != env->agents.end())
      return std::shared_ptr<const codeact::CodeActAgent>(it->second);
    std::lock_guard lock(mu);
    if (auto it = made.find(name); it != made.end())
      return std::shared_ptr<const codeact::CodeActAgent>(it->second);
    CODEACT_TRY(auto a, codeact::make_agent(name, binder.builder()));
    made[name] = a;
    return std::shared_ptr<const codeact::CodeActAgent>(a);
  }

  Result<codeact::AgentBinding> bind(const AgentTarget& target) {
    CODEACT_TRY(auto a, agent(target.agent));
    return binder.bind(a, target.bind);
  }
};

CodeActActivities::CodeActActivities(std::shared_ptr<WorkerEnv> env)
    : state_(std::make_unique<State>(std::move(env))) {}
CodeActActivities::~CodeActActivities() = default;

Result<SandboxStartOutput> CodeActActivities::sandbox_start(const SandboxStartInput& in) {
  CODEACT_TRY(auto started, codeact::start_sandbox(*state_->env->backend, in.plan));
  return SandboxStartOutput{in.plan.sandbox_id,   started.resumed, started.volume,
                            state_->env->host_id, started.shared,  started.cell};
}

Result<SandboxFilesOutput> CodeActActivities::sandbox_files(const SandboxFilesInput& in) {
  CODEACT_TRY(auto files, state_->env->backend->list_files(in.sandbox_id, "/output"));
  return SandboxFilesOutput{std::move(files)};
}

Result<SandboxFinishOutput> CodeActActivities::sandbox_finish(const SandboxFinishInput& in) {
  CODEACT_TRY_STATUS(
      codeact::end_sandbox(*state_->env->backend, in.sandbox_id, in.end, in.remove_volume));
  return SandboxFinishOutput{in.end, in.end == codeact::SandboxEnd::kRemove && in.remove_volume};
}

Result<AgentPrepareOutput> CodeActActivities::agent_prepare(const AgentPrepareInput& in) {
  CODEACT_TRY(auto binding, state_->bind(in.target));
  AgentPrepareOutput out;
  // Fails early, and clearly, when this worker has no such model or no key for it.
  CODEACT_TRY(out.model, binding.model_name());
  CODEACT_TRY(out.system_prompts, binding.system_prompts());
  agent::RunContext ctx;
  ctx.agent_name = binding.agent_name();
  ctx.deps = Json{{"sandbox_id", in.target.bind.sandbox_id}};
  for (const auto& toolset : binding.toolsets()) {
    auto listed = run_here(toolset->get_tools(ctx));
    if (!listed.ok())
      return std::move(listed).error().with_context("listing the tools of toolset \"" +
                                                    toolset->id() + "\"");
    out.toolsets.push_back(ToolsetListing{toolset->id(), std::move(*listed)});
  }
  out.max_tool_retries = binding.agent_options({}).max_tool_retries;
  return out;
}

Result<ModelRequestOutput> CodeActActivities::model_request(const ModelRequestInput& in,
                                                            const core::CancelToken* cancel) {
  CODEACT_TRY(auto binding, state_->bind(in.target));
  CODEACT_TRY(auto model, binding.model());
  if (in.messages.empty() || !std::holds_alternative<llm::ModelRequest>(in.messages.back()))
    return core::invalid_argument(
        "codeact.model_request input: the messages must end with a request");
  // The instructions as the loop would evaluate them (Agent::instructions), here, next to the
  // sandbox they read.
  const agent::Agent bound(model, binding.agent_options({}));
  agent::RunContext ctx = in.ctx.value_or(agent::RunContext{});
  ctx.agent_name = binding.agent_name();
  ctx.deps = Json{{"sandbox_id", in.target.bind.sandbox_id}};
  ctx.executor = nullptr;
  ctx.cancel = nullptr;
  std::vector<llm::ModelMessage> messages = in.messages;
  ctx.messages = &messages;
  auto instructions = run_here(bound.instructions(ctx));
  if (!instructions.ok())
    return std::move(instructions).error().with_context("rendering the instructions");
  std::get<llm::ModelRequest>(messages.back()).instructions = *instructions;
  const llm::ModelSettings settings = model->default_settings().merged(in.settings);
  CODEACT_TRY(auto response, model->request(messages, settings, in.params, cancel));
  return ModelRequestOutput{std::move(response), std::move(*instructions)};
}

Result<agent::ToolResult> CodeActActivities::tool_call(const ToolCallInput& in,
                                                       const std::string& workflow_id,
                                                       const core::CancelToken* cancel) {
  CODEACT_TRY(auto binding, state_->bind(in.target));
  CODEACT_TRY(auto toolset, binding.toolset(in.toolset));
  agent::RunContext ctx = in.ctx;
  ctx.executor = nullptr;
  ctx.cancel = cancel;
  ctx.deps = Json{{"sandbox_id", in.target.bind.sandbox_id}};
  if (state_->env->live_output && !workflow_id.empty())
    ctx.on_output = state_->env->live_output->call_sink(workflow_id, ctx);
  auto listed = run_here(toolset->get_tools(ctx));
  if (!listed.ok()) return std::move(listed).error();
  const bool known = std::any_of(listed->begin(), listed->end(), [&](const agent::ToolInfo& t) {
    return t.name() == in.call.tool_name;
  });
  if (!known) {
    return agent::ToolResult(agent::ToolOutcome{agent::ModelRetry{
        "unknown tool " + in.call.tool_name + " in toolset \"" + in.toolset + "\""}});
  }
  agent::ToolResult result = run_here(toolset->call_tool(in.call, ctx));
  // Docker or kernel trouble is worth retrying (Temporal does, with the same execution id);
  // whatever the model can act on goes back to it.
  if (!result.ok() && core::is_retryable(result.error().code())) return std::move(result).error();
  return result;
}

Result<Json> CodeActActivities::call(const std::string& name, const Json& input,
                                     const std::string& workflow_id,
                                     const core::CancelToken* cancel) {
  if (name == kSandboxStartActivity) {
    CODEACT_TRY(auto in, SandboxStartInput::from_json(input));
    auto out = sandbox_start(in);
    // Whether the start succeeded or failed part-way (a container made, its kernel not up), a
    // sandbox whose workflow is gone is removed: no retry and no reaper would come for it.
    if (state_->env->workflow_ended && !workflow_id.empty() &&
        state_->env->workflow_ended(workflow_id)) {
      auto removed = state_->env->backend->remove(in.plan.sandbox_id, false);
      if (!removed.ok() && removed.error().code() == core::Code::kNotFound)
        removed = core::ok_status();
      return core::failed_precondition(fmt::format(
          "sandbox \"{}\": workflow \"{}\" ended while its sandbox started{}; the sandbox was {} "
          "(its volume is kept)",
          in.plan.sandbox_id, workflow_id,
          out.ok() ? "" : " (the start failed: " + out.error().message() + ")",
          removed.ok() ? "removed" : "not removed: " + removed.error().message()));
    }
    if (!out.ok()) return std::move(out).error();
    return out->to_json();
  }
  if (name == kSandboxFilesActivity) {
    CODEACT_TRY(auto in, SandboxFilesInput::from_json(input));
    CODEACT_TRY(auto out, sandbox_files(in));
    return out.to_json();
  }
  if (name == kSandboxFinishActivity) {
    CODEACT_TRY(auto in, SandboxFinishInput::from_json(input));
    CODEACT_TRY(auto out, sandbox_finish(in));
    return out.to_json();
  }
  if (name == kAgentPrepareActivity) {
    CODEACT_TRY(auto in, AgentPrepareInput::from_json(input));
    CODEACT_TRY(auto out, agent_prepare(in));
    return out.to_json();
  }
  if (name == kModelRequestActivity) {
    CODEACT_TRY(auto in, ModelRequestInput::from_json(input));
    if (!in.sandbox_host.empty() && in.sandbox_host != state_->env->host_id) {
      throw temporal::ApplicationError(
          kSandboxElsewhereType,
          fmt::format("sandbox \"{}\" is on host \"{}\", not on this worker's host \"{}\"",
                      in.target.bind.sandbox_id, in.sandbox_host, state_->env->host_id),
          /*non_retryable=*/true);
    }
    CODEACT_TRY(auto out, model_request(in, cancel));
    return out.to_json();
  }
  if (name == kToolCallActivity) {
    CODEACT_TRY(auto in, ToolCallInput::from_json(input));
    CODEACT_TRY(auto out, tool_call(in, workflow_id, cancel));
    return to_json(out);
  }
  return core::not_found("no activity \"" + name + "\" among the codeact.* activities");
}

void register_codeact(temporal::Worker& worker, std::shared_ptr<WorkerEnv> env) {
  for (auto& [name, fn] : workflow_functions()) worker.register_workflow(name, fn);
  register_codeact_activities(worker, std::make_shared<CodeActActivities>(std::move(env)));
}

void register_codeact_activities(temporal::Worker& worker,
                                 std::shared_ptr<CodeActActivities> activities) {
  for (const char* name : {kSandboxStartActivity, kSandboxFilesActivity, kSandboxFinishActivity,
                           kAgentPrepareActivity, kModelRequestActivity, kToolCallActivity}) {
    worker.register_activity(
        name, [activities, name](ActivityContext& ctx, const Args& args) -> Result<Json> {
          if (args.size() != 1)
            return core::invalid_argument(
                fmt::format("{}: expected one argument, got {}", name, args.size()));
          Heartbeat hb(ctx);
          const auto start = std::chrono::steady_clock::now();
          auto out = activities->call(name, args[0], ctx.info().workflow_id, hb.cancel());
          core::log().debug(
              "{} took {:.1f} ms", name,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
          return out;
        });
  }
}

}  // namespace codeact::durable
