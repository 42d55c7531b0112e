// Starting a task run under a workflow id the user chose (`codeact run --workflow-id ID`), so
// that the same command again never does the task twice: it follows the run that did it.
//
// TaskRunStarter looks at the latest run of the id, then starts or joins one:
// - the latest run is a CodeActTaskWorkflow that completed with this same input (its memo holds
//   the input): followed, nothing started;
// - it is running (or there is none): started with a reuse policy that refuses to replace a
//   closed run and a conflict policy that joins a running one, so when the run completes
//   between the look and the start (its first `codeact run` was killed moments before), the
//   start is refused (AlreadyExists) and the next look follows the completed run;
// - it closed with another input, failed, was cancelled or terminated: replaced by a new run.
// start_or_follow() is that loop. Thread-compatible; the Client is the caller's.
#pragma once

#include <optional>
#include <string>

#include "codeact/core/result.hpp"
#include "codeact/durable/payloads.hpp"
#include "codeact/temporal/client.hpp"

namespace codeact::durable {

// The memo field of a task run that holds its TaskInput.
inline constexpr const char* kTaskInputMemo = "codeact_task_input";

// What a look at the latest run of the id says to do.
enum class TaskStartStep {
  kFollowCompleted,       // it completed this same input: follow it
  kStartUnlessClosed,     // running or none: start or join, refusing to replace a closed run
  kStartReplacingClosed,  // closed otherwise: start a new run in its place
};

// `latest`: the latest run of the id, unset when there is none.
TaskStartStep next_task_start_step(const std::optional<temporal::WorkflowDescription>& latest,
                                   const TaskInput& in);

// The run to follow: `run.started` when this call started it.
struct FollowedRun {
  temporal::WorkflowRun run;
  bool completed_before = false;  // the latest run had done this task already
};

class TaskRunStarter {
 public:
  // `options`: id, task queue and the rest of the start; its memo gets the input, its policies
  // are set by each step.
  TaskRunStarter(temporal::Client& client, TaskInput in, temporal::StartWorkflowOptions options);

  // Looks at the latest run of the id, asking again while the server does not answer (for up to
  // the client's unavailable patience: an outage taken for "no such run" would do a completed
  // task again).
  core::Result<TaskStartStep> look();
  // Does `step`. A start refused because a run closed since the look is AlreadyExists.
  core::Result<FollowedRun> take(TaskStartStep step);

 private:
  temporal::Client& client_;
  TaskInput in_;
  temporal::StartWorkflowOptions options_;
  std::string completed_run_id_;  // the run the last look found completed with this input
};

// look() then take(), again (at most 3 times) while a start is refused because a run closed
// since its look.
core::Result<FollowedRun> start_or_follow(temporal::Client& client, const TaskInput& in,
                                          temporal::StartWorkflowOptions options);

}  // namespace codeact::durable
