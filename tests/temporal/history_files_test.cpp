// Regression tests of workflow changes, the way a user keeps them: histories of real runs,
// exported with `temporal workflow show -w <id> --output json` (tests/temporal/histories/),
// replayed against each version of the workflow's code. No server needed.
//   patchy_v1_waiting_for_signal.json  a run of patch_v1, waiting for its signal
//   patchy_v2_completed.json           a new run of patch_v2 (new path, core_patch marker)
//   patchy_v3_completed.json           a run of patch_v3 (deprecated marker)
#include <gtest/gtest.h>

#include "test_workflows.hpp"

namespace codeact::temporal::testing {
namespace {

std::string history_file(const std::string& name) {
  return std::string(CODEACT_SOURCE_DIR) + "/tests/temporal/histories/" + name;
}

core::Status replay(const std::string& file, WorkflowFunction fn) {
  Replayer r;
  r.register_workflow("Patchy", std::move(fn));
  return r.replay_file(history_file(file));
}

TEST(HistoryFilesTest, RunOfVersion1ReplaysOnVersion2ButNotOnAnUnguardedChange) {
  const std::string f = "patchy_v1_waiting_for_signal.json";
  auto v1 = replay(f, patch_v1);
  EXPECT_TRUE(v1.ok()) << v1.error().to_string();
  auto v2 = replay(f, patch_v2);
  EXPECT_TRUE(v2.ok()) << v2.error().to_string();
  auto bad = replay(f, patch_v2_unguarded);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(bad.error().message().find("StartTimer(timer_id='1')"), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("ActivityTaskScheduled(activity_type='compose_greeting'"),
            std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("patchy_v1_waiting_for_signal.json"), std::string::npos)
      << "the error names the file";
}

TEST(HistoryFilesTest, RunOfVersion2ReplaysOnVersions2And3Only) {
  const std::string f = "patchy_v2_completed.json";
  auto v2 = replay(f, patch_v2);
  EXPECT_TRUE(v2.ok()) << v2.error().to_string();
  auto v3 = replay(f, patch_v3);
  EXPECT_TRUE(v3.ok()) << v3.error().to_string();
  EXPECT_FALSE(replay(f, patch_v1).ok());
  auto v4 = replay(f, patch_v4);
  ASSERT_FALSE(v4.ok()) << "dropping the call before deprecating it breaks v2's runs";
  EXPECT_NE(v4.error().message().find("patch_id='greet-v2'"), std::string::npos)
      << v4.error().message();
}

TEST(HistoryFilesTest, RunOfVersion3ReplaysOnVersion4) {
  const std::string f = "patchy_v3_completed.json";
  auto v3 = replay(f, patch_v3);
  EXPECT_TRUE(v3.ok()) << v3.error().to_string();
  auto v4 = replay(f, patch_v4);
  EXPECT_TRUE(v4.ok()) << v4.error().to_string();
}

TEST(HistoryFilesTest, MissingOrMalformedFileIsReported) {
  Replayer r;
  r.register_workflow("Patchy", patch_v1);
  auto missing = r.replay_file(history_file("no_such_file.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), core::Code::kNotFound);
  auto not_history =
      r.replay_file(std::string(CODEACT_SOURCE_DIR) + "/tests/temporal/CMakeLists.txt");
  ASSERT_FALSE(not_history.ok());
  EXPECT_EQ(not_history.error().code(), core::Code::kInvalidArgument);
}

}  // namespace
}  // namespace codeact::temporal::testing
