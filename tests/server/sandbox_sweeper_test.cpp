#include "sandbox_sweeper.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "codeact/core/json.hpp"
#include "support/fake_sandbox_backend.hpp"

using namespace ::codeact::server;
using codeact::core::Json;
using std::chrono::milliseconds;

namespace {

std::string temp_journal() {
  auto dir = std::filesystem::temp_directory_path() /
             ("sweeper-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  return (dir / "sweeps.json").string();
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  return Json::parse(text);
}

// Waits up to 5 s for `done`.
template <typename F>
bool eventually(F done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

size_t removals_of(const codeact::testing::FakeSandboxBackend& b, const std::string& id) {
  size_t n = 0;
  for (const auto& c : b.calls_of("remove"))
    if (c.id == id) ++n;
  return n;
}

}  // namespace

TEST(SandboxSweeper, RemovesASandboxAgainAtEachDelay) {
  auto backend = std::make_shared<codeact::testing::FakeSandboxBackend>();
  ASSERT_TRUE(backend->start({.id = "s1"}).ok());
  SandboxSweeper sweeper(backend, {milliseconds(20), milliseconds(60)});
  sweeper.sweep_later("s1", false);
  EXPECT_EQ(sweeper.pending(), 2u);
  ASSERT_TRUE(eventually([&] { return removals_of(*backend, "s1") == 2; }));
  EXPECT_FALSE(backend->with("s1", [](auto& s) { return s.running; }));
  EXPECT_TRUE(backend->exists("s1")) << "its volume is kept when not asked";
  EXPECT_EQ(sweeper.pending(), 0u);
}

TEST(SandboxSweeper, RemovalsStillDueOutliveTheServerInItsJournal) {
  const std::string journal = temp_journal();
  auto backend = std::make_shared<codeact::testing::FakeSandboxBackend>();
  ASSERT_TRUE(backend->start({.id = "s1"}).ok());
  {
    SandboxSweeper first(backend, {milliseconds(150), std::chrono::hours(1)}, journal);
    first.sweep_later("s1", true);
    struct stat st {};
    ASSERT_EQ(::stat(journal.c_str(), &st), 0) << "written when the removals are due";
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(read_json(journal).size(), 2u);
  }  // the server stops before the first removal is due
  EXPECT_EQ(removals_of(*backend, "s1"), 0u);
  EXPECT_TRUE(backend->exists("s1"));

  std::this_thread::sleep_for(milliseconds(200));  // it falls due while no server runs
  SandboxSweeper again(backend, {milliseconds(150), std::chrono::hours(1)}, journal);
  EXPECT_EQ(again.pending(), 2u);
  ASSERT_TRUE(eventually([&] { return !backend->exists("s1"); }))
      << "done at once by the next server, with the volume as asked";
  ASSERT_TRUE(eventually([&] { return read_json(journal).size() == 1u; }))
      << "the removal done is gone from the journal, the one an hour away stays";
  EXPECT_EQ(read_json(journal)[0]["id"], "s1");
  EXPECT_EQ(read_json(journal)[0]["volume"], true);
}

TEST(SandboxSweeper, AnUnreadableJournalIsIgnored) {
  const std::string journal = temp_journal();
  std::filesystem::create_directories(std::filesystem::path(journal).parent_path());
  std::ofstream(journal) << "{not json";
  auto backend = std::make_shared<codeact::testing::FakeSandboxBackend>();
  SandboxSweeper sweeper(backend, {milliseconds(10)}, journal);
  EXPECT_EQ(sweeper.pending(), 0u);
  sweeper.sweep_later("s9", false);  // and it is written anew
  EXPECT_TRUE(read_json(journal).is_array());
}
