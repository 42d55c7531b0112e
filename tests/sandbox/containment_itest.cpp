// Containment (issue #17), against the real Docker engine and the real sandbox image, tried as a
// hostile tenant would: sandbox A attacks, sandbox B is the victim. Every attack must fail, B must
// be untouched, and A must keep working with a message that tells the truth.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/kernel_channel.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

using namespace codeact;
using namespace codeact::sandbox;
using namespace std::chrono_literals;
using core::Json;
namespace fs = std::filesystem;

namespace {

class ContainmentTest : public ::testing::Test {
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
    SandboxManagerOptions o;
    o.data_dir = (fs::temp_directory_path() / ("codeact-containment-" + std::to_string(::getpid())))
                     .string();
    data_dir_ = o.data_dir;
    manager_ = std::make_unique<SandboxManager>(docker_, o);
    std::random_device rd;
    std::string tag = std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);
    a_ = "attacker-" + tag;
    b_ = "victim-" + tag;
  }
  void TearDown() override {
    (void)manager_->remove(a_, /*volume=*/true);
    (void)manager_->remove(b_, /*volume=*/true);
    std::error_code ec;
    fs::remove_all(data_dir_, ec);
  }

  void start(const std::string& id, SandboxOptions o = {}) {
    o.id = id;
    auto info = manager_->start(o);
    ASSERT_TRUE(info.ok()) << info.error().to_string();
  }
  ExecuteResult run(const std::string& id, const std::string& code, double timeout = 60,
                    const std::string& exec_id = "") {
    ExecuteRequest req;
    req.code = code;
    req.timeout_seconds = timeout;
    req.execution_id = exec_id;
    auto r = manager_->execute(id, req);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : ExecuteResult{};
  }
  // The victim holds a secret and counts the cells it ran.
  void start_victim() {
    start(b_);
    auto r = run(b_, "secret = 'B-secret'\ncells_run = 1\n");
    ASSERT_TRUE(r.ok);
  }
  // B ran nothing it was not sent by its own caller: same counter, no file from A.
  void expect_victim_untouched() {
    auto r = run(b_, "import os\nprint(cells_run, os.path.exists('/output/from-a'))");
    EXPECT_EQ(r.stdout_text, "1 False\n");
  }
  std::string token_of(const std::string& id) {
    auto c = docker_->inspect_container(SandboxManager::container_name(id));
    EXPECT_TRUE(c.ok());
    for (const auto& e : c->raw["Config"]["Env"]) {
      std::string s = e.get<std::string>();
      if (s.rfind("CODEACT_KERNEL_TOKEN=", 0) == 0) return s.substr(21);
    }
    return "";
  }
  // What a sandbox whose host user shares its uid could do to its own kernel directory (and a
  // host-side attacker can always do): replace the socket with a link.
  void plant_link(const std::string& id, const std::string& target) {
    std::string sock = manager_->socket_path(id);
    std::string tmp = sock + ".planted";
    fs::remove(tmp);
    fs::create_symlink(target, tmp);
    fs::rename(tmp, sock);
  }

  static std::shared_ptr<DockerClient> docker_;
  std::unique_ptr<SandboxManager> manager_;
  std::string data_dir_;
  std::string a_, b_;
};
std::shared_ptr<DockerClient> ContainmentTest::docker_;

TEST_F(ContainmentTest, ASandboxCannotWriteItsKernelDirectory) {
  start(a_);
  auto r = run(
      a_,
      "import os\n"
      "for what, fn in [('link', lambda: os.symlink('/run/codeact/x', "
      "'/run/codeact/kernel.sock.new')),\n"
      "                 ('chmod', lambda: os.chmod('/run/codeact', 0o777)),\n"
      "                 ('unlink', lambda: os.unlink('/run/codeact/kernel.sock')),\n"
      "                 ('file', lambda: open('/run/codeact/fill', 'wb').write(b'x' * 4096))]:\n"
      "    try:\n"
      "        fn(); print(what, 'DONE')\n"
      "    except OSError as e:\n"
      "        print(what, type(e).__name__)\n");
  EXPECT_EQ(r.stdout_text,
            "link PermissionError\nchmod PermissionError\nunlink PermissionError\nfile "
            "PermissionError\n");
  EXPECT_EQ(run(a_, "1 + 1").result.value_or(""), "2");
}

