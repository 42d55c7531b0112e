// Shared helpers of the mcp integration tests: where the venv and fixtures are, and a launcher
// for HTTP fixture servers that waits for "listening on PORT".
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

#include "codeact/core/subprocess.hpp"
#include "codeact/mcp/server_config.hpp"

namespace codeact::mcp::testing {

inline std::string venv_bin(const std::string& program) {
  return std::string(CODEACT_SOURCE_DIR) + "/.venv/bin/" + program;
}
inline std::string fixture(const std::string& file) {
  return std::string(CODEACT_SOURCE_DIR) + "/tests/fixtures/mcp/" + file;
}
inline bool have_venv() { return ::access(venv_bin("mcp-server-time").c_str(), X_OK) == 0; }

#define CODEACT_REQUIRE_MCP_VENV()                  \
  if (!::codeact::mcp::testing::have_venv())        \
  GTEST_SKIP() << "no .venv with the MCP servers; " \
                  "run scripts/setup.sh"

inline McpServerConfig stdio(const std::string& name, const std::string& command,
                             std::vector<std::string> args = {}) {
  McpServerConfig c;
  c.name = name;
  c.transport = TransportKind::kStdio;
  c.command = command;
  c.args = std::move(args);
  c.timeout = std::chrono::seconds(30);
  return c;
}

inline McpServerConfig raw_server(std::vector<std::string> extra = {}) {
  std::vector<std::string> args{fixture("raw_server.py")};
  args.insert(args.end(), extra.begin(), extra.end());
  return stdio("raw", venv_bin("python"), args);
}

// An HTTP fixture server (sdk_server.py) on a free port, stopped when this goes away.
class HttpFixture {
 public:
  explicit HttpFixture(std::vector<std::string> args) {
    core::ProcessOptions o;
    o.argv = {venv_bin("python"), fixture("sdk_server.py")};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.pipe_stdout = false;
    auto p = core::Subprocess::spawn(o);
    if (!p.ok()) {
      error_ = p.error().to_string();
      return;
    }
    proc_.emplace(std::move(p).value());
    std::string seen;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd pfd{proc_->stderr_fd(), POLLIN, 0};
      if (::poll(&pfd, 1, 200) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(proc_->stderr_fd(), buf, sizeof buf);
      if (n <= 0) break;
      seen.append(buf, static_cast<size_t>(n));
      auto at = seen.find("listening on ");
      if (at != std::string::npos && seen.find('\n', at) != std::string::npos) {
        port_ = std::stoi(seen.substr(at + 13));
        return;
      }
    }
    error_ = "fixture did not start: " + seen;
  }
  ~HttpFixture() {
    if (proc_) proc_->kill(9);
  }
  int port() const { return port_; }
  const std::string& error() const { return error_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  std::optional<core::Subprocess> proc_;
  int port_ = 0;
  std::string error_;
};

}  // namespace codeact::mcp::testing
