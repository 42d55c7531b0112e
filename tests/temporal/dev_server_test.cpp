// temporal::DevServer, the one launcher of a local Temporal server: an owned server is gone once
// stopped, a detached one outlives its DevServer, and a server that cannot start says why at once.
#include "codeact/temporal/dev_server.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace codeact::temporal {
namespace {

using namespace std::chrono_literals;

class DevServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/codeact-dev-server-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::string venv = std::string(CODEACT_SOURCE_DIR) + "/.venv/bin/temporal";
    auto found = find_temporal_cli();
    cli_ = access(venv.c_str(), X_OK) == 0 ? venv : (found.ok() ? *found : "");
    if (cli_.empty()) GTEST_SKIP() << "no temporal CLI; run scripts/setup.sh";
  }
  void TearDown() override {
    if (!std::getenv("CODEACT_KEEP_TEST_DIRS")) std::filesystem::remove_all(dir_);
  }
  DevServerOptions options(const std::string& name) const {
    DevServerOptions o;
    o.cli = cli_;
    o.db_file = dir_ + "/" + name + ".db";
    o.log_file = dir_ + "/" + name + ".log";
    return o;
  }
  // True when a Temporal frontend answers at `address` within `wait`.
  static bool answers(const std::string& address, std::chrono::milliseconds wait) {
    ClientOptions co;
    co.address = address;
    return Client::connect(co, wait).ok();
  }

  std::string dir_;
  std::string cli_;
};

TEST_F(DevServerTest, AnOwnedServerServesAtOnceAndIsGoneOnceStopped) {
  auto server = DevServer::start(options("owned"));
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  EXPECT_EQ(server->address().rfind("127.0.0.1:", 0), 0u) << server->address();
  auto client = server->client();
  ASSERT_TRUE(client.ok()) << client.error().to_string();
  // Ready means the namespace serves: an unknown workflow is NotFound, not an error of the server.
  auto d = client->describe_workflow("no-such-workflow");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), core::Code::kNotFound) << d.error().to_string();
  std::string address = server->address();
  server->stop();
  EXPECT_FALSE(answers(address, 1500ms)) << "a stopped owned server no longer answers";
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/owned.db"));
}

TEST_F(DevServerTest, ADetachedServerOutlivesItsDevServer) {
  DevServerOptions o = options("detached");
  o.detached = true;
  o.pid_file = dir_ + "/detached.pid";
  std::string address;
  {
    auto server = DevServer::start(o);
    ASSERT_TRUE(server.ok()) << server.error().to_string();
    address = server->address();
  }  // destroyed (and stopped): a detached server keeps running
  EXPECT_TRUE(answers(address, 5s));
  pid_t pid = 0;
  std::ifstream(o.pid_file) >> pid;
  ASSERT_GT(pid, 0) << "the pid is in " << o.pid_file;
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(answers(address, 1000ms));
}

TEST_F(DevServerTest, AServerThatCannotStartSaysWhyWithoutWaitingItsTimeout) {
  auto first = DevServer::start(options("first"));
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  DevServerOptions taken = options("second");
  taken.port = std::stoi(first->address().substr(first->address().rfind(':') + 1));
  auto start = std::chrono::steady_clock::now();
  auto second = DevServer::start(taken);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), core::Code::kUnavailable);
  EXPECT_NE(second.error().message().find(first->address() + ": the port is in use"),
            std::string::npos)
      << "the server already there does not pass for a new one: " << second.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "not the 60 s ready timeout";

  DevServerOptions missing_cli = options("none");
  missing_cli.cli = dir_ + "/no-such-temporal";
  start = std::chrono::steady_clock::now();
  auto none = DevServer::start(missing_cli);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), core::Code::kUnavailable);
  EXPECT_NE(none.error().message().find("exited with status 127"), std::string::npos)
      << none.error().message();
  EXPECT_NE(none.error().message().find("(see " + missing_cli.log_file + ")"), std::string::npos)
      << "names the log to read: " << none.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << "not the 60 s ready timeout";

  DevServerOptions no_db = options("x");
  no_db.db_file.clear();
  auto bad = DevServer::start(no_db);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), core::Code::kInvalidArgument);
}

TEST_F(DevServerTest, AFreePortIsFreeAndAServersIsNot) {
  int port = free_loopback_port();
  ASSERT_GT(port, 0);
  EXPECT_TRUE(loopback_port_free(port));
  DevServerOptions o = options("port");
  o.port = port;
  auto server = DevServer::start(o);
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  EXPECT_EQ(server->address(), "127.0.0.1:" + std::to_string(port));
  EXPECT_FALSE(loopback_port_free(port));
}

}  // namespace
}  // namespace codeact::temporal