TEST_F(ContainmentTest, ALinkToAnotherSandboxsSocketIsNeverFollowed) {
  start(a_);
  start_victim();
  ASSERT_TRUE(run(a_, "mine = 'A-value'").ok);
  plant_link(a_, manager_->socket_path(b_));
  auto r = run(a_, "open('/output/from-a', 'w').write('A'); print(mine)");
  EXPECT_TRUE(r.ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.stdout_text, "A-value\n");  // ran in A, with A's state
  EXPECT_NE(r.notice.find("symbolic link"), std::string::npos) << r.notice;
  // And the variable listing of A is A's, not B's.
  auto vars = manager_->variables(a_);
  ASSERT_TRUE(vars.ok());
  EXPECT_EQ(vars->dump().find("secret"), std::string::npos) << vars->dump();
  expect_victim_untouched();
}

TEST_F(ContainmentTest, ALinkToTheDockerSocketIsRefusedAtOnce) {
  start(a_);
  ASSERT_TRUE(run(a_, "n = 5").ok);
  plant_link(a_, "/var/run/docker.sock");
  auto t0 = std::chrono::steady_clock::now();
  auto r = run(a_, "print(n)");
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.stdout_text, "5\n");
  EXPECT_LT(took, 30s);  // a restart, never a hang on Docker's socket
  EXPECT_TRUE(docker_->ping().ok());
}

TEST_F(ContainmentTest, ARestartRightAfterPlantingALinkStillReachesItsOwnKernel) {
  start(a_);
  start_victim();
  ASSERT_TRUE(run(a_, "mine = 'A-value'").ok);
  plant_link(a_, manager_->socket_path(b_));
  auto restarted = manager_->restart(a_);
  ASSERT_TRUE(restarted.ok()) << restarted.error().to_string();
  auto r = run(a_, "open('/output/from-a', 'w').write('A'); print(mine)");
  EXPECT_EQ(r.stdout_text, "A-value\n");
  expect_victim_untouched();
}

TEST_F(ContainmentTest, AnotherSandboxsKernelDropsARequestMeantForThisOne) {
  start(a_);
  start_victim();
  // The host believes it talks to A but the socket is B's: B's kernel must refuse the pipelined
  // request unread.
  auto ch = KernelChannel::connect(manager_->socket_path(b_), 5s, KernelAuth{a_, token_of(a_)});
  ASSERT_TRUE(ch.ok()) << ch.error().to_string();
  auto r = (*ch)->call("execute",
                       Json{{"code", "open('/output/from-a', 'w').write('A'); cells_run += 1"}},
                       {.timeout = 10s});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kPermissionDenied) << r.error().to_string();
  EXPECT_TRUE((*ch)->auth_failed());
  expect_victim_untouched();
}

TEST_F(ContainmentTest, APeerThatCannotProveItIsTheKernelIsNotBelieved) {
  start(a_);
  ASSERT_TRUE(run(a_, "mine = 'A-value'").ok);
  // A fake kernel at A's socket: it accepts the authentication without knowing the token and
  // answers every request with a forged result.
  std::string sock = manager_->socket_path(a_);
  fs::remove(sock);
  int srv = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0)
      << std::strerror(errno);
  ASSERT_EQ(::listen(srv, 8), 0);
  std::atomic<bool> stop{false};
  std::thread fake([&] {
    auto frame = [](const Json& j) {
      std::string body = j.dump();
      uint32_t n = htonl(static_cast<uint32_t>(body.size()));
      return std::string(reinterpret_cast<const char*>(&n), 4) + body;
    };
    while (!stop) {
      pollfd p{srv, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int c = ::accept(srv, nullptr, nullptr);
      if (c < 0) continue;
      std::string out =
          frame(Json{{"id", 0}, {"type", "reply"}, {"ok", true}, {"mac", std::string(64, '0')}}) +
          frame(Json{{"id", 1},
                     {"type", "reply"},
                     {"ok", true},
                     {"status", "ok"},
                     {"stdout", "FORGED\n"},
                     {"result", "'FORGED'"}});
      (void)::send(c, out.data(), out.size(), MSG_NOSIGNAL);
      std::this_thread::sleep_for(50ms);
      ::close(c);
    }
  });
  auto r = run(a_, "print(mine)");
  stop = true;
  fake.join();
  ::close(srv);
  EXPECT_EQ(r.stdout_text, "A-value\n");
  EXPECT_EQ(r.stdout_text.find("FORGED"), std::string::npos);
}

