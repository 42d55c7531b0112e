// The sandbox manager against the real Docker engine and the real sandbox image: what a user of
// `codeact sandbox` relies on — state that survives a killed container, notebook semantics,
// execution ids, timeouts, confinement, hardening.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <random>

#include "codeact/core/config.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/operations.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

using namespace codeact;
using namespace codeact::sandbox;
using core::Json;

namespace {

class SandboxManagerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto docker = DockerClient::create();
    ASSERT_TRUE(docker.ok()) << docker.error().to_string();
    docker_ = *docker;
    ImageBuilder builder(docker_);
    auto tag = builder.ensure_image();
    ASSERT_TRUE(tag.ok()) << tag.error().to_string();
  }
  static void TearDownTestSuite() { docker_.reset(); }

  void SetUp() override {
    manager_ = std::make_unique<SandboxManager>(docker_);
    std::random_device rd;
    id_ = "itest-" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);
  }
  void TearDown() override { (void)manager_->remove(id_, /*volume=*/true); }

  SandboxInfo start(SandboxOptions o = {}) {
    o.id = id_;
    auto info = manager_->start(o);
    EXPECT_TRUE(info.ok()) << info.error().to_string();
    return info.ok() ? *info : SandboxInfo{};
  }
  ExecuteResult run(const std::string& code, const std::string& exec_id = "", double timeout = 60) {
    ExecuteRequest req;
    req.code = code;
    req.execution_id = exec_id;
    req.timeout_seconds = timeout;
    auto r = manager_->execute(id_, req);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : ExecuteResult{};
  }

  static std::shared_ptr<DockerClient> docker_;
  std::unique_ptr<SandboxManager> manager_;
  std::string id_;
};
std::shared_ptr<DockerClient> SandboxManagerTest::docker_;

TEST_F(SandboxManagerTest, StateSurvivesDockerKillOfTheContainer) {
  start();
  auto first =
      run("import numpy as np\n"
          "arr = np.arange(12).reshape(3, 4)\n"
          "def area(w, h):\n    return w * h\n"
          "class Point:\n    def __init__(self, x, y): self.x, self.y = x, y\n    def norm1(self): "
          "return abs(self.x) + abs(self.y)\n"
          "p = Point(3, -4)\n"
          "import collections as col\n"
          "counts = col.Counter('hello')\n");
  ASSERT_TRUE(first.ok) << first.error->message;
  EXPECT_TRUE(first.not_persisted.empty()) << Json(first.not_persisted).dump();

  ASSERT_TRUE(docker_->kill_container(SandboxManager::container_name(id_)).ok());
  auto after =
      run("print(int(arr.sum()), area(6, 7), p.norm1(), isinstance(p, Point), counts['l'], "
          "np.__name__, col.__name__)");
  ASSERT_TRUE(after.ok) << (after.error ? after.error->message : "");
  EXPECT_EQ(after.stdout_text, "66 42 7 True 2 numpy collections\n");
  EXPECT_NE(after.notice.find("restarted"), std::string::npos) << after.notice;
}

TEST_F(SandboxManagerTest, AFailedCellKeepsWhatItAssignedBeforeTheError) {
  start();
  auto r = run("a = 1\nb = 2\n1 / 0\nc = 3\n");
  EXPECT_FALSE(r.ok);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "ZeroDivisionError");
  EXPECT_NE(r.error->traceback.find("1 / 0"), std::string::npos) << r.error->traceback;
  auto next = run("print(a + b, 'c' in globals())");
  EXPECT_EQ(next.stdout_text, "3 False\n");
  // and that survives a restart too
  ASSERT_TRUE(manager_->restart(id_).ok());
  EXPECT_EQ(run("print(a + b)").stdout_text, "3\n");
}

