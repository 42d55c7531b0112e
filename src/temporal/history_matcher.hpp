// HistoryMatcher: the nondeterminism check of replay. The commands a workflow task produced
// must come back, one by one and in order, as the command events the server recorded after that
// task's WorkflowTaskCompleted (ActivityTaskScheduled for ScheduleActivityTask, TimerStarted for
// StartTimer, MarkerRecorded for RecordMarker, WorkflowExecutionCompleted for
// CompleteWorkflowExecution, ...); a different command, a command event the code did not
// produce, or a produced command the history does not have is nondeterminism.
//
// What "the same" means: the command type the event records, and for activities the activity
// id and type, timers the timer id, markers the name (and patch id, or local activity seq),
// child workflows the workflow id and type, cancellations the target. Inputs are not compared
// (as in the official SDKs: changing an argument is not a new history). A deprecated patch marker
// that the code no longer records is skipped. Mismatch messages name the workflow task, the
// command and the event.
//
// Owned by one WorkflowState; not thread-safe.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "codeact/core/result.hpp"
#include "temporal/api/command/v1/message.pb.h"
#include "temporal/api/history/v1/message.pb.h"

namespace codeact::temporal::internal {

class HistoryMatcher {
 public:
  using Command = ::temporal::api::command::v1::Command;
  using Event = ::temporal::api::history::v1::HistoryEvent;

  // True for an event that records a command (see above), which match() must be given.
  static bool is_command_event(const Event& e);

  // The commands of a workflow task, expected back (in this order, after those expected already).
  void expect(const std::vector<Command>& commands);
  // Matches the command event `e` with the oldest expected command and consumes it. Errors:
  // FailedPrecondition "in workflow task N the workflow code produced command C, but history has
  // event E" or "history has event E after workflow task N, but the workflow code produced no
  // command for it". REQUIRES: is_command_event(e).
  core::Status match(const Event& e, int task_index);
  // OK when every expected command has been matched. Otherwise FailedPrecondition "in workflow
  // task N the workflow code produced command C that history does not have (next is event E)",
  // `next` being the event where the commands should have been (null: "history ends").
  core::Status check_all_matched(const Event* next, int task_index) const;
  size_t pending() const { return expected_.size(); }

 private:
  std::deque<Command> expected_;  // produced, not yet matched with history
};

// "ScheduleActivityTask(activity_type='greet', activity_id='1')", "StartTimer(timer_id='2')", ...
std::string describe_command(const HistoryMatcher::Command& c);
// "event 5 ActivityTaskScheduled(activity_type='greet', activity_id='1')", "event 9 TimerFired".
std::string describe_event(const HistoryMatcher::Event& e);

}  // namespace codeact::temporal::internal
