// HistoryMatcher: each kind of command against the event that records it, and the messages a
// nondeterministic change produces (they are what a developer reads when a deploy breaks runs).
#include "history_matcher.hpp"

#include <gtest/gtest.h>

#include "codec.hpp"
#include "markers.hpp"

namespace codeact::temporal::internal {
namespace {

namespace enumsv1 = ::temporal::api::enums::v1;
using Command = HistoryMatcher::Command;
using Event = HistoryMatcher::Event;

Command schedule_activity(const std::string& type, const std::string& id) {
  Command c;
  c.set_command_type(enumsv1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  auto* a = c.mutable_schedule_activity_task_command_attributes();
  a->mutable_activity_type()->set_name(type);
  a->set_activity_id(id);
  return c;
}
Event activity_scheduled(int64_t event_id, const std::string& type, const std::string& id) {
  Event e;
  e.set_event_id(event_id);
  e.set_event_type(enumsv1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
  auto* a = e.mutable_activity_task_scheduled_event_attributes();
  a->mutable_activity_type()->set_name(type);
  a->set_activity_id(id);
  return e;
}
Command start_timer(const std::string& id) {
  Command c;
  c.set_command_type(enumsv1::COMMAND_TYPE_START_TIMER);
  c.mutable_start_timer_command_attributes()->set_timer_id(id);
  return c;
}
Event timer_started(int64_t event_id, const std::string& id) {
  Event e;
  e.set_event_id(event_id);
  e.set_event_type(enumsv1::EVENT_TYPE_TIMER_STARTED);
  e.mutable_timer_started_event_attributes()->set_timer_id(id);
  return e;
}
Command cancel_timer(const std::string& id) {
  Command c;
  c.set_command_type(enumsv1::COMMAND_TYPE_CANCEL_TIMER);
  c.mutable_cancel_timer_command_attributes()->set_timer_id(id);
  return c;
}
Event timer_canceled(int64_t event_id, const std::string& id) {
  Event e;
  e.set_event_id(event_id);
  e.set_event_type(enumsv1::EVENT_TYPE_TIMER_CANCELED);
  e.mutable_timer_canceled_event_attributes()->set_timer_id(id);
  return e;
}
Command marker(const std::string& name, std::optional<PatchMarker> patch = std::nullopt) {
  Command c;
  c.set_command_type(enumsv1::COMMAND_TYPE_RECORD_MARKER);
  auto* a = c.mutable_record_marker_command_attributes();
  a->set_marker_name(name);
  if (patch)
    encode_payloads(Args{Json{{"id", patch->id}, {"deprecated", patch->deprecated}}},
                    &(*a->mutable_details())[kPatchDataKey]);
  return c;
}
Event marker_recorded(int64_t event_id, const std::string& name,
                      std::optional<PatchMarker> patch = std::nullopt) {
  Event e;
  e.set_event_id(event_id);
  e.set_event_type(enumsv1::EVENT_TYPE_MARKER_RECORDED);
  auto* a = e.mutable_marker_recorded_event_attributes();
  a->set_marker_name(name);
  if (patch)
    encode_payloads(Args{Json{{"id", patch->id}, {"deprecated", patch->deprecated}}},
                    &(*a->mutable_details())[kPatchDataKey]);
  return e;
}
Command start_child(const std::string& type, const std::string& id) {
  Command c;
  c.set_command_type(enumsv1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  auto* a = c.mutable_start_child_workflow_execution_command_attributes();
  a->mutable_workflow_type()->set_name(type);
  a->set_workflow_id(id);
  return c;
}
Event child_initiated(int64_t event_id, const std::string& type, const std::string& id) {
  Event e;
  e.set_event_id(event_id);
  e.set_event_type(enumsv1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED);
  auto* a = e.mutable_start_child_workflow_execution_initiated_event_attributes();
  a->mutable_workflow_type()->set_name(type);
  a->set_workflow_id(id);
  return e;
}
Command cancel_external(const std::string& workflow_id) {
  Command c;
  c.set_command_type(enumsv1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
  c.mutable_request_cancel_external_workflow_execution_command_attributes()->set_workflow_id(
      workflow_id);
  return c;
}
Event cancel_external_initiated(int64_t event_id, const std::string& workflow_id) {
  Event e;
  e.set_event_id(event_id);
  e.set_event_type(enumsv1::EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED);
  e.mutable_request_cancel_external_workflow_execution_initiated_event_attributes()
      ->mutable_workflow_execution()
      ->set_workflow_id(workflow_id);
  return e;
}
Command of_type(enumsv1::CommandType type) {
  Command c;
  c.set_command_type(type);
  return c;
}
Event of_type(int64_t event_id, enumsv1::EventType type) {
  Event e;
  e.set_event_id(event_id);
  e.set_event_type(type);
  return e;
}

// The message of matching `e` against `c` alone ("" when they match).
std::string mismatch(const Command& c, const Event& e) {
  HistoryMatcher m;
  m.expect({c});
  auto st = m.match(e, 2);
  if (st.ok()) return "";
  EXPECT_EQ(st.error().code(), core::Code::kFailedPrecondition);
  return st.error().message();
}

TEST(HistoryMatcher, EachCommandMatchesTheEventThatRecordsIt) {
  EXPECT_EQ(mismatch(schedule_activity("greet", "1"), activity_scheduled(5, "greet", "1")), "");
  EXPECT_EQ(mismatch(start_timer("1"), timer_started(5, "1")), "");
  EXPECT_EQ(mismatch(cancel_timer("1"), timer_canceled(9, "1")), "");
  EXPECT_EQ(mismatch(marker(kSideEffectMarker), marker_recorded(5, kSideEffectMarker)), "");
  EXPECT_EQ(mismatch(marker(kPatchMarker, PatchMarker{"v2"}),
                     marker_recorded(5, kPatchMarker, PatchMarker{"v2"})),
            "");
  EXPECT_EQ(mismatch(start_child("Child", "c-1"), child_initiated(5, "Child", "c-1")), "");
  EXPECT_EQ(mismatch(cancel_external("c-1"), cancel_external_initiated(9, "c-1")), "");
  EXPECT_EQ(mismatch(of_type(enumsv1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK),
                     of_type(9, enumsv1::EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED)),
            "");
  const std::pair<enumsv1::CommandType, enumsv1::EventType> closing[] = {
      {enumsv1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
       enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
      {enumsv1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
       enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_FAILED},
      {enumsv1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
       enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED},
      {enumsv1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
       enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW}};
  for (const auto& [command, event] : closing) {
    EXPECT_TRUE(HistoryMatcher::is_command_event(of_type(9, event)));
    EXPECT_EQ(mismatch(of_type(command), of_type(9, event)), "") << enumsv1::EventType_Name(event);
  }
}

TEST(HistoryMatcher, OnlyCommandEventsAreMatched) {
  for (auto job : {enumsv1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumsv1::EVENT_TYPE_TIMER_FIRED,
                   enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
                   enumsv1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
                   enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED})
    EXPECT_FALSE(HistoryMatcher::is_command_event(of_type(3, job))) << enumsv1::EventType_Name(job);
  EXPECT_TRUE(HistoryMatcher::is_command_event(activity_scheduled(5, "a", "1")));
  EXPECT_TRUE(HistoryMatcher::is_command_event(marker_recorded(5, kSideEffectMarker)));
}

TEST(HistoryMatcher, ADifferentActivityTimerChildOrMarkerIsNondeterminismNamingBoth) {
  EXPECT_EQ(mismatch(schedule_activity("greet", "1"), activity_scheduled(5, "farewell", "1")),
            "in workflow task 2 the workflow code produced command "
            "ScheduleActivityTask(activity_type='greet', activity_id='1'), but history has event 5 "
            "ActivityTaskScheduled(activity_type='farewell', activity_id='1')");
  EXPECT_NE(mismatch(schedule_activity("greet", "1"), activity_scheduled(5, "greet", "2")), "");
  EXPECT_EQ(mismatch(start_timer("1"), timer_started(7, "2")),
            "in workflow task 2 the workflow code produced command StartTimer(timer_id='1'), but "
            "history has event 7 TimerStarted(timer_id='2')");
  EXPECT_EQ(mismatch(cancel_timer("1"), timer_canceled(9, "2")),
            "in workflow task 2 the workflow code produced command CancelTimer(timer_id='1'), but "
            "history has event 9 TimerCanceled(timer_id='2')");
  EXPECT_EQ(mismatch(start_child("Child", "c-1"), child_initiated(5, "Child", "c-2")),
            "in workflow task 2 the workflow code produced command "
            "StartChildWorkflowExecution(workflow_type='Child', workflow_id='c-1'), but history "
            "has event 5 StartChildWorkflowExecutionInitiated(workflow_type='Child', "
            "workflow_id='c-2')");
  EXPECT_NE(mismatch(start_child("Child", "c-1"), child_initiated(5, "Other", "c-1")), "");
  EXPECT_EQ(mismatch(cancel_external("c-1"), cancel_external_initiated(9, "c-2")),
            "in workflow task 2 the workflow code produced command "
            "RequestCancelExternalWorkflowExecution(workflow_id='c-1'), but history has event 9 "
            "RequestCancelExternalWorkflowExecutionInitiated(workflow_id='c-2')");
  EXPECT_EQ(mismatch(marker(kPatchMarker, PatchMarker{"v3"}),
                     marker_recorded(5, kPatchMarker, PatchMarker{"v2"})),
            "in workflow task 2 the workflow code produced command "
            "RecordMarker(marker_name='core_patch', patch_id='v3'), but history has event 5 "
            "MarkerRecorded(marker_name='core_patch', patch_id='v2')");
  EXPECT_NE(mismatch(marker(kSideEffectMarker), marker_recorded(5, "Other")), "");
}

TEST(HistoryMatcher, ADifferentKindOfCommandIsNondeterminism) {
  EXPECT_EQ(mismatch(start_timer("1"), activity_scheduled(5, "greet", "1")),
            "in workflow task 2 the workflow code produced command StartTimer(timer_id='1'), but "
            "history has event 5 ActivityTaskScheduled(activity_type='greet', activity_id='1')");
  EXPECT_EQ(mismatch(of_type(enumsv1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION),
                     of_type(11, enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_FAILED)),
            "in workflow task 2 the workflow code produced command CompleteWorkflowExecution, but "
            "history has event 11 WorkflowExecutionFailed");
}

TEST(HistoryMatcher, CommandsMatchInOrderAcrossTasksAndEachOnce) {
  HistoryMatcher m;
  m.expect({schedule_activity("a", "1"), start_timer("1")});
  m.expect({schedule_activity("b", "2")});
  EXPECT_EQ(m.pending(), 3u);
  EXPECT_TRUE(m.match(activity_scheduled(5, "a", "1"), 1).ok());
  EXPECT_TRUE(m.match(timer_started(6, "1"), 1).ok());
  EXPECT_FALSE(m.check_all_matched(nullptr, 1).ok()) << "b is still expected";
  auto b_first = m;  // the second task's command must not match out of order
  EXPECT_FALSE(b_first.match(activity_scheduled(7, "a", "1"), 2).ok());
  EXPECT_TRUE(m.match(activity_scheduled(7, "b", "2"), 2).ok());
  EXPECT_EQ(m.pending(), 0u);
  EXPECT_TRUE(m.check_all_matched(nullptr, 2).ok());
  auto again = m.match(activity_scheduled(8, "b", "2"), 2);  // consumed: not matched twice
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message(),
            "history has event 8 ActivityTaskScheduled(activity_type='b', activity_id='2') after "
            "workflow task 2, but the workflow code produced no command for it");
}

TEST(HistoryMatcher, ACommandHistoryDoesNotHaveNamesWhatCameInstead) {
  HistoryMatcher m;
  m.expect({start_timer("1")});
  Event next = of_type(9, enumsv1::EVENT_TYPE_WORKFLOW_TASK_STARTED);
  auto st = m.check_all_matched(&next, 3);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), core::Code::kFailedPrecondition);
  EXPECT_EQ(st.error().message(),
            "in workflow task 3 the workflow code produced command StartTimer(timer_id='1') that "
            "history does not have (next is event 9 WorkflowTaskStarted)");
  EXPECT_EQ(m.check_all_matched(nullptr, 3).error().message(),
            "in workflow task 3 the workflow code produced command StartTimer(timer_id='1') that "
            "history does not have (history ends)");
}

TEST(HistoryMatcher, ADeprecatedPatchMarkerTheCodeNoLongerRecordsIsSkipped) {
  HistoryMatcher m;
  m.expect({schedule_activity("new", "1")});
  // Code that dropped deprecate_patch("v2") replays a history that recorded it.
  EXPECT_TRUE(m.match(marker_recorded(5, kPatchMarker, PatchMarker{"v2", true}), 1).ok());
  EXPECT_EQ(m.pending(), 1u) << "the skipped marker consumed nothing";
  EXPECT_TRUE(m.match(activity_scheduled(6, "new", "1"), 1).ok());
  // Code that still calls deprecate_patch("v2") matches it like any marker.
  HistoryMatcher still;
  still.expect({marker(kPatchMarker, PatchMarker{"v2", true})});
  EXPECT_TRUE(still.match(marker_recorded(5, kPatchMarker, PatchMarker{"v2", true}), 1).ok());
  EXPECT_EQ(still.pending(), 0u);
  // A patch that is not deprecated cannot be dropped.
  HistoryMatcher dropped;
  auto st = dropped.match(marker_recorded(5, kPatchMarker, PatchMarker{"v2", false}), 1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(),
            "history has event 5 MarkerRecorded(marker_name='core_patch', patch_id='v2') after "
            "workflow task 1, but the workflow code produced no command for it");
}

}  // namespace
}  // namespace codeact::temporal::internal