TEST_F(SandboxManagerTest, ARepeatedExecutionIdDoesNotRunTwice) {
  start();
  run("counter = 0");
  auto once = run("counter += 1\nprint(counter)", "step-1");
  EXPECT_EQ(once.stdout_text, "1\n");
  EXPECT_FALSE(once.replayed);
  auto again = run("counter += 1\nprint(counter)", "step-1");
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.stdout_text, "1\n");
  ASSERT_TRUE(docker_->kill_container(SandboxManager::container_name(id_)).ok());
  auto after_kill = run("counter += 1\nprint(counter)", "step-1");
  EXPECT_TRUE(after_kill.replayed);
  EXPECT_EQ(run("print(counter)").stdout_text, "1\n");
}

TEST_F(SandboxManagerTest, AWriteAndAClearWithAnExecutionIdRunOnceAcrossAKill) {
  start();
  ASSERT_TRUE(manager_->write_file(id_, "note.txt", "first", "w-1").ok());
  run("open('/output/note.txt', 'w').write('edited by a later cell')\nkept = 1");
  ASSERT_TRUE(docker_->kill_container(SandboxManager::container_name(id_)).ok());
  // The retry of the write (its worker died before it saw the answer) writes nothing.
  ASSERT_TRUE(manager_->write_file(id_, "note.txt", "first", "w-1").ok());
  auto text = manager_->read_file(id_, "note.txt");
  ASSERT_TRUE(text.ok()) << text.error().to_string();
  EXPECT_EQ(*text, "edited by a later cell");
  auto cleared = manager_->clear(id_, "c-1");
  ASSERT_TRUE(cleared.ok()) << cleared.error().to_string();
  EXPECT_EQ(cleared->value("cleared", Json::array()), Json::array({"kept"}));
  run("again = 2");
  auto retried = manager_->clear(id_, "c-1");
  ASSERT_TRUE(retried.ok()) << retried.error().to_string();
  EXPECT_TRUE(core::json_bool(*retried, "replayed"));
  EXPECT_EQ(run("print(again)").stdout_text, "2\n");
}

TEST_F(SandboxManagerTest, ACellPastItsTimeoutIsInterruptedAndStateKept) {
  start();
  auto r = run("before = 'kept'\nimport time\ntime.sleep(60)", "", 1.0);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timed_out);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "TimeoutError");
  EXPECT_LT(r.duration_ms, 5000);
  EXPECT_EQ(run("print(before)").stdout_text, "kept\n");
}

TEST_F(SandboxManagerTest, AKernelThatIgnoresTheInterruptIsKilledAndRestartedFromItsSnapshot) {
  start();
  run("survivor = 41");
  auto start_time = std::chrono::steady_clock::now();
  auto r =
      run("import time\n"
          "while True:\n"
          "    try:\n"
          "        time.sleep(0.05)\n"
          "    except BaseException:\n"
          "        pass\n",
          "", 1.0);
  auto took = std::chrono::steady_clock::now() - start_time;
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.kernel_restarted);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "TimeoutError");
  EXPECT_NE(r.error->message.find("restarted from the snapshot"), std::string::npos)
      << r.error->message;
  EXPECT_LT(took, std::chrono::seconds(30));
  EXPECT_EQ(run("print(survivor + 1)").stdout_text, "42\n");
}

TEST_F(SandboxManagerTest, OutputBeyondTheCapKeepsHeadAndTail) {
  start();
  auto r = run("print('HEAD')\nfor i in range(200000): print('x' * 10)\nprint('TAIL')");
  EXPECT_TRUE(r.ok);
  EXPECT_LT(r.stdout_text.size(), 70000u);
  EXPECT_EQ(r.stdout_text.rfind("HEAD", 0), 0u);
  EXPECT_NE(r.stdout_text.find("TAIL"), std::string::npos);
  ASSERT_TRUE(r.truncated.is_object());
  EXPECT_GT(r.truncated.value("stdout", 0), 2000000);
}

