// TaskRunStarter: a task run started under a chosen workflow id, or followed (task_run_start.hpp).
#include "codeact/durable/task_run_start.hpp"

#include <chrono>
#include <thread>

#include "codeact/durable/workflows.hpp"

namespace codeact::durable {

TaskStartStep next_task_start_step(const std::optional<temporal::WorkflowDescription>& latest,
                                   const TaskInput& in) {
  if (!latest || latest->status == "Running") return TaskStartStep::kStartUnlessClosed;
  if (latest->workflow_type == kTaskWorkflow && latest->status == "Completed" &&
      latest->memo.value(kTaskInputMemo, core::Json()) == in.to_json()) {
    return TaskStartStep::kFollowCompleted;
  }
  return TaskStartStep::kStartReplacingClosed;
}

TaskRunStarter::TaskRunStarter(temporal::Client& client, TaskInput in,
                               temporal::StartWorkflowOptions options)
    : client_(client), in_(std::move(in)), options_(std::move(options)) {
  options_.memo = core::Json{{kTaskInputMemo, in_.to_json()}};
  options_.id_conflict_policy = temporal::IdConflictPolicy::kUseExisting;
}

core::Result<TaskStartStep> TaskRunStarter::look() {
  const auto deadline = std::chrono::steady_clock::now() + client_.unavailable_patience();
  auto d = client_.describe_workflow(options_.id);
  while (!d.ok() && d.error().code() == core::Code::kUnavailable &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    d = client_.describe_workflow(options_.id);
  }
  if (!d.ok() && d.error().code() != core::Code::kNotFound)
    return d.error().with_context("looking for workflow \"" + options_.id + "\"");
  std::optional<temporal::WorkflowDescription> latest;
  if (d.ok()) latest = *d;
  const TaskStartStep step = next_task_start_step(latest, in_);
  completed_run_id_ = step == TaskStartStep::kFollowCompleted ? latest->run_id : "";
  return step;
}

core::Result<FollowedRun> TaskRunStarter::take(TaskStartStep step) {
  if (step == TaskStartStep::kFollowCompleted) {
    return FollowedRun{temporal::WorkflowRun{options_.id, completed_run_id_, /*started=*/false},
                       true};
  }
  options_.id_reuse_policy = step == TaskStartStep::kStartReplacingClosed
                                 ? temporal::IdReusePolicy::kAllowDuplicate
                                 : temporal::IdReusePolicy::kRejectDuplicate;
  auto started = client_.start_workflow(kTaskWorkflow, temporal::Args{in_.to_json()}, options_);
  if (!started.ok()) return std::move(started).error();
  return FollowedRun{*started, false};
}

core::Result<FollowedRun> start_or_follow(temporal::Client& client, const TaskInput& in,
                                          temporal::StartWorkflowOptions options) {
  const std::string id = options.id;
  TaskRunStarter starter(client, in, std::move(options));
  for (int look = 0;; ++look) {
    CODEACT_TRY(TaskStartStep step, starter.look());
    auto taken = starter.take(step);
    if (taken.ok()) return taken;
    // Each refusal means a run closed since the look; a new one can only come from another
    // command on the same id, so a few looks are enough.
    if (taken.error().code() != core::Code::kAlreadyExists || look >= 3)
      return taken.error().with_context("starting workflow \"" + id + "\"");
  }
}

}  // namespace codeact::durable