// A cell runs inside the kernel process, so it can write frames of its own on the host's
// connection: this prelude gives the cell `forge(frame)` to do so (on every connection the kernel
// holds; only the host's execute is open). What the host does with such frames is the test.
const std::string kForge =
    "import gc, json, struct\n"
    "def forge(frame):\n"
    "    data = frame if isinstance(frame, bytes) else json.dumps(frame).encode()\n"
    "    for c in [o for o in gc.get_objects() if type(o).__name__ == 'Connection']:\n"
    "        c.sock.sendall(struct.pack('>I', len(data)) + data)\n";

TEST_F(ContainmentTest, AForgedDeeplyNestedFrameCannotCrashTheHost) {
  start(a_);
  start_victim();
  ASSERT_TRUE(run(a_, "mine = 'A-value'").ok);
  // A million nested arrays: parsing is iterative, but the first copy or dump of it would recurse
  // a million times on the host's stack (a crashed worker or server, every tenant's calls lost).
  ExecuteRequest req;
  req.code = kForge +
             "d = 1_000_000\n"
             "forge(b'{\"id\":1,\"type\":\"queued\",\"running\":' + b'[' * d + b']' * d + b'}')\n";
  req.timeout_seconds = 30;
  auto r = manager_->execute(a_, req);
  ASSERT_FALSE(r.ok());  // we are still here: the host refused the frame
  EXPECT_EQ(r.error().code(), core::Code::kDataLoss) << r.error().to_string();
  EXPECT_NE(r.error().message().find("nested more than"), std::string::npos)
      << r.error().to_string();
  EXPECT_EQ(run(a_, "print(mine)").stdout_text, "A-value\n");
  expect_victim_untouched();
}

TEST_F(ContainmentTest, ForgedQueueEventsCannotStretchTheHostsTimeout) {
  start(a_);
  start_victim();
  ASSERT_TRUE(run(a_, "mine = 'A-value'").ok);
  // The cell claims to wait behind an earlier cell with a million seconds left, then keeps
  // saying it has just started, and ignores the kernel's SIGINT: the host alone bounds the call.
  ExecuteRequest req;
  req.code = kForge +
             "import signal, time\n"
             "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
             "forge({'id': 1, 'type': 'queued', 'running': {'cell': 0, 'execution_id': 'x',\n"
             "       'running_ms': 0, 'timeout_s': 1e6}})\n"
             "t0 = time.time()\n"
             "while time.time() - t0 < 600:\n"
             "    forge({'id': 1, 'type': 'started', 'cell': 2})\n"
             "    time.sleep(0.5)\n";
  req.timeout_seconds = 2;
  auto t0 = std::chrono::steady_clock::now();
  auto r = manager_->execute(a_, req);
  auto took = std::chrono::steady_clock::now() - t0;
  // Twice the budget (2 s + 5 s grace) at most, plus the restart.
  EXPECT_LT(took, 40s);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_TRUE(r->error);
  EXPECT_TRUE(r->kernel_restarted);
  EXPECT_EQ(run(a_, "print(mine)").stdout_text, "A-value\n");
  expect_victim_untouched();
}

TEST_F(ContainmentTest, AKernelThatStopsReadingCannotHangTheHostsSend) {
  start(a_);
  start_victim();
  ASSERT_TRUE(run(a_, "mine = 'A-value'").ok);
  // A thread the cell leaves behind stops the whole kernel once the cell has returned: the host's
  // next big request fills the socket's buffer, and send() would wait for ever.
  ASSERT_TRUE(run(a_,
                  "import os, signal, threading\n"
                  "threading.Timer(1, os.kill, (os.getpid(), signal.SIGSTOP)).start()\n")
                  .ok);
  std::this_thread::sleep_for(2s);
  auto t0 = std::chrono::steady_clock::now();
  auto w = manager_->kernel_call(
      a_, "files.write", Json{{"path", "/output/big"}, {"data_b64", std::string(8 << 20, 'A')}},
      5s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code(), core::Code::kDeadlineExceeded) << w.error().to_string();
  EXPECT_NE(w.error().message().find("did not take the request"), std::string::npos)
      << w.error().to_string();
  auto restarted = manager_->restart(a_);
  ASSERT_TRUE(restarted.ok()) << restarted.error().to_string();
  EXPECT_EQ(run(a_, "print(mine)").stdout_text, "A-value\n");
  expect_victim_untouched();
}