TEST_F(SandboxManagerTest, FilesAreBinarySafeAndConfinedToTheWorkspace) {
  start();
  std::string blob;
  for (int i = 0; i < 256; ++i) blob.push_back(static_cast<char>(i));
  blob += std::string("\0\0end", 5);
  ASSERT_TRUE(manager_->write_file(id_, "/output/data/blob.bin", blob).ok());
  auto back = manager_->read_file(id_, "data/blob.bin");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, blob);
  auto seen = run("print(len(open('/output/data/blob.bin','rb').read()))");
  EXPECT_EQ(seen.stdout_text, std::to_string(blob.size()) + "\n");
  auto files = manager_->list_files(id_);
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].path, "/output/data/blob.bin");

  for (const std::string bad :
       {"/etc/passwd", "../../../etc/passwd", "/persistent-storage/other/x"}) {
    auto r = manager_->read_file(id_, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), core::Code::kPermissionDenied) << r.error().to_string();
  }
  run("import os\nos.symlink('/etc', '/output/escape')");
  auto via_link = manager_->read_file(id_, "/output/escape/passwd");
  ASSERT_FALSE(via_link.ok());
  EXPECT_EQ(via_link.error().code(), core::Code::kPermissionDenied);
}

TEST_F(SandboxManagerTest, PackageNamesWithShellMetacharactersAreRejected) {
  start();
  for (const std::string bad :
       {"numpy; rm -rf /", "$(reboot)", "a b", "pkg|cat", "--index-url=http://evil"}) {
    auto r = manager_->install(id_, {bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), core::Code::kInvalidArgument);
    EXPECT_NE(r.error().message().find(bad), std::string::npos);
  }
  auto sys = manager_->install(id_, {"curl && id"}, /*system=*/true);
  ASSERT_FALSE(sys.ok());
  EXPECT_EQ(sys.error().code(), core::Code::kInvalidArgument);
}

TEST_F(SandboxManagerTest, ContainerIsHardenedAsDockerInspectShows) {
  start();
  auto info = docker_->inspect_container(SandboxManager::container_name(id_));
  ASSERT_TRUE(info.ok());
  const Json& cfg = info->raw["Config"];
  const Json& host = info->raw["HostConfig"];
  // Started as root only to create the kernel's socket; every process drops to 1000 (below).
  EXPECT_EQ(cfg["User"], "0:0");
  EXPECT_EQ(host["CapDrop"], Json::array({"ALL"}));
  // Only for the drop to uid 1000 (SETPCAP: to empty the bounding set first).
  EXPECT_EQ(host["CapAdd"], Json::array({"SETUID", "SETGID", "SETPCAP"}));
  EXPECT_EQ(host["LogConfig"]["Config"]["max-size"], "1m");
  EXPECT_EQ(host["SecurityOpt"], Json::array({"no-new-privileges"}));
  EXPECT_EQ(host["ReadonlyRootfs"], true);
  EXPECT_TRUE(host["Tmpfs"].contains("/tmp"));
  EXPECT_EQ(host["PidsLimit"], 256);
  EXPECT_EQ(host["Memory"], 512LL * 1024 * 1024);
  EXPECT_EQ(host["NanoCpus"], 1000000000LL);
  EXPECT_EQ(host["NetworkMode"], "none");
  bool has_volume = false;
  for (const auto& m : info->raw["Mounts"]) {
    if (m["Type"] == "volume" && m["Name"] == "workflow-" + id_ &&
        m["Destination"] == "/persistent-storage")
      has_volume = true;
  }
  EXPECT_TRUE(has_volume);
  // And from the inside: no process is root or holds a capability, no network, read-only root.
  auto r =
      run("import os, socket\n"
          "bad = []\n"
          "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
          "    try:\n"
          "        st = dict(l.split(':', 1) for l in "
          "open(f'/proc/{pid}/status').read().splitlines() if ':' in l)\n"
          "    except OSError:\n"
          "        continue\n"
          "    uids = st['Uid'].split()\n"
          "    if uids != ['1000'] * 4 or int(st['CapEff'], 16) or int(st['CapPrm'], 16):\n"
          "        bad.append((pid, st['Uid'], st['CapEff'], st['CapPrm']))\n"
          "print(bad)\n"
          "print(os.getuid())\n"
          "try:\n    open('/usr/evil', 'w')\nexcept OSError as e:\n    print('ro', e.errno)\n"
          "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=2)\nexcept OSError:\n    "
          "print('no network')\n");
  EXPECT_EQ(r.stdout_text, "[]\n1000\nro 30\nno network\n");
}

