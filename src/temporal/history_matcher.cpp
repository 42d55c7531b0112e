#include "history_matcher.hpp"

#include <cctype>

#include "markers.hpp"

namespace codeact::temporal::internal {

namespace enumsv1 = ::temporal::api::enums::v1;

namespace {

// The command type an event records, or UNSPECIFIED when the event is not a command's.
enumsv1::CommandType command_type_of(const HistoryMatcher::Event& e) {
  switch (e.event_type()) {
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
      return enumsv1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK;
    case enumsv1::EVENT_TYPE_TIMER_STARTED:
      return enumsv1::COMMAND_TYPE_START_TIMER;
    case enumsv1::EVENT_TYPE_MARKER_RECORDED:
      return enumsv1::COMMAND_TYPE_RECORD_MARKER;
    case enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
      return enumsv1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION;
    case enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
      return enumsv1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION;
    case enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
      return enumsv1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION;
    case enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
      return enumsv1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION;
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
      return enumsv1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK;
    case enumsv1::EVENT_TYPE_TIMER_CANCELED:
      return enumsv1::COMMAND_TYPE_CANCEL_TIMER;
    case enumsv1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
      return enumsv1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION;
    case enumsv1::EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
      return enumsv1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION;
    default:
      return enumsv1::COMMAND_TYPE_UNSPECIFIED;
  }
}

bool same_command(const HistoryMatcher::Command& c, const HistoryMatcher::Event& e) {
  if (c.command_type() != command_type_of(e)) return false;
  switch (c.command_type()) {
    case enumsv1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK: {
      const auto& a = c.schedule_activity_task_command_attributes();
      const auto& b = e.activity_task_scheduled_event_attributes();
      return a.activity_id() == b.activity_id() &&
             a.activity_type().name() == b.activity_type().name();
    }
    case enumsv1::COMMAND_TYPE_START_TIMER:
      return c.start_timer_command_attributes().timer_id() ==
             e.timer_started_event_attributes().timer_id();
    case enumsv1::COMMAND_TYPE_RECORD_MARKER: {
      if (c.record_marker_command_attributes().marker_name() !=
          e.marker_recorded_event_attributes().marker_name())
        return false;
      auto a = patch_marker(c);
      auto b = patch_marker(e);
      if (a && b && a->id != b->id) return false;
      auto la = local_activity_seq(c);
      auto lb = local_activity_seq(e);
      return !la || !lb || *la == *lb;
    }
    case enumsv1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: {
      const auto& a = c.start_child_workflow_execution_command_attributes();
      const auto& b = e.start_child_workflow_execution_initiated_event_attributes();
      return a.workflow_id() == b.workflow_id() &&
             a.workflow_type().name() == b.workflow_type().name();
    }
    case enumsv1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
      return c.request_cancel_external_workflow_execution_command_attributes().workflow_id() ==
             e.request_cancel_external_workflow_execution_initiated_event_attributes()
                 .workflow_execution()
                 .workflow_id();
    case enumsv1::COMMAND_TYPE_CANCEL_TIMER:
      return c.cancel_timer_command_attributes().timer_id() ==
             e.timer_canceled_event_attributes().timer_id();
    default:
      return true;
  }
}

}  // namespace

std::string describe_command(const HistoryMatcher::Command& c) {
  switch (c.command_type()) {
    case enumsv1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK: {
      const auto& a = c.schedule_activity_task_command_attributes();
      return "ScheduleActivityTask(activity_type='" + a.activity_type().name() +
             "', activity_id='" + a.activity_id() + "')";
    }
    case enumsv1::COMMAND_TYPE_START_TIMER:
      return "StartTimer(timer_id='" + c.start_timer_command_attributes().timer_id() + "')";
    case enumsv1::COMMAND_TYPE_RECORD_MARKER: {
      auto patch = patch_marker(c);
      auto la = local_activity_seq(c);
      return "RecordMarker(marker_name='" + c.record_marker_command_attributes().marker_name() +
             "'" + (patch ? ", patch_id='" + patch->id + "'" : std::string()) +
             (la ? ", seq=" + std::to_string(*la) : std::string()) + ")";
    }
    case enumsv1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: {
      const auto& a = c.start_child_workflow_execution_command_attributes();
      return "StartChildWorkflowExecution(workflow_type='" + a.workflow_type().name() +
             "', workflow_id='" + a.workflow_id() + "')";
    }
    case enumsv1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
      return "RequestCancelExternalWorkflowExecution(workflow_id='" +
             c.request_cancel_external_workflow_execution_command_attributes().workflow_id() + "')";
    case enumsv1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION:
      return "CompleteWorkflowExecution";
    case enumsv1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION:
      return "FailWorkflowExecution";
    case enumsv1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION:
      return "CancelWorkflowExecution";
    case enumsv1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION:
      return "ContinueAsNewWorkflowExecution";
    case enumsv1::COMMAND_TYPE_CANCEL_TIMER:
      return "CancelTimer(timer_id='" + c.cancel_timer_command_attributes().timer_id() + "')";
    case enumsv1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK:
      return "RequestCancelActivityTask(scheduled_event_id=" +
             std::to_string(
                 c.request_cancel_activity_task_command_attributes().scheduled_event_id()) +
             ")";
    default:
      return enumsv1::CommandType_Name(c.command_type());
  }
}

std::string describe_event(const HistoryMatcher::Event& e) {
  std::string id = "event " + std::to_string(e.event_id()) + " ";
  switch (e.event_type()) {
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
      const auto& a = e.activity_task_scheduled_event_attributes();
      return id + "ActivityTaskScheduled(activity_type='" + a.activity_type().name() +
             "', activity_id='" + a.activity_id() + "')";
    }
    case enumsv1::EVENT_TYPE_TIMER_STARTED:
      return id + "TimerStarted(timer_id='" + e.timer_started_event_attributes().timer_id() + "')";
    case enumsv1::EVENT_TYPE_MARKER_RECORDED: {
      auto patch = patch_marker(e);
      auto la = local_activity_seq(e);
      return id + "MarkerRecorded(marker_name='" +
             e.marker_recorded_event_attributes().marker_name() + "'" +
             (patch ? ", patch_id='" + patch->id + "'" : std::string()) +
             (la ? ", seq=" + std::to_string(*la) : std::string()) + ")";
    }
    case enumsv1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: {
      const auto& a = e.start_child_workflow_execution_initiated_event_attributes();
      return id + "StartChildWorkflowExecutionInitiated(workflow_type='" +
             a.workflow_type().name() + "', workflow_id='" + a.workflow_id() + "')";
    }
    case enumsv1::EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
      return id + "RequestCancelExternalWorkflowExecutionInitiated(workflow_id='" +
             e.request_cancel_external_workflow_execution_initiated_event_attributes()
                 .workflow_execution()
                 .workflow_id() +
             "')";
    case enumsv1::EVENT_TYPE_TIMER_CANCELED:
      return id + "TimerCanceled(timer_id='" + e.timer_canceled_event_attributes().timer_id() +
             "')";
    default: {
      // EVENT_TYPE_WORKFLOW_TASK_STARTED -> WorkflowTaskStarted
      std::string name = enumsv1::EventType_Name(e.event_type());
      const std::string prefix = "EVENT_TYPE_";
      if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
      std::string camel;
      bool up = true;
      for (char ch : name) {
        if (ch == '_') {
          up = true;
          continue;
        }
        camel += up ? ch : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        up = false;
      }
      return id + camel;
    }
  }
}