TEST_F(ContainmentTest, ForgedStreamEventsCannotFloodTheCaller) {
  start(a_);
  ExecuteRequest req;
  req.code = kForge +
             "print('honest')\n"
             "for _ in range(200):\n"
             "    forge({'id': 1, 'type': 'stream', 'name': 'stdout', 'text': 'x' * 65536})\n";
  req.timeout_seconds = 60;
  req.max_output_bytes = 4096;
  std::string seen;
  req.on_output = [&](const std::string& name, const std::string& text) {
    if (name == "stdout") seen += text;
  };
  auto r = manager_->execute(a_, req);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->ok);
  // Not 13 MB: at most what an honest kernel could send (3 bytes per invalid byte, and its own
  // notice), then the host's one notice.
  EXPECT_LE(seen.size(), 3 * 4096u + 1024u + 100u);
  EXPECT_NE(seen.find("[the host cut this stream"), std::string::npos);
  EXPECT_EQ(seen.find("[the host cut this stream"), seen.rfind("[the host cut this stream"));
  EXPECT_EQ(run(a_, "1 + 1").result.value_or(""), "2");
}

TEST_F(ContainmentTest, AnHonestCellsOutputCapKeepsTheKernelsOwnNotice) {
  start(a_);
  ExecuteRequest req;
  req.code = "import sys\nsys.stdout.write('y' * 20000)\n";
  req.timeout_seconds = 60;
  req.max_output_bytes = 4096;
  std::string seen;
  req.on_output = [&](const std::string& name, const std::string& text) {
    if (name == "stdout") seen += text;
  };
  auto r = manager_->execute(a_, req);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_NE(seen.find("streaming stopped"), std::string::npos) << seen.substr(seen.size() - 200);
  EXPECT_EQ(seen.find("[the host cut this stream"), std::string::npos);
}

TEST_F(ContainmentTest, ASandboxCannotListTheOtherSandboxesDisks) {
  start(a_, SandboxOptions{.disk = "64m"});
  start(b_, SandboxOptions{.disk = "64m"});
  // Every loop device names its backing file, <data>/sandboxes/<id>/disk.ext4, in /sys.
  auto r = run(a_,
               "import glob, os\n"
               "seen = set()\n"
               "for pattern in ['/sys/block/*/loop/backing_file', '/sys/class/block/*/loop/"
               "backing_file',\n"
               "                '/sys/dev/block/*/loop/backing_file',\n"
               "                '/sys/devices/virtual/block/*/loop/backing_file']:\n"
               "    for f in glob.glob(pattern):\n"
               "        try:\n"
               "            seen.add(open(f).read().strip())\n"
               "        except OSError:\n"
               "            pass\n"
               "for root, dirs, files in os.walk('/sys/devices', onerror=lambda e: None):\n"
               "    if 'backing_file' in files:\n"
               "        seen.add(open(os.path.join(root, 'backing_file')).read().strip())\n"
               "print(sorted(seen))\n");
  EXPECT_EQ(r.stdout_text, "[]\n") << (r.error ? r.error->message : "");
  EXPECT_EQ(r.stdout_text.find(b_), std::string::npos);
}

TEST_F(ContainmentTest, NoProcessHoldsACapabilityNotEvenInItsBoundingSet) {
  start(a_);
  // The kernel (which runs the cells), its init (pid 1), and what a cell starts.
  auto r = run(a_,
               "import os, subprocess\n"
               "def caps(status):\n"
               "    return sorted(l.split()[0] + l.split()[1] for l in status.splitlines()\n"
               "                  if l.startswith('Cap'))\n"
               "print(caps(open('/proc/self/status').read()))\n"
               "print(caps(open('/proc/1/status').read()))\n"
               "print(caps(subprocess.run(['cat', '/proc/self/status'], capture_output=True,\n"
               "                          text=True).stdout))\n");
  const std::string none =
      "['CapAmb:0000000000000000', 'CapBnd:0000000000000000', 'CapEff:0000000000000000', "
      "'CapInh:0000000000000000', 'CapPrm:0000000000000000']\n";
  EXPECT_EQ(r.stdout_text, none + none + none);
}

TEST_F(ContainmentTest, TheDiskIsMountedWithoutSetuidFilesOrDevices) {
  start(a_, SandboxOptions{.disk = "64m"});
  auto r = run(a_,
               "for line in open('/proc/self/mountinfo'):\n"
               "    f = line.split()\n"
               "    if f[4] == '/persistent-storage':\n"
               "        print(f[f.index('-') + 1], 'nosuid' in f[5], 'nodev' in f[5])\n");
  EXPECT_EQ(r.stdout_text, "ext4 True True\n");
  // And on the host, where Docker mounted it.
  auto vol = docker_->inspect_volume(SandboxManager::volume_name(a_));
  ASSERT_TRUE(vol.ok());
  EXPECT_EQ(vol->options.count("o") ? vol->options.at("o") : "", "nosuid,nodev");
}