TEST_F(SandboxManagerTest, StartingAnExistingIdResumesItAndNeverWipesState) {
  start();
  run("keep = [1, 2, 3]");
  ASSERT_TRUE(manager_->stop(id_).ok());
  auto again = start();
  EXPECT_TRUE(again.resumed);
  EXPECT_EQ(run("print(keep)").stdout_text, "[1, 2, 3]\n");
  ASSERT_TRUE(manager_->remove(id_).ok());  // container only: the volume keeps the state
  auto fresh = start();
  EXPECT_FALSE(fresh.resumed);
  EXPECT_EQ(run("print(keep)").stdout_text, "[1, 2, 3]\n");
}

TEST_F(SandboxManagerTest, UnpersistableValuesAreReportedByName) {
  start();
  auto r = run("fh = open('/tmp/x.txt', 'w')\nok_value = 5");
  ASSERT_EQ(r.not_persisted.size(), 1u) << Json(r.not_persisted).dump();
  EXPECT_EQ(r.not_persisted[0]["name"], "fh");
  EXPECT_FALSE(core::json_string(r.not_persisted[0], "reason").empty());
  auto vars = manager_->variables(id_);
  ASSERT_TRUE(vars.ok());
  bool reported = false;
  for (const auto& v : (*vars)["variables"]) {
    if (v["name"] == "fh") reported = v["persisted"] == false;
  }
  EXPECT_TRUE(reported) << vars->dump();
}

TEST_F(SandboxManagerTest, CleanupAndListTouchOnlyCodeactContainers) {
  start();
  ContainerSpec foreign;
  foreign.name = "not-codeact-" + id_;
  auto img = ImageBuilder(docker_).ensure_image();
  ASSERT_TRUE(img.ok());
  foreign.image = *img;
  foreign.entrypoint = std::vector<std::string>{"sleep", "60"};
  ASSERT_TRUE(docker_->create_container(foreign).ok());
  auto list = manager_->list();
  ASSERT_TRUE(list.ok());
  bool ours = false;
  for (const auto& s : *list) {
    EXPECT_NE(s.container_name, foreign.name);
    ours = ours || s.id == id_;
  }
  EXPECT_TRUE(ours);
  EXPECT_TRUE(docker_->inspect_container(foreign.name).ok());
  (void)docker_->remove_container(foreign.name, {.force = true});
}

}  // namespace

