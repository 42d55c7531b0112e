// What the sandbox manager decides before it touches Docker: ids, sizes, package names, and the
// volume it asks for under the seed's VOLUME_DRIVER / NFS_SERVER / NFS_PATH settings.
#include <gtest/gtest.h>

#include <map>

#include "codeact/sandbox/operations.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

using namespace codeact;
using namespace codeact::sandbox;

namespace {
SandboxManager manager_with_env(std::map<std::string, std::string> env) {
  auto docker = DockerClient::create();
  SandboxManagerOptions o;
  o.data_dir = "/tmp/codeact-options-test";
  o.env = [env](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  return SandboxManager(*docker, o);
}
}  // namespace

TEST(SandboxOptions, IdsAreValidatedWithAMessageSayingWhatIsAllowed) {
  EXPECT_TRUE(SandboxManager::validate_id("chat-42_a.b").ok());
  for (const std::string& bad :
       std::vector<std::string>{"", "-x", "a b", "a/b", "../x", std::string(64, 'a')}) {
    auto s = SandboxManager::validate_id(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code(), core::Code::kInvalidArgument);
    EXPECT_NE(s.error().message().find("letters, digits"), std::string::npos);
  }
}

TEST(SandboxOptions, SizesParseLikeDocker) {
  EXPECT_EQ(*parse_size("512m"), 512LL << 20);
  EXPECT_EQ(*parse_size("2g"), 2LL << 30);
  EXPECT_EQ(*parse_size("1.5G"), 3LL << 29);
  EXPECT_EQ(*parse_size("64k"), 64LL << 10);
  EXPECT_EQ(*parse_size("100"), 100);
  EXPECT_FALSE(parse_size("lots").ok());
  EXPECT_FALSE(parse_size("-1m").ok());
}

TEST(SandboxOptions, PackageNamesAcceptVersionsAndExtrasButNoShell) {
  for (const std::string ok :
       {"numpy", "pandas==2.2.0", "uvicorn[standard]>=0.30", "a.b-c_d", "x>=1,<2"}) {
    EXPECT_TRUE(SandboxManager::validate_python_package(ok).ok()) << ok;
  }
  for (const std::string bad :
       {"numpy; rm -rf /", "$(id)", "`id`", "a b", "a|b", "-e .", "--index-url=x", "a&&b"}) {
    EXPECT_FALSE(SandboxManager::validate_python_package(bad).ok()) << bad;
  }
  EXPECT_TRUE(SandboxManager::validate_system_package("libgomp1").ok());
  EXPECT_TRUE(SandboxManager::validate_system_package("g++").ok());
  EXPECT_FALSE(SandboxManager::validate_system_package("curl;id").ok());
  EXPECT_FALSE(SandboxManager::validate_system_package("Curl").ok());
}

TEST(SandboxOptions, VolumesAreLocalByDefaultAndNfsWhenAsked) {
  auto local = manager_with_env({}).volume_spec("abc");
  EXPECT_EQ(local.name, "workflow-abc");
  EXPECT_EQ(local.driver, "local");
  EXPECT_TRUE(local.driver_opts.empty());
  EXPECT_EQ(local.labels.at("io.codeact.sandbox"), "1");
  EXPECT_EQ(local.labels.at("io.codeact.sandbox.id"), "abc");

  auto nfs =
      manager_with_env(
          {{"VOLUME_DRIVER", "nfs"}, {"NFS_SERVER", "nfs.example"}, {"NFS_PATH", "/exports/wf"}})
          .volume_spec("abc");
  EXPECT_EQ(nfs.driver, "local");
  EXPECT_EQ(nfs.driver_opts.at("type"), "nfs");
  EXPECT_EQ(nfs.driver_opts.at("o"), "addr=nfs.example,rw,nfsvers=4");
  EXPECT_EQ(nfs.driver_opts.at("device"), ":/exports/wf");
}

TEST(SandboxOptions, ASharedDirectoryBindsTheSandboxsOwnSubdirectory) {
  auto shared = manager_with_env({{"CODEACT_SHARED_DIR", "/mnt/codeact//"}}).volume_spec("abc");
  EXPECT_EQ(shared.name, "workflow-abc");
  EXPECT_EQ(shared.driver, "local");
  EXPECT_EQ(shared.driver_opts.at("type"), "none");
  EXPECT_EQ(shared.driver_opts.at("o"), "bind,nosuid,nodev");
  EXPECT_EQ(shared.driver_opts.at("device"), "/mnt/codeact/abc");
  EXPECT_EQ(shared.labels.at("io.codeact.shared-dir"), "/mnt/codeact");
}

TEST(SandboxOperations, TheSeedsSixteenTaskNamesAndArgumentKinds) {
  auto names = list_tasks();
  ASSERT_EQ(names.size(), 16u);
  EXPECT_EQ(names.front(), "start_container");
  EXPECT_EQ(names.back(), "cleanup_containers");
  for (const auto& n : names) EXPECT_EQ(task_name(*parse_task_type(n)), n);

  auto task = SandboxInputTask::from_json(core::Json{{"task_name", "execute_python"},
                                                     {"task_args",
                                                      {{"kind", "execute_python"},
                                                       {"container_id", "s1"},
                                                       {"code", "x = 1"},
                                                       {"persist_state", false}}}});
  ASSERT_TRUE(task.ok()) << task.error().to_string();
  const auto& args = std::get<ExecutePythonArgs>(*task->task_args);
  EXPECT_EQ(args.container_id, "s1");
  EXPECT_EQ(args.code, "x = 1");
  EXPECT_FALSE(args.persist_state);
  auto round = SandboxInputTask::from_json(task->to_json());
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(std::get<ExecutePythonArgs>(*round->task_args).code, "x = 1");

  auto missing = parse_task_args(core::Json{{"kind", "read_variable"}, {"container_id", "s1"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("variable_name"), std::string::npos);
  auto unknown = SandboxInputTask::from_json(core::Json{{"task_name", "format_disk"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("execute_python"), std::string::npos);
}

TEST(SandboxDiskOption, SizesNoneAndTheDefaultAreAcceptedGarbageAndTinyAreNot) {
  EXPECT_TRUE(SandboxManager::validate_disk("").ok());
  EXPECT_TRUE(SandboxManager::validate_disk("none").ok());
  EXPECT_TRUE(SandboxManager::validate_disk("10g").ok());
  EXPECT_TRUE(SandboxManager::validate_disk("64m").ok());
  auto tiny = SandboxManager::validate_disk("1m");
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message().find("at least 16m"), std::string::npos);
  auto garbage = SandboxManager::validate_disk("lots");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code(), core::Code::kInvalidArgument);
}

TEST(SandboxDiskOption, TheSandboxSectionOfAppConfSetsTheDefaultDisk) {
  auto none = manager_options_from_config(core::Json::object());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->default_disk, "");
  auto set = manager_options_from_config(core::Json{{"sandbox", {{"disk", "20g"}}}});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->default_disk, "20g");
  auto off = manager_options_from_config(core::Json{{"sandbox", {{"disk", "none"}}}});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->default_disk, "none");
  auto bad = manager_options_from_config(core::Json{{"sandbox", {{"disk", "huge"}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("sandbox.disk"), std::string::npos);
}

TEST(SandboxCheckpointOptions, RetentionComesFromTheSandboxSectionAndBadValuesAreNamed) {
  auto defaults = manager_options_from_config(core::Json::object());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->checkpoints_kept, 0);  // all
  EXPECT_EQ(defaults->checkpoint_budget, int64_t{1} << 30);
  auto set = manager_options_from_config(
      core::Json{{"sandbox", {{"checkpoints", "last 5"}, {"checkpoint_budget", "200m"}}}});
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(set->checkpoints_kept, 5);
  EXPECT_EQ(set->checkpoint_budget, int64_t{200} << 20);
  auto all = manager_options_from_config(core::Json{{"sandbox", {{"checkpoints", "all"}}}});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->checkpoints_kept, 0);
  for (const char* bad : {"last 0", "last", "some", "last 3x"}) {
    auto r = manager_options_from_config(core::Json{{"sandbox", {{"checkpoints", bad}}}});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("sandbox.checkpoints"), std::string::npos);
  }
  auto budget = manager_options_from_config(core::Json{{"sandbox", {{"checkpoint_budget", "x"}}}});
  ASSERT_FALSE(budget.ok());
  EXPECT_NE(budget.error().message().find("sandbox.checkpoint_budget"), std::string::npos);
}