TEST_F(ContainmentTest, AFullDiskFailsTheCellAndKeepsTheCommittedState) {
  start(a_, SandboxOptions{.disk = "64m"});
  auto info = manager_->info(a_);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->disk, "64m");
  ASSERT_TRUE(run(a_, "kept = 41").ok);
  auto fill = run(a_,
                  "with open('/output/big', 'wb') as f:\n    for _ in range(200):\n        "
                  "f.write(b'x' * (1 << 20))\n");
  ASSERT_FALSE(fill.ok);
  ASSERT_TRUE(fill.error);
  EXPECT_NE(fill.error->message.find("No space left on device"), std::string::npos)
      << fill.error->message;
  EXPECT_NE(fill.error->message.find("limited to 64m"), std::string::npos) << fill.error->message;
  // The committed state is intact, here and after the container is killed.
  EXPECT_EQ(run(a_, "kept + 1").result.value_or(""), "42");
  ASSERT_TRUE(docker_->kill_container(SandboxManager::container_name(a_)).ok());
  EXPECT_EQ(run(a_, "import os; os.remove('/output/big'); kept").result.value_or(""), "41");
  // The sandbox saw a 64m file system, and the host pays only for what was written.
  auto df = run(a_,
                "import os; s = os.statvfs('/persistent-storage'); print(s.f_blocks * s.f_frsize "
                "// (1 << 20))");
  int64_t mib = std::stoll(df.stdout_text.empty() ? "0" : df.stdout_text);
  EXPECT_GT(mib, 40);
  EXPECT_LE(mib, 64);
}

TEST_F(ContainmentTest, ABashForkBombEndsWithItsScript) {
  start(a_);
  auto bomb = manager_->bash(a_, "bomb() { bomb | bomb & }; bomb", 3);
  ASSERT_TRUE(bomb.ok()) << bomb.error().to_string();
  // Nothing of it is left: only the kernel, its init and its process supervisor run.
  auto count = run(
      a_,
      "import os\n"
      "others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid())\n"
      "          and 'codeact_kernel/supervisor.py' not in open(f'/proc/{p}/cmdline').read()]\n"
      "print(len(others), [open(f'/proc/{p}/cmdline').read().replace(chr(0), ' ') for p in "
      "others])\n");
  EXPECT_EQ(count.stdout_text, "0 []\n");
  auto next = manager_->bash(a_, "echo fine", 10);
  ASSERT_TRUE(next.ok()) << next.error().to_string();
  EXPECT_EQ(next->stdout_text, "fine\n");
}

TEST_F(ContainmentTest, ASetsidProcessDoesNotOutliveItsScript) {
  start(a_);
  auto r = manager_->bash(a_, "setsid sleep 1000 & (nohup sleep 999 &) ; echo started", 10);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->stdout_text, "started\n");
  auto count = run(a_,
                   "import os\n"
                   "print(sum(1 for p in os.listdir('/proc') if p.isdigit() and 'sleep' in "
                   "open(f'/proc/{p}/cmdline').read()))\n");
  EXPECT_EQ(count.stdout_text, "0\n");
}

TEST_F(ContainmentTest, APythonForkBombDoesNotWedgeTheSandbox) {
  start(a_);
  ASSERT_TRUE(run(a_, "kept = 7").ok);
  auto bomb = run(a_, "import os\nwhile True:\n    os.fork()\n", 10);
  EXPECT_FALSE(bomb.ok);
  auto t0 = std::chrono::steady_clock::now();
  auto next = run(a_, "kept * 6");
  EXPECT_EQ(next.result.value_or(""), "42");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
}

TEST_F(ContainmentTest, ACellThatClosesTheKernelsDescriptorsAfterItsCallerLeftIsRecovered) {
  start(a_);
  ASSERT_TRUE(run(a_, "kept = 'yes'").ok);
  {
    // A caller that sends the cell and goes away at once (a killed CLI).
    auto ch = KernelChannel::connect(manager_->socket_path(a_), 5s, KernelAuth{a_, token_of(a_)});
    ASSERT_TRUE(ch.ok());
    (void)(*ch)->call("execute",
                      Json{{"code", "import os, time\nos.closerange(3, 65536)\ntime.sleep(1)\n"},
                           {"timeout", 30}},
                      {.timeout = 300ms});
  }
  std::this_thread::sleep_for(2s);
  auto t0 = std::chrono::steady_clock::now();
  auto next = run(a_, "kept");
  EXPECT_EQ(next.result.value_or(""), "'yes'");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 40s);
}