namespace {

TEST_F(SandboxManagerTest, WithPersistenceDisabledStateLivesInMemoryOnly) {
  SandboxOptions o;
  o.persistence = false;
  start(o);
  auto info = docker_->inspect_container(SandboxManager::container_name(id_));
  ASSERT_TRUE(info.ok());
  for (const auto& m : info->raw["Mounts"]) EXPECT_NE(m["Type"], "volume");
  run("ephemeral = 1");
  EXPECT_EQ(run("print(ephemeral)").stdout_text, "1\n");
  ASSERT_TRUE(manager_->restart(id_).ok());
  EXPECT_EQ(run("print('ephemeral' in globals())").stdout_text, "False\n");
}

TEST_F(SandboxManagerTest, SeedOperationsDispatchByName) {
  SandboxOperations ops(std::shared_ptr<SandboxManager>(manager_.get(), [](SandboxManager*) {}));
  StartContainerArgs sa;
  sa.container_name = id_;
  auto started = ops.start_container(sa);
  ASSERT_TRUE(started.ok()) << started.error().to_string();
  EXPECT_EQ(*started, id_);
  auto task =
      SandboxInputTask::from_json(Json{{"task_name", "execute_python"},
                                       {"task_args",
                                        {{"kind", "execute_python"},
                                         {"container_id", id_},
                                         {"code", "total = sum(range(5))\nprint(total)"}}}});
  ASSERT_TRUE(task.ok());
  auto r = ops.run(*task);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)["success"], true);
  EXPECT_EQ((*r)["output"], "10\n");
  auto vars = ops.list_state_variables({id_});
  ASSERT_TRUE(vars.ok());
  EXPECT_EQ((*vars)["total"], "int");
  auto state = ops.get_python_state({id_});
  ASSERT_TRUE(state.ok());
  EXPECT_EQ((*state)["total"], 10);
  ASSERT_TRUE(ops.write_file({id_, "/output/note.txt", "hi"}).ok());
  auto read = ops.read_file({id_, "/output/note.txt"});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ((*read)["content"], "hi");
  auto files = ops.list_files({id_});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ((*files)["files"], Json::array({"/output/note.txt"}));
  auto wrong = ops.run(SandboxInputTask{SandboxTaskType::kReadStateVariable,
                                        SandboxTaskArgs(SandboxBaseArgs{id_}), nullptr});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code(), core::Code::kInvalidArgument);
}

}  // namespace

namespace {

TEST_F(SandboxManagerTest, AContainerMadeByAnOlderCodeactIsRecreatedWithItsState) {
  start();
  ASSERT_TRUE(run("kept = 'from before the upgrade'").ok);
  // What codeact 0.1 made: the kernel as uid 1000 under docker's init, its socket in a directory
  // of the host that the sandbox could write, no token, no layout label.
  auto c = docker_->inspect_container(SandboxManager::container_name(id_));
  ASSERT_TRUE(c.ok());
  ContainerSpec old;
  old.name = SandboxManager::container_name(id_);
  old.image = c->config_image;
  old.user = "1000:1000";
  old.init = true;
  old.env = {{"CODEACT_SANDBOX_ID", id_}, {"CODEACT_SOCKET", "/run/codeact/kernel.sock"}};
  old.labels = {
      {"io.codeact.sandbox", "1"}, {"io.codeact.sandbox.id", id_}, {"io.codeact.network", "0"}};
  std::string run_dir = core::data_dir() + "/run/" + id_;
  std::filesystem::create_directories(run_dir);
  ::chmod(run_dir.c_str(), 0777);
  old.binds.push_back({run_dir, "/run/codeact", false});
  old.volumes.push_back({SandboxManager::volume_name(id_), "/persistent-storage", false, false});
  old.read_only_rootfs = true;
  old.tmpfs["/tmp"] = "rw,size=64m,mode=1777";
  ASSERT_TRUE(docker_->remove_container(old.name, {.force = true}).ok());
  ASSERT_TRUE(docker_->create_container(old).ok());
  ASSERT_TRUE(docker_->start_container(old.name).ok());

  auto r = run("kept");
  EXPECT_EQ(r.result.value_or(""), "'from before the upgrade'")
      << (r.error ? r.error->message : "");
  EXPECT_NE(r.notice.find("older codeact"), std::string::npos) << r.notice;
  auto now = docker_->inspect_container(SandboxManager::container_name(id_));
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->labels["io.codeact.layout"], "2");
  EXPECT_FALSE(std::filesystem::exists(run_dir));  // the writable directory is gone
}

}  // namespace

