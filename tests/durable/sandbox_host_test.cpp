// SandboxHost: a run's activities go to the queue of its sandbox's host once the start says
// which; runs recorded before hosts stay on the one queue; a
// host that does not take the work fails the run saying why it cannot move (sandbox_host.hpp).
#include "codeact/durable/sandbox_host.hpp"

#include <gtest/gtest.h>

#include "codeact/durable/activities.hpp"
#include "codeact/durable/payloads.hpp"
#include "codeact/sandbox/host_id.hpp"

namespace codeact::durable {
namespace {

using namespace std::chrono_literals;

TEST(SandboxHost, AfterTheStartNamesAHostEveryActivityGoesToItsQueue) {
  SandboxHost host("codeact", "", 30s);
  EXPECT_EQ(host.route().task_queue, "") << "any host may start it";
  host.learn(kSandboxStartActivity,
             SandboxStartOutput{"s1", false, "workflow-s1", "gpu-1"}.to_json());
  EXPECT_EQ(host.host(), "gpu-1");
  ActivityRoute r = host.route();
  EXPECT_EQ(r.task_queue, "codeact@gpu-1");
  EXPECT_EQ(r.schedule_to_start, 30s);
}

TEST(SandboxHost, APinnedHostTakesTheStartToo) {
  SandboxHost host("q", "h2", 5s);
  EXPECT_EQ(host.route().task_queue, "q@h2");
}

TEST(SandboxHost, RunsRecordedBeforeHostsKeepEveryActivityOnTheOneQueue) {
  SandboxHost host("codeact", "", 60s);
  host.learn(kSandboxStartActivity, Json{{"sandbox_id", "s1"}, {"resumed", false}, {"volume", ""}});
  EXPECT_EQ(host.host(), "");
  EXPECT_EQ(host.route().task_queue, "");
  // Only a start's result places the sandbox.
  host.learn(kToolCallActivity, Json{{"host", "elsewhere"}});
  EXPECT_EQ(host.host(), "");
}

TEST(SandboxHost, ALostHostIsAnErrorThatSaysWhyTheRunCannotMove) {
  SandboxHost host("codeact", "h1", 45s);
  core::Error e = host.lost(kToolCallActivity);
  EXPECT_EQ(e.code(), core::Code::kUnavailable);
  for (const char* part :
       {"\"h1\" is lost", "codeact.tool_call", "codeact@h1", "45 s", "local volume", "--host h1"}) {
    EXPECT_NE(e.message().find(part), std::string::npos) << part << " in: " << e.message();
  }
}

TEST(SandboxHost, OnSharedStorageALostHostsSandboxMovesAndTheModelIsToldOnce) {
  SandboxHost host("codeact", "h2", 5s);
  host.learn(kSandboxStartActivity,
             SandboxStartOutput{"s1", false, "workflow-s1", "h2", true, 0}.to_json());
  ASSERT_TRUE(host.can_move());
  EXPECT_EQ(host.move_note(), "");
  host.move_away(kToolCallActivity);
  EXPECT_EQ(host.route().task_queue, "") << "the start again goes to any live host";
  EXPECT_EQ(host.move_note(), "") << "not moved until a host took the start";
  host.learn(kSandboxStartActivity,
             SandboxStartOutput{"s1", true, "workflow-s1", "h1", true, 3}.to_json());
  EXPECT_EQ(host.route().task_queue, "codeact@h1");
  for (const char* part :
       {"moved from host \"h2\" to host \"h1\"", "codeact.tool_call", "within 5 s", "cell 3"}) {
    EXPECT_NE(host.move_note().find(part), std::string::npos) << part << " in " << host.move_note();
  }
  host.take_move_note();
  EXPECT_EQ(host.move_note(), "");
  // A start again on the same host (a continue-as-new) is no move.
  host.learn(kSandboxStartActivity,
             SandboxStartOutput{"s1", true, "workflow-s1", "h1", true, 3}.to_json());
  EXPECT_EQ(host.move_note(), "");
}

TEST(SandboxHost, ARunThatStartsNoSandboxMovesItWhenItsInputSaysTheStorageIsShared) {
  // A chat's run after a continue-as-new: pinned where the run before left the sandbox, told by
  // its input that the storage is shared, and no start of its own to learn it from.
  SandboxHost carried("codeact", "h2", 5s, /*shared=*/true);
  EXPECT_TRUE(carried.can_move());
  EXPECT_TRUE(carried.shared());
  carried.move_away(kAgentPrepareActivity);
  carried.learn(kSandboxStartActivity,
                SandboxStartOutput{"s1", true, "v", "h1", true, 6}.to_json());
  EXPECT_EQ(carried.route().task_queue, "codeact@h1");
  EXPECT_NE(carried.move_note().find("cell 6"), std::string::npos) << carried.move_note();
  // Without it (inputs from before it was carried) the run keeps the old answer: it cannot move.
  SandboxHost old("codeact", "h2", 5s);
  EXPECT_FALSE(old.can_move());
  EXPECT_NE(old.lost(kAgentPrepareActivity).message().find("local volume"), std::string::npos);
}

TEST(SandboxHost, AStartThatLandsOnTheLostHostAgainOrFailsLeavesTheSandboxWhereItWas) {
  SandboxHost host("codeact", "", 5s);
  host.learn(kSandboxStartActivity, SandboxStartOutput{"s1", false, "v", "h2", true, 0}.to_json());
  host.move_away(kToolCallActivity);
  host.learn(kSandboxStartActivity, SandboxStartOutput{"s1", true, "v", "h2", true, 4}.to_json());
  EXPECT_EQ(host.move_note(), "") << "h2's worker came back and took the start: no move";
  EXPECT_EQ(host.route().task_queue, "codeact@h2");
  host.move_away(kModelRequestActivity);
  host.move_failed();
  EXPECT_EQ(host.host(), "h2");
  EXPECT_EQ(host.route().task_queue, "codeact@h2");
  EXPECT_EQ(host.move_note(), "");
}

TEST(SandboxHost, OnLocalVolumesOrWithoutATimeoutASandboxDoesNotMove) {
  SandboxHost local("codeact", "", 5s);
  local.learn(kSandboxStartActivity, SandboxStartOutput{"s1", false, "v", "h1"}.to_json());
  EXPECT_FALSE(local.can_move());
  SandboxHost forever("codeact", "", 0s);
  forever.learn(kSandboxStartActivity,
                SandboxStartOutput{"s1", false, "v", "h1", true, 0}.to_json());
  EXPECT_FALSE(forever.can_move());
  // Shared, but moved as often as a step allows: the error says the state is safe.
  SandboxHost shared("codeact", "", 5s);
  shared.learn(kSandboxStartActivity,
               SandboxStartOutput{"s1", false, "v", "h1", true, 0}.to_json());
  core::Error e = shared.lost(kToolCallActivity);
  EXPECT_NE(e.message().find("shared storage"), std::string::npos) << e.message();
  EXPECT_EQ(e.message().find("local volume"), std::string::npos) << e.message();
}

TEST(HostIds, AHostNameIsOneAndOthersAreRefusedNamingTheRule) {
  for (const char* ok : {"h1", "gpu-1.example.com", "node_7"})
    EXPECT_TRUE(sandbox::validate_host_id(ok).ok()) << ok;
  for (const char* bad : {"", "a b", "x@y", "tenant/1"}) {
    auto s = sandbox::validate_host_id(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message().find("1 to 64 letters"), std::string::npos);
  }
  EXPECT_FALSE(sandbox::validate_host_id(std::string(65, 'a')).ok());
  EXPECT_TRUE(sandbox::validate_host_id(sandbox::default_host_id()).ok());
}

TEST(HostPayloads, HostsTravelOnlyWhenSetSoOlderWorkersStillReadTheRest) {
  TaskInput in;
  in.task = "t";
  EXPECT_FALSE(in.to_json().contains("host"));
  EXPECT_FALSE(in.to_json()["activities"].contains("host_timeout_seconds"));
  in.host = "h3";
  in.activities.host_timeout_seconds = 12;
  auto back = TaskInput::from_json(in.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->host, "h3");
  EXPECT_EQ(back->activities.host_timeout_seconds, 12);

  EXPECT_FALSE(in.to_json().contains("shared_storage"));
  in.shared_storage = true;
  EXPECT_EQ(in.to_json()["shared_storage"], true);
  EXPECT_TRUE(TaskInput::from_json(in.to_json())->shared_storage);

  EXPECT_FALSE((SandboxStartOutput{"s", false, "v", ""}.to_json().contains("host")));
  auto out = SandboxStartOutput::from_json(SandboxStartOutput{"s", true, "v", "h3"}.to_json());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->host, "h3");
  EXPECT_FALSE(out->shared);
  EXPECT_FALSE((SandboxStartOutput{"s", false, "v", "h3"}.to_json().contains("shared")));
  auto shared =
      SandboxStartOutput::from_json(SandboxStartOutput{"s", true, "v", "h3", true, 7}.to_json());
  ASSERT_TRUE(shared.ok());
  EXPECT_TRUE(shared->shared);
  EXPECT_EQ(shared->cell, 7);

  auto negative = ActivityPolicies::from_json(Json{{"host_timeout_seconds", -1}});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().message().find("host_timeout_seconds"), std::string::npos);
}

}  // namespace
}  // namespace codeact::durable
