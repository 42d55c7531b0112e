// Local activities replayed from recorded histories (tests/temporal/histories/local_*.json,
// written by temporal_local_activity_test with CODEACT_HISTORY_OUT set; local_interop_python
// by the Python SDK's worker). No server needed.
//   local_greet.json                 local, normal, local activity: markers seq 1 and 3
//   local_retried.json               a local activity retried in the worker (attempt 3), and one
//                                    failed without retry
//   local_slow_task_renewed.json     one running past the task timeout: its marker is recorded
//                                    three workflow tasks after it was scheduled
//   local_fallback.json              a backoff past the threshold: marker with backoff, then the
//                                    same activity scheduled as a normal one
//   local_cancelled.json             cancelled by a signal while it ran
//   local_interop_python.json        the Python SDK's LocalInterop
#include <gtest/gtest.h>

#include "local_activity_workflows.hpp"

namespace codeact::temporal::testing {
namespace {

core::Status replay(const std::string& file, const std::string& type, WorkflowFunction fn) {
  Replayer r;
  r.register_workflow(type, std::move(fn));
  return r.replay_file(std::string(CODEACT_SOURCE_DIR) + "/tests/temporal/histories/" + file);
}

TEST(LocalActivityReplayTest, EachRecordedRunReplaysAgainstItsCode) {
  struct Run {
    const char* file;
    const char* type;
    WorkflowFunction fn;
  };
  const std::vector<Run> runs = {
      {"local_greet.json", "LocalGreet", local_greet_workflow},
      {"local_retried.json", "Retrying", retrying_workflow},
      {"local_slow_task_renewed.json", "Slow", slow_workflow},
      {"local_fallback.json", "Fallback", fallback_workflow},
      {"local_cancelled.json", "CancelLocal", cancel_local_workflow},
      {"local_interop_python.json", "LocalInterop", local_interop_workflow}};
  for (const auto& [file, type, fn] : runs) {
    auto st = replay(file, type, fn);
    EXPECT_TRUE(st.ok()) << file << ": " << st.error().to_string();
  }
}

TEST(LocalActivityReplayTest, ANormalActivityInPlaceOfALocalOneIsNondeterminism) {
  auto st = replay(
      "local_interop_python.json", "LocalInterop", [](WorkflowContext& ctx, Args) -> Task<Json> {
        auto a = co_await ctx.execute_activity("compose_greeting", Json("local"), quick_activity());
        co_return std::move(a).value_or_throw();
      });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(st.error().message().find("MarkerRecorded(marker_name='core_local_activity', seq=1)"),
            std::string::npos)
      << st.error().message();
}

TEST(LocalActivityReplayTest, TheRecordedResultIsWhatTheCodeGetsOnReplay) {
  // The code sees the recorded answer, not a new run of the activity (none is registered).
  std::string seen;
  auto st = replay("local_interop_python.json", "LocalInterop",
                   [&seen](WorkflowContext& ctx, Args) -> Task<Json> {
                     auto a = co_await ctx.execute_local_activity("compose_greeting", Json("local"),
                                                                  quick_local());
                     seen = a.ok() ? a->get<std::string>() : a.failure().to_string();
                     auto b = co_await ctx.execute_activity("compose_greeting", Json("remote"),
                                                            quick_activity());
                     co_return std::move(b).value_or_throw();
                   });
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  EXPECT_EQ(seen, "Hello, local!");
}

TEST(LocalActivityReplayTest, TheFallbackToANormalActivityIsPartOfTheHistory) {
  // Without the fallback the code would fail where the run scheduled the activity.
  auto st = replay("local_fallback.json", "Fallback", [](WorkflowContext& ctx, Args) -> Task<Json> {
    LocalActivityOptions o = quick_local();
    o.retry_policy->initial_interval = 1500ms;
    o.local_retry_threshold = 500ms;
    o.fall_back_to_activity = false;
    auto r = co_await ctx.execute_local_activity("fails_once", Args(), o);
    co_return std::move(r).value_or_throw();
  });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("ActivityTaskScheduled(activity_type='fails_once'"),
            std::string::npos)
      << st.error().message();
}

}  // namespace
}  // namespace codeact::temporal::testing