bool HistoryMatcher::is_command_event(const Event& e) {
  return command_type_of(e) != enumsv1::COMMAND_TYPE_UNSPECIFIED;
}

void HistoryMatcher::expect(const std::vector<Command>& commands) {
  expected_.insert(expected_.end(), commands.begin(), commands.end());
}

core::Status HistoryMatcher::match(const Event& e, int task_index) {
  // Code that no longer calls deprecate_patch() still replays histories that recorded it.
  if (auto patch = patch_marker(e); patch && patch->deprecated) {
    if (expected_.empty() || !same_command(expected_.front(), e)) return core::ok_status();
  }
  if (expected_.empty())
    return core::failed_precondition("history has " + describe_event(e) + " after workflow task " +
                                     std::to_string(task_index) +
                                     ", but the workflow code produced no command for it");
  const Command& c = expected_.front();
  if (!same_command(c, e))
    return core::failed_precondition("in workflow task " + std::to_string(task_index) +
                                     " the workflow code produced command " + describe_command(c) +
                                     ", but history has " + describe_event(e));
  expected_.pop_front();
  return core::ok_status();
}

core::Status HistoryMatcher::check_all_matched(const Event* next, int task_index) const {
  if (expected_.empty()) return core::ok_status();
  return core::failed_precondition(
      "in workflow task " + std::to_string(task_index) + " the workflow code produced command " +
      describe_command(expected_.front()) + " that history does not have (" +
      (next ? "next is " + describe_event(*next) : std::string("history ends")) + ")");
}

}  // namespace codeact::temporal::internal
