// Shared storage (shared_storage.hpp): CODEACT_SHARED_DIR read and checked, each sandbox's own
// subdirectory, and ownership epochs that two hosts placing one sandbox at once never share.
#include "codeact/sandbox/shared_storage.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <vector>

using namespace codeact;
using namespace codeact::sandbox;

namespace {

std::string temp_root() {
  std::string root = ::testing::TempDir() + "shared-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  return root;
}

TEST(SharedStorage, TheDirectoryMustBeAbsoluteAndUnsetMeansLocalVolumes) {
  std::map<std::string, std::string> env;
  core::EnvLookup lookup = [&env](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto unset = shared_dir_from(lookup);
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(*unset);
  env["CODEACT_SHARED_DIR"] = "/mnt/codeact///";
  EXPECT_EQ(**shared_dir_from(lookup), "/mnt/codeact");
  env["CODEACT_SHARED_DIR"] = "mnt/codeact";
  auto relative = shared_dir_from(lookup);
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.error().message().find("absolute path"), std::string::npos);
}

TEST(SharedStorage, EachSandboxGetsItsOwnSubdirectoryOwnedByTheSandboxUser) {
  const std::string root = temp_root();
  ASSERT_TRUE(prepare_shared_sandbox_dir(root, "s1", 1000, 1000).ok());
  struct stat st {};
  ASSERT_EQ(::stat((root + "/s1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  if (::geteuid() == 0) {
    EXPECT_EQ(st.st_uid, 1000u);
  }
  auto missing = prepare_shared_sandbox_dir(root + "/absent", "s1", 1000, 1000);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("mount the shared storage there"), std::string::npos);
  EXPECT_TRUE(*remove_shared_sandbox_dir(root, "s1"));
  EXPECT_FALSE(std::filesystem::exists(root + "/s1"));
  EXPECT_FALSE(*remove_shared_sandbox_dir(root, "s1"));
  std::filesystem::remove_all(root);
}

TEST(SharedStorage, PlacementsTakeTheNextEpochAndNameTheirHost) {
  const std::string root = temp_root();
  ASSERT_TRUE(prepare_shared_sandbox_dir(root, "s1", static_cast<int>(::geteuid()),
                                         static_cast<int>(::getegid()))
                  .ok());
  EXPECT_EQ(newest_placement(root, "s1").epoch, 0);
  EXPECT_EQ(take_placement(root, "s1", "h1")->epoch, 1);
  EXPECT_EQ(take_placement(root, "s1", "h2")->epoch, 2);
  Placement newest = newest_placement(root, "s1");
  EXPECT_EQ(newest.epoch, 2);
  EXPECT_EQ(newest.host, "h2");
  std::filesystem::remove_all(root);
}

TEST(SharedStorage, HostsPlacingOneSandboxAtOnceNeverShareAnEpoch) {
  const std::string root = temp_root();
  ASSERT_TRUE(prepare_shared_sandbox_dir(root, "s1", static_cast<int>(::geteuid()),
                                         static_cast<int>(::getegid()))
                  .ok());
  std::vector<std::thread> hosts;
  std::vector<int64_t> taken(8);
  for (int i = 0; i < 8; ++i) {
    hosts.emplace_back([&, i] {
      auto p = take_placement(root, "s1", "h" + std::to_string(i));
      taken[i] = p.ok() ? p->epoch : -1;
    });
  }
  for (auto& t : hosts) t.join();
  EXPECT_EQ(std::set<int64_t>(taken.begin(), taken.end()).size(), 8u);
  EXPECT_EQ(newest_placement(root, "s1").epoch, 8);
  std::filesystem::remove_all(root);
}

}  // namespace