namespace {

// CODEACT_SHARED_DIR (shared_storage.hpp): a sandbox's state lives in its own subdirectory of the
// directory every host mounts, so an engine that never ran it (here: the same engine after its
// container and volume definitions are gone, as on another host) starts it with its state.
TEST_F(SandboxManagerTest, WithASharedDirectoryStateLivesThereAndAnotherEngineResumesFromIt) {
  const std::string shared = ::testing::TempDir() + "shared-" + id_;
  std::filesystem::create_directories(shared);
  SandboxManagerOptions mo;
  mo.env = [shared](const std::string& k) -> std::optional<std::string> {
    if (k == "CODEACT_SHARED_DIR") return shared + "/";  // a trailing slash is fine
    return core::getenv_string(k);
  };
  manager_ = std::make_unique<SandboxManager>(docker_, mo);
  SandboxInfo first = start();
  EXPECT_EQ(first.shared_dir, shared);
  EXPECT_EQ(first.epoch, 1) << "the first placement";
  ASSERT_TRUE(run("x = 41\nopen('/output/note.txt', 'w').write('kept')").ok);
  // The state is in the sandbox's own subdirectory, owned by the sandbox user.
  struct stat st {};
  ASSERT_EQ(::stat((shared + "/" + id_).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, static_cast<uid_t>(kSandboxUid));
  EXPECT_TRUE(std::filesystem::exists(shared + "/" + id_ + "/" + id_ + "/output/note.txt"));
  // The sandbox sees its own subdirectory only; its placements, read-only.
  auto listing = run("import os\nsorted(n for n in os.listdir('/persistent-storage'))");
  EXPECT_EQ(listing.result.value_or(""), "['.current', '" + id_ + "']");
  auto forge = run("open('/run/codeact-owner/9', 'w')");
  ASSERT_TRUE(forge.error.has_value()) << "the sandbox could write its placements";
  EXPECT_NE(forge.error->message.find("Read-only file system"), std::string::npos)
      << forge.error->message;

  // Gone from this engine, container and volume (what another host has never had).
  ASSERT_TRUE(docker_->remove_container(SandboxManager::container_name(id_), {.force = true}).ok());
  ASSERT_TRUE(docker_->remove_volume(SandboxManager::volume_name(id_), true).ok());
  SandboxInfo second = start();
  EXPECT_EQ(second.epoch, 2) << "a new placement";
  EXPECT_EQ(second.cell, 3);  // its three cells so far
  auto again = run("x + 1, open('/output/note.txt').read()");
  EXPECT_EQ(again.result.value_or(""), "(42, 'kept')") << (again.error ? again.error->message : "");

  // Removing the sandbox with its volume removes its state on the shared storage.
  ASSERT_TRUE(manager_->remove(id_, /*volume=*/true).ok());
  EXPECT_FALSE(std::filesystem::exists(shared + "/" + id_));
  std::filesystem::remove_all(shared);
}

TEST_F(SandboxManagerTest, ASharedDirectoryThatIsMissingOrBesideNfsIsRefusedWithTheReason) {
  SandboxManagerOptions mo;
  // Shared with the manager, which TearDown still uses.
  auto env_ptr = std::make_shared<std::map<std::string, std::string>>();
  auto& env = *env_ptr;
  env = {{"CODEACT_SHARED_DIR", "/nonexistent/codeact-shared"}};
  mo.env = [env_ptr](const std::string& k) -> std::optional<std::string> {
    auto it = env_ptr->find(k);
    return it == env_ptr->end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  manager_ = std::make_unique<SandboxManager>(docker_, mo);
  SandboxOptions o;
  o.id = id_;
  auto missing = manager_->start(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/codeact-shared is not a directory"),
            std::string::npos)
      << missing.error().message();

  env = {{"CODEACT_SHARED_DIR", "/tmp"}, {"VOLUME_DRIVER", "nfs"}};
  auto both = manager_->start(o);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(both.error().message().find("set one"), std::string::npos) << both.error().message();

  env = {{"CODEACT_SHARED_DIR", "relative/dir"}};
  auto relative = manager_->start(o);
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.error().message().find("absolute path"), std::string::npos);
  env.clear();
}

}  // namespace
