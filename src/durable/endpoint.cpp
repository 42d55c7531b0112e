#include "codeact/durable/endpoint.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "codeact/core/config.hpp"
#include "codeact/core/file_lock.hpp"
#include "codeact/core/files.hpp"
#include "codeact/temporal/dev_server.hpp"

namespace codeact::durable {
namespace {

namespace fs = std::filesystem;
using core::Result;

constexpr int kDefaultPort = 7233;

// True when a Temporal frontend answers at `address` (quickly: this is a probe).
bool temporal_answers(const std::string& address, const std::string& ns,
                      std::chrono::milliseconds wait) {
  TemporalEndpoint e;
  e.address = address;
  e.ns = ns;
  return connect_temporal(e, wait).ok();
}

}  // namespace

Result<temporal::Client> connect_temporal(const TemporalEndpoint& endpoint,
                                          std::chrono::milliseconds wait) {
  temporal::ClientOptions co;
  co.address = endpoint.address;
  co.ns = endpoint.ns;
  auto deadline = std::chrono::steady_clock::now() + wait;
  auto client = temporal::Client::connect(co, wait);
  if (!client.ok()) {
    return core::unavailable(fmt::format("no Temporal server answers at {}: {}", endpoint.address,
                                         client.error().message()));
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  CODEACT_TRY_STATUS(client->wait_until_serving(std::max(left, std::chrono::milliseconds(0))));
  return std::move(client).value();
}

Result<TemporalEndpoint> resolve_temporal(const EndpointRequest& request,
                                          const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  TemporalEndpoint e;
  e.ns = request.ns.empty() ? "default" : request.ns;
  if (!request.flag.empty() || !request.config_url.empty()) {
    e.address = request.flag.empty() ? request.config_url : request.flag;
    // Accept URL forms people paste: grpc://host:port, http://host:port.
    if (auto p = e.address.find("://"); p != std::string::npos) e.address = e.address.substr(p + 3);
    if (e.address.find(':') == std::string::npos) e.address += ":7233";
    return e;
  }

  e.embedded = true;
  fs::path dir =
      fs::path(request.data_dir.empty() ? core::data_dir() : request.data_dir) / "temporal";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::internal_error("cannot create " + dir.string() + ": " + ec.message());
  e.log_path = (dir / "server.log").string();
  core::FileLock lock((dir / "lock").string());

  // A server this data directory started before, still running.
  std::string known = core::read_first_line((dir / "address").string());
  if (!known.empty() && temporal_answers(known, e.ns, std::chrono::milliseconds(1500))) {
    e.address = known;
    say(fmt::format("using the embedded Temporal dev server at {} (already running; data in {})",
                    known, dir.string()));
    return e;
  }

  int port = kDefaultPort;
  if (auto env = core::getenv_string("CODEACT_TEMPORAL_PORT"); env && !env->empty()) {
    try {
      port = std::stoi(*env);
    } catch (const std::exception&) {
      return core::invalid_argument("CODEACT_TEMPORAL_PORT=" + *env + " is not a port number");
    }
  }
  if (!temporal::loopback_port_free(port)) {
    std::string fallback = fmt::format("127.0.0.1:{}", port);
    if (temporal_answers(fallback, e.ns, std::chrono::milliseconds(1500))) {
      e.address = fallback;
      say(fmt::format("using the Temporal server already running at {}", fallback));
      return e;
    }
    port = temporal::free_loopback_port();
  }
  temporal::DevServerOptions server;
  CODEACT_TRY(server.cli, temporal::find_temporal_cli());
  server.port = port;
  server.db_file = (dir / "temporal.db").string();
  server.log_file = e.log_path;
  server.ns = e.ns;
  server.detached = true;  // it outlives this command on purpose
  server.pid_file = (dir / "pid").string();
  e.address = fmt::format("127.0.0.1:{}", port);
  say(fmt::format("starting the embedded Temporal dev server at {} (data in {}, log {})", e.address,
                  dir.string(), e.log_path));
  auto started = temporal::DevServer::start(server);
  if (!started.ok()) return std::move(started).error();
  std::ofstream(dir / "address") << e.address << "\n";
  e.started_now = true;
  say("embedded Temporal dev server ready");
  return e;
}

}  // namespace codeact::durable
