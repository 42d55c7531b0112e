// The workflow runtime against hand-written histories (no server): replay of matching code,
// and nondeterminism reports naming the mismatching command and event.
#include <gtest/gtest.h>

#include <cctype>

#include "codeact/temporal/worker.hpp"

namespace codeact::temporal {
namespace {

using namespace std::chrono_literals;

std::string base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(t[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(t[((val << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

Json payloads(const Json& value) {
  return {{"payloads",
           {{{"metadata", {{"encoding", base64("json/plain")}}}, {"data", base64(value.dump())}}}}};
}

// Builds a history event by event.
class HistoryBuilder {
 public:
  HistoryBuilder& add(const std::string& type, const std::string& attrs_field, Json attrs) {
    Json e = {{"eventId", std::to_string(++id_)},
              {"eventTime", "2026-01-01T00:00:0" + std::to_string(id_ % 10) + "Z"},
              {"eventType", "EVENT_TYPE_" + type}};
    e[attrs_field] = std::move(attrs);
    events_.push_back(std::move(e));
    return *this;
  }
  HistoryBuilder& started(const std::string& type, const Json& input) {
    return add("WORKFLOW_EXECUTION_STARTED", "workflowExecutionStartedEventAttributes",
               {{"workflowType", {{"name", type}}},
                {"taskQueue", {{"name", "tq"}}},
                {"input", payloads(input)},
                {"firstExecutionRunId", "run-1"},
                {"attempt", 1}});
  }
  // Scheduled + Started + Completed workflow task.
  HistoryBuilder& workflow_task() {
    int64_t sched = id_ + 1;
    add("WORKFLOW_TASK_SCHEDULED", "workflowTaskScheduledEventAttributes",
        {{"taskQueue", {{"name", "tq"}}}});
    add("WORKFLOW_TASK_STARTED", "workflowTaskStartedEventAttributes",
        {{"scheduledEventId", std::to_string(sched)}});
    return add("WORKFLOW_TASK_COMPLETED", "workflowTaskCompletedEventAttributes",
               {{"scheduledEventId", std::to_string(sched)},
                {"startedEventId", std::to_string(sched + 1)}});
  }
  int64_t activity_scheduled(const std::string& type, const std::string& id) {
    add("ACTIVITY_TASK_SCHEDULED", "activityTaskScheduledEventAttributes",
        {{"activityId", id}, {"activityType", {{"name", type}}}, {"taskQueue", {{"name", "tq"}}}});
    return id_;
  }
  HistoryBuilder& activity_completed(int64_t scheduled, const Json& result) {
    add("ACTIVITY_TASK_STARTED", "activityTaskStartedEventAttributes",
        {{"scheduledEventId", std::to_string(scheduled)}});
    return add("ACTIVITY_TASK_COMPLETED", "activityTaskCompletedEventAttributes",
               {{"scheduledEventId", std::to_string(scheduled)},
                {"startedEventId", std::to_string(id_)},
                {"result", payloads(result)}});
  }
  HistoryBuilder& timer_started(const std::string& id) {
    return add("TIMER_STARTED", "timerStartedEventAttributes",
               {{"timerId", id}, {"startToFireTimeout", "1s"}});
  }
  HistoryBuilder& timer_fired(const std::string& id, int64_t started) {
    return add("TIMER_FIRED", "timerFiredEventAttributes",
               {{"timerId", id}, {"startedEventId", std::to_string(started)}});
  }
  HistoryBuilder& signaled(const std::string& name, const Json& input) {
    return add("WORKFLOW_EXECUTION_SIGNALED", "workflowExecutionSignaledEventAttributes",
               {{"signalName", name}, {"input", payloads(input)}});
  }
  HistoryBuilder& completed(const Json& result) {
    return add(
        "WORKFLOW_EXECUTION_COMPLETED", "workflowExecutionCompletedEventAttributes",
        {{"result", payloads(result)}, {"workflowTaskCompletedEventId", std::to_string(id_)}});
  }
  int64_t last_id() const { return id_; }
  History build() const {
    auto h = History::from_json(Json{{"events", events_}});
    EXPECT_TRUE(h.ok()) << h.error().to_string();
    History out = std::move(h).value();
    out.workflow_id = "wf-1";
    out.run_id = "run-1";
    return out;
  }

 private:
  int64_t id_ = 0;
  Json events_ = Json::array();
};

ActivityOptions opts() {
  ActivityOptions o;
  o.start_to_close_timeout = 5s;
  return o;
}

// greet: activity compose_greeting(name), then a 1 s timer, then a signal "finish", then returns.
History greet_history() {
  HistoryBuilder b;
  b.started("Greet", "Ada").workflow_task();
  int64_t s = b.activity_scheduled("compose_greeting", "1");
  b.activity_completed(s, "Hello, Ada!").workflow_task().timer_started("1");
  int64_t t = b.last_id();
  b.timer_fired("1", t).signaled("finish", Json{{"by", "test"}}).workflow_task();
  b.completed(Json{{"greeting", "Hello, Ada!"}, {"by", "test"}});
  return b.build();
}

Task<Json> greet(WorkflowContext& ctx, Args args) {
  Json by;
  ctx.set_signal_handler("finish", [&](const Args& a) { by = a.at(0).at("by"); });
  auto g = co_await ctx.execute_activity("compose_greeting", args.at(0), opts());
  co_await ctx.sleep(1s);
  co_await ctx.wait_condition([&] { return !by.is_null(); });
  co_return Json{{"greeting", std::move(g).value_or_throw()}, {"by", by}};
}

TEST(ReplayTest, MatchingCodeReplaysFullHistory) {
  Replayer r;
  r.register_workflow("Greet", greet);
  auto st = r.replay(greet_history());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST(ReplayTest, HelperCoroutinesAndWorkflowFreeFunctionsReplay) {
  auto helper = [](WorkflowContext& ctx, Json name) -> Task<Json> {
    auto g = co_await ctx.execute_activity("compose_greeting", name, opts());
    co_return std::move(g).value_or_throw();
  };
  Replayer r;
  r.register_workflow("Greet", [helper](WorkflowContext& ctx, Args args) -> Task<Json> {
    Json by;
    ctx.set_signal_handler("finish", [&](const Args& a) { by = a.at(0).at("by"); });
    Json g = co_await helper(ctx, args.at(0));
    co_await workflow::sleep(1s);
    co_await workflow::wait_condition([&] { return !by.is_null(); });
    co_return Json{{"greeting", g}, {"by", by}};
  });
  auto st = r.replay(greet_history());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST(ReplayTest, ChangedActivityTypeIsNondeterministicAndNamed) {
  Replayer r;
  r.register_workflow("Greet", [](WorkflowContext& ctx, Args args) -> Task<Json> {
    auto g = co_await ctx.execute_activity("compose_farewell", args.at(0), opts());
    co_return std::move(g).value_or_throw();
  });
  auto st = r.replay(greet_history());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), core::Code::kFailedPrecondition);
  const auto& m = st.error().message();
  EXPECT_NE(m.find("nondeterminism"), std::string::npos) << m;
  EXPECT_NE(m.find("ScheduleActivityTask(activity_type='compose_farewell', activity_id='1')"),
            std::string::npos)
      << m;
  EXPECT_NE(
      m.find("event 5 ActivityTaskScheduled(activity_type='compose_greeting', activity_id='1')"),
      std::string::npos)
      << m;
}

TEST(ReplayTest, TimerInsteadOfActivityIsNondeterministic) {
  Replayer r;
  r.register_workflow("Greet", [](WorkflowContext& ctx, Args) -> Task<Json> {
    co_await ctx.sleep(1s);
    co_return nullptr;
  });
  auto st = r.replay(greet_history());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("StartTimer(timer_id='1')"), std::string::npos)
      << st.error().message();
}

TEST(ReplayTest, MissingCommandIsNondeterministic) {
  Replayer r;
  r.register_workflow("Greet",
                      [](WorkflowContext&, Args) -> Task<Json> { co_return "done at once"; });
  auto st = r.replay(greet_history());
  ASSERT_FALSE(st.ok());
  // The code completes the workflow where history scheduled an activity.
  EXPECT_NE(st.error().message().find("CompleteWorkflowExecution"), std::string::npos)
      << st.error().message();
}

TEST(ReplayTest, ExtraCommandIsNondeterministic) {
  Replayer r;
  r.register_workflow("Greet", [](WorkflowContext& ctx, Args args) -> Task<Json> {
    auto a = ctx.execute_activity("compose_greeting", args.at(0), opts());
    auto b = ctx.execute_activity("compose_greeting", args.at(0), opts());
    co_await a;
    co_await b;
    co_return nullptr;
  });
  auto st = r.replay(greet_history());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("activity_id='2'"), std::string::npos)
      << st.error().message();
  EXPECT_NE(st.error().message().find("that history does not have"), std::string::npos)
      << st.error().message();
}

TEST(ReplayTest, SignalBeforeHandlerIsBufferedAndDelivered) {
  HistoryBuilder b;
  b.started("Sig", nullptr).signaled("early", 7).workflow_task();
  b.timer_started("1");
  int64_t t = b.last_id();
  b.timer_fired("1", t).workflow_task().completed(7);
  Replayer r;
  r.register_workflow("Sig", [](WorkflowContext& ctx, Args) -> Task<Json> {
    Json got;
    ctx.set_signal_handler("early", [&](const Args& a) { got = a.at(0); });
    co_await ctx.sleep(1s);
    co_return got;
  });
  auto st = r.replay(b.build());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST(ReplayTest, SideEffectReturnsRecordedValueWithoutRunning) {
  HistoryBuilder b;
  b.started("Side", nullptr).workflow_task();
  b.add(
      "MARKER_RECORDED", "markerRecordedEventAttributes",
      {{"markerName", "SideEffect"}, {"details", {{"seq", payloads(1)}, {"data", payloads(42)}}}});
  b.completed(42);
  static bool ran = false;
  static Json seen;
  ran = false;
  Replayer r;
  r.register_workflow("Side", [](WorkflowContext& ctx, Args) -> Task<Json> {
    seen = ctx.side_effect([] {
      ran = true;
      return Json(7);
    });
    co_return seen;
  });
  auto st = r.replay(b.build());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  EXPECT_FALSE(ran) << "a recorded side effect must not run again on replay";
  EXPECT_EQ(seen, 42);
}

TEST(ReplayTest, RandomAndUuidAreTheSameOnEveryReplay) {
  static std::vector<std::string> seen;
  seen.clear();
  Replayer r;
  r.register_workflow("Greet", [](WorkflowContext& ctx, Args args) -> Task<Json> {
    seen.push_back(ctx.uuid() + "/" + std::to_string(ctx.random()));
    Json by;
    ctx.set_signal_handler("finish", [&](const Args& a) { by = a.at(0).at("by"); });
    auto g = co_await ctx.execute_activity("compose_greeting", args.at(0), opts());
    co_await ctx.sleep(1s);
    co_await ctx.wait_condition([&] { return !by.is_null(); });
    co_return Json{{"greeting", std::move(g).value_or_throw()}, {"by", by}};
  });
  ASSERT_TRUE(r.replay(greet_history()).ok());
  ASSERT_TRUE(r.replay(greet_history()).ok());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], seen[1]);
}

Task<Json> wait_with_timeout(WorkflowContext& ctx, Args) {
  bool got = false;
  ctx.set_signal_handler("go", [&](const Args&) { got = true; });
  bool satisfied = co_await ctx.wait_condition([&] { return got; }, 1s);
  co_return satisfied;
}

TEST(ReplayTest, WaitConditionTimesOutOnItsTimer) {
  HistoryBuilder b;
  b.started("Wait", nullptr).workflow_task().timer_started("1");
  int64_t t = b.last_id();
  b.timer_fired("1", t).workflow_task().completed(false);
  Replayer r;
  r.register_workflow("Wait", wait_with_timeout);
  auto st = r.replay(b.build());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST(ReplayTest, WaitConditionSatisfiedCancelsItsTimer) {
  HistoryBuilder b;
  b.started("Wait", nullptr).workflow_task().timer_started("1");
  b.signaled("go", nullptr).workflow_task();
  b.add("TIMER_CANCELED", "timerCanceledEventAttributes",
        {{"timerId", "1"}, {"startedEventId", "5"}});
  b.completed(true);
  Replayer r;
  r.register_workflow("Wait", wait_with_timeout);
  auto st = r.replay(b.build());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  // Code that forgets to cancel the timer does not match this history.
  Replayer old;
  old.register_workflow("Wait", [](WorkflowContext& ctx, Args) -> Task<Json> {
    bool got = false;
    ctx.set_signal_handler("go", [&](const Args&) { got = true; });
    co_await ctx.wait_condition([&] { return got; });
    co_return true;
  });
  auto bad = old.replay(b.build());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("TimerStarted(timer_id='1')"), std::string::npos)
      << bad.error().message();
}

TEST(ReplayTest, HistoryJsonWithShortEventTypeNamesIsRead) {
  // Older exports (and the web UI's download) name event types "WorkflowExecutionStarted".
  Json j = greet_history().to_json();
  for (auto& e : j["events"]) {
    std::string t = e["eventType"].get<std::string>().substr(std::string("EVENT_TYPE_").size());
    std::string camel;
    bool up = true;
    for (char c : t) {
      if (c == '_') {
        up = true;
        continue;
      }
      camel += up ? c : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      up = false;
    }
    e["eventType"] = camel;
  }
  ASSERT_EQ(j["events"][0]["eventType"], "WorkflowExecutionStarted");
  auto h = History::from_json(j);
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->event_count(), greet_history().event_count());
  Replayer r;
  r.register_workflow("Greet", greet);
  auto st = r.replay(*h);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  EXPECT_FALSE(History::from_json(Json{{"not", "a history"}}).ok());
}

// ---- versioning ----

Json patch_marker(const std::string& id, bool deprecated, int64_t completed_event) {
  return {{"markerName", "core_patch"},
          {"details", {{"patch-data", payloads(Json{{"id", id}, {"deprecated", deprecated}})}}},
          {"workflowTaskCompletedEventId", std::to_string(completed_event)}};
}

// Old code slept; the change runs an activity instead, guarded by patched().
Task<Json> patched_code(WorkflowContext& ctx, Args) {
  if (ctx.patched("use-activity")) {
    auto r = co_await ctx.execute_activity("compose_greeting", "new", opts());
    co_return std::move(r).value_or_throw();
  }
  co_await ctx.sleep(1s);
  co_return "old";
}

History old_code_history() {
  HistoryBuilder b;
  b.started("P", nullptr).workflow_task().timer_started("1");
  int64_t t = b.last_id();
  b.timer_fired("1", t).workflow_task().completed("old");
  return b.build();
}

History new_code_history(bool deprecated) {
  HistoryBuilder b;
  b.started("P", nullptr).workflow_task();
  b.add("MARKER_RECORDED", "markerRecordedEventAttributes",
        patch_marker("use-activity", deprecated, b.last_id()));
  int64_t s = b.activity_scheduled("compose_greeting", "1");
  b.activity_completed(s, "Hello, new!").workflow_task().completed("Hello, new!");
  return b.build();
}

TEST(ReplayTest, PatchedTakesTheOldPathOnHistoriesOfTheOldCode) {
  Replayer r;
  r.register_workflow("P", patched_code);
  auto st = r.replay(old_code_history());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST(ReplayTest, PatchedTakesTheNewPathWhereItsMarkerWasRecorded) {
  Replayer r;
  r.register_workflow("P", patched_code);
  auto st = r.replay(new_code_history(false));
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  // Dropping the patched() call before deprecating it is reported.
  Replayer dropped;
  dropped.register_workflow("P", [](WorkflowContext& ctx, Args) -> Task<Json> {
    auto r = co_await ctx.execute_activity("compose_greeting", "new", opts());
    co_return std::move(r).value_or_throw();
  });
  auto bad = dropped.replay(new_code_history(false));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("patch_id='use-activity'"), std::string::npos)
      << bad.error().message();
}

TEST(ReplayTest, DeprecatedPatchMarkersReplayWithOrWithoutTheDeprecateCall) {
  auto only_new = [](bool call_deprecate) {
    return [call_deprecate](WorkflowContext& ctx, Args) -> Task<Json> {
      if (call_deprecate) ctx.deprecate_patch("use-activity");
      auto r = co_await ctx.execute_activity("compose_greeting", "new", opts());
      co_return std::move(r).value_or_throw();
    };
  };
  for (bool deprecated_marker : {false, true}) {
    Replayer with_call;
    with_call.register_workflow("P", only_new(true));
    auto st = with_call.replay(new_code_history(deprecated_marker));
    EXPECT_TRUE(st.ok()) << st.error().to_string();
  }
  Replayer without_call;
  without_call.register_workflow("P", only_new(false));
  auto st = without_call.replay(new_code_history(true));
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

// ---- cancellation ----

// An activity runs until the workflow is cancelled; a cleanup activity runs after; the run
// ends as cancelled.
History cancelled_history() {
  HistoryBuilder b;
  b.started("C", nullptr).workflow_task();
  int64_t work = b.activity_scheduled("wait", "1");
  b.add("WORKFLOW_EXECUTION_CANCEL_REQUESTED", "workflowExecutionCancelRequestedEventAttributes",
        {{"cause", "test"}});
  b.workflow_task();
  b.add("ACTIVITY_TASK_CANCEL_REQUESTED", "activityTaskCancelRequestedEventAttributes",
        {{"scheduledEventId", std::to_string(work)},
         {"workflowTaskCompletedEventId", std::to_string(b.last_id())}});
  b.add("ACTIVITY_TASK_CANCELED", "activityTaskCanceledEventAttributes",
        {{"scheduledEventId", std::to_string(work)}});
  b.workflow_task();
  int64_t cleanup = b.activity_scheduled("cleanup", "2");
  b.activity_completed(cleanup, "cleaned").workflow_task();
  b.add("WORKFLOW_EXECUTION_CANCELED", "workflowExecutionCanceledEventAttributes",
        {{"workflowTaskCompletedEventId", std::to_string(b.last_id())}});
  return b.build();
}

Task<Json> cleanup_code(WorkflowContext& ctx, Args) {
  Args none;
  ActivityResult work = co_await ctx.execute_activity("wait", none, opts());
  ActivityResult cleaned = co_await ctx.execute_activity("cleanup", none, opts());
  if (!work.ok() && work.failure().kind == FailureKind::kCanceled && ctx.cancel_requested())
    throw CancelledError("cancelled after " + cleaned.value().get<std::string>());
  co_return "finished";
}

TEST(ReplayTest, CancelRequestCancelsActivityAndCleanupRunsBeforeCancelledEnd) {
  Replayer r;
  r.register_workflow("C", cleanup_code);
  auto st = r.replay(cancelled_history());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  // Returning instead of throwing completes the run, which this history does not have.
  Replayer completes;
  completes.register_workflow("C", [](WorkflowContext& ctx, Args) -> Task<Json> {
    Args none;
    ActivityResult work = co_await ctx.execute_activity("wait", none, opts());
    ActivityResult cleaned = co_await ctx.execute_activity("cleanup", none, opts());
    co_return cleaned.value();
  });
  auto bad = completes.replay(cancelled_history());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("CompleteWorkflowExecution"), std::string::npos)
      << bad.error().message();
}

// ---- child workflows ----

History child_history(const std::string& child_id) {
  HistoryBuilder b;
  b.started("Parent", nullptr).workflow_task();
  b.add("START_CHILD_WORKFLOW_EXECUTION_INITIATED",
        "startChildWorkflowExecutionInitiatedEventAttributes",
        {{"workflowId", child_id},
         {"workflowType", {{"name", "Kid"}}},
         {"taskQueue", {{"name", "tq"}}},
         {"workflowTaskCompletedEventId", std::to_string(b.last_id())}});
  int64_t initiated = b.last_id();
  b.add("CHILD_WORKFLOW_EXECUTION_STARTED", "childWorkflowExecutionStartedEventAttributes",
        {{"initiatedEventId", std::to_string(initiated)},
         {"workflowExecution", {{"workflowId", child_id}, {"runId", "kid-run"}}},
         {"workflowType", {{"name", "Kid"}}}});
  b.workflow_task();
  b.add("CHILD_WORKFLOW_EXECUTION_COMPLETED", "childWorkflowExecutionCompletedEventAttributes",
        {{"initiatedEventId", std::to_string(initiated)},
         {"workflowExecution", {{"workflowId", child_id}, {"runId", "kid-run"}}},
         {"result", payloads("kid says hi")}});
  b.workflow_task().completed("kid says hi");
  return b.build();
}

Task<Json> parent_code(WorkflowContext& ctx, Args) {
  ChildWorkflowOptions o;
  o.workflow_id = "kid-1";
  Args none;
  Outcome<Json> r = co_await ctx.start_child_workflow("Kid", none, o);
  co_return std::move(r).value_or_throw();
}

TEST(ReplayTest, ChildWorkflowIsMatchedToItsInitiatedEventAndResolved) {
  Replayer r;
  r.register_workflow("Parent", parent_code);
  auto st = r.replay(child_history("kid-1"));
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  auto bad = r.replay(child_history("kid-2"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(
                "StartChildWorkflowExecution(workflow_type='Kid', workflow_id='kid-1')"),
            std::string::npos)
      << bad.error().message();
}

TEST(ReplayTest, CancelledSleepSendsCancelTimerAndResumesItsAwaiter) {
  HistoryBuilder b;
  b.started("Nap", nullptr).workflow_task().timer_started("1");
  b.signaled("stop", nullptr).workflow_task();
  b.add("TIMER_CANCELED", "timerCanceledEventAttributes",
        {{"timerId", "1"}, {"startedEventId", "5"}});
  b.completed(true);
  Replayer r;
  r.register_workflow("Nap", [](WorkflowContext& ctx, Args) -> Task<Json> {
    bool stop = false;
    ctx.set_signal_handler("stop", [&](const Args&) { stop = true; });
    auto nap = ctx.sleep(std::chrono::hours(1));
    co_await ctx.wait_condition([&] { return stop; });
    nap.cancel();
    co_await nap;
    co_return nap.cancelled();
  });
  auto st = r.replay(b.build());
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST(ReplayTest, UnknownWorkflowTypeIsNotFound) {
  Replayer r;
  auto st = r.replay(greet_history());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), core::Code::kNotFound);
}

TEST(FailureTest, ErrorsMapToApplicationFailuresByCode) {
  auto f = Failure::from_error(core::invalid_argument("bad name"));
  EXPECT_EQ(f.type, "InvalidArgument");
  EXPECT_TRUE(f.non_retryable);
  auto g = Failure::from_error(core::unavailable("try later"));
  EXPECT_FALSE(g.non_retryable);
  EXPECT_EQ(g.to_error().code(), core::Code::kUnavailable);
  Failure t;
  t.kind = FailureKind::kTimeout;
  EXPECT_EQ(t.to_error().code(), core::Code::kDeadlineExceeded);
}

}  // namespace
}  // namespace codeact::temporal