TEST_F(ContainmentTest, OsExitIsReportedAsTheKernelExitingWithItsStatus) {
  start(a_);
  auto r = run(a_, "import os; os._exit(3)");
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->message.find("exited with status 3"), std::string::npos) << r.error->message;
  EXPECT_EQ(run(a_, "1 + 1").result.value_or(""), "2");
}

TEST_F(ContainmentTest, ACellQueuedBehindAStuckOneSaysWhichCellItWas) {
  start(a_);
  {
    auto ch = KernelChannel::connect(manager_->socket_path(a_), 5s, KernelAuth{a_, token_of(a_)});
    ASSERT_TRUE(ch.ok());
    (void)(*ch)->call("execute",
                      Json{{"code",
                            "import signal, time\nsignal.signal(signal.SIGINT, "
                            "signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)\n"},
                           {"timeout", 2},
                           {"execution_id", "stuck-cell-1"}},
                      {.timeout = 300ms});
  }
  auto r = run(a_, "x = 1", 2, "second-cell");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->type, "SandboxBusy");
  EXPECT_NE(r.error->message.find("stuck-cell-1"), std::string::npos) << r.error->message;
  EXPECT_NE(r.error->message.find("did not run"), std::string::npos) << r.error->message;
  EXPECT_EQ(run(a_, "1 + 1").result.value_or(""), "2");
}

TEST_F(ContainmentTest, ARestoreSaysWhatItCouldNotBringBack) {
  start(a_);
  ASSERT_TRUE(
      run(a_, "import socket\nsock = socket.socket()\ngen = (i for i in range(3))\nkept = 1\n").ok);
  ASSERT_TRUE(docker_->kill_container(SandboxManager::container_name(a_)).ok());
  auto r = run(a_, "kept");
  EXPECT_EQ(r.result.value_or(""), "1");
  EXPECT_NE(r.notice.find("not restored"), std::string::npos) << r.notice;
  EXPECT_NE(r.notice.find("sock"), std::string::npos) << r.notice;
  EXPECT_NE(r.notice.find("gen"), std::string::npos) << r.notice;
}

TEST_F(ContainmentTest, AliasesKeepTheirIdentityAcrossDockerKill) {
  start(a_);
  ASSERT_TRUE(run(a_, "a = [1]\nb = a\nd = {'k': a}\n").ok);
  ASSERT_TRUE(docker_->kill_container(SandboxManager::container_name(a_)).ok());
  auto r = run(a_, "b.append(2); print(a is b, a, d['k'] is a)");
  EXPECT_EQ(r.stdout_text, "True [1, 2] True\n");
}

}  // namespace

namespace {

std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

TEST_F(ContainmentTest, AfterARebootTheDiskIsReattachedAndNeverSwappedForAnotherOne) {
  start(a_, SandboxOptions{.disk = "64m"});
  ASSERT_TRUE(run(a_, "kept = 'A-state'\nopen('/output/mine', 'w').write('A')\n").ok);
  ASSERT_TRUE(manager_->stop(a_).ok());
  auto vol = docker_->inspect_volume(SandboxManager::volume_name(a_));
  ASSERT_TRUE(vol.ok());
  const std::string device = vol->options.at("device");
  // A reboot forgets loop devices; then another file takes A's old number.
  ASSERT_EQ(sh("losetup -d " + device + " && echo ok"), "ok");
  std::string decoy = data_dir_ + "/decoy.ext4";
  sh("truncate -s 32M " + decoy + " && mkfs.ext4 -q -F " + decoy);
  ASSERT_EQ(sh("losetup " + device + " " + decoy + " && echo ok"), "ok");
  auto r = run(a_,
               "import os\nprint(kept, open('/output/mine').read(), "
               "sorted(os.listdir('/persistent-storage')))");
  sh("losetup -d " + device);
  EXPECT_EQ(r.stdout_text.substr(0, 10), "A-state A ")
      << r.stdout_text << (r.error ? r.error->message : "");
  auto after = docker_->inspect_volume(SandboxManager::volume_name(a_));
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->options.at("device"), device);  // re-attached elsewhere, volume redefined
}

}  // namespace
