// The stdio transport: the MCP server is a child process speaking newline-delimited JSON-RPC on
// its stdin/stdout; its stderr lines go to the log.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/core/subprocess.hpp"
#include "transports_internal.hpp"

namespace codeact::mcp {
namespace {

constexpr size_t kStderrTailLines = 20;
constexpr size_t kMaxLineBytes = size_t{256} << 20;  // one JSON-RPC message

class StdioTransport final : public McpTransport {
 public:
  explicit StdioTransport(McpServerConfig config) : config_(std::move(config)) {}
  ~StdioTransport() override { close(); }

  core::Status start(TransportHandlers handlers, std::chrono::milliseconds /*timeout*/) override {
    static std::once_flag sigpipe_once;
    // A server that dies while we write to it must give EPIPE, not kill us.
    std::call_once(sigpipe_once, [] { ::signal(SIGPIPE, SIG_IGN); });
    handlers_ = std::move(handlers);
    core::ProcessOptions opts;
    opts.argv.push_back(config_.command);
    opts.argv.insert(opts.argv.end(), config_.args.begin(), config_.args.end());
    opts.env = config_.env;
    opts.cwd = config_.cwd;
    opts.pipe_stdin = true;
    auto proc = core::Subprocess::spawn(opts);
    if (!proc.ok()) {
      return proc.error().with_context(
          fmt::format("cannot start MCP server '{}' ({})", config_.name, config_.describe()));
    }
    proc_.emplace(std::move(proc).value());
    stdin_fd_ = proc_->stdin_fd();
    core::log().debug("mcp[{}]: started pid {} ({})", config_.name, proc_->pid(),
                      config_.describe());
    stderr_thread_ = std::thread([this] { read_stderr(); });
    stdout_thread_ = std::thread([this] { read_stdout(); });
    return core::ok_status();
  }

  core::Status send(const Json& message, std::chrono::milliseconds,
                    const core::CancelToken*) override {
    std::string line = core::dump_json(message) + "\n";
    std::lock_guard lock(write_mu_);
    if (stdin_fd_ < 0)
      return core::unavailable(fmt::format("MCP server '{}' is not running", config_.name));
    std::string_view data = line;
    while (!data.empty()) {
      ssize_t n = ::write(stdin_fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return core::unavailable(fmt::format("MCP server '{}': writing to its stdin failed: {}",
                                             config_.name, std::strerror(errno)));
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return core::ok_status();
  }

  void close() override {
    {
      std::lock_guard lock(write_mu_);
      if (closing_) return;
      closing_ = true;
      if (stdin_fd_ >= 0 && proc_) proc_->close_stdin();
      stdin_fd_ = -1;
    }
    if (!proc_) return;
    // EOF on stdin asks the server to exit; then SIGTERM, then SIGKILL.
    auto wait_exit = [this](std::chrono::milliseconds d) {
      std::unique_lock lock(state_mu_);
      return exit_cv_.wait_for(lock, d, [this] { return stdout_done_; });
    };
    if (!wait_exit(std::chrono::milliseconds(500))) {
      proc_->kill(SIGTERM);
      if (!wait_exit(std::chrono::milliseconds(1000))) proc_->kill(SIGKILL);
    }
    if (stdout_thread_.joinable()) stdout_thread_.join();
    stop_stderr_.store(true);
    if (stderr_thread_.joinable()) stderr_thread_.join();
  }

  std::string stderr_tail() const override {
    std::lock_guard lock(state_mu_);
    std::string out;
    for (const auto& l : stderr_lines_) out += (out.empty() ? "" : "\n") + l;
    return out;
  }

 private:
  void read_stderr() {
    std::string buf;
    char chunk[8192];
    int fd = proc_->stderr_fd();
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      int ready = ::poll(&p, 1, 100);
      if (ready == 0) {
        if (stop_stderr_.load()) break;  // a grandchild may hold the pipe open forever
        continue;
      }
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        stderr_line(buf.substr(0, nl));
        buf.erase(0, nl + 1);
      }
      if (buf.size() > 64 * 1024) {
        stderr_line(buf);
        buf.clear();
      }
    }
    if (!buf.empty()) stderr_line(buf);
  }

  void stderr_line(std::string line) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) return;
    core::log().info("mcp[{}] stderr: {}", config_.name, line);
    std::lock_guard lock(state_mu_);
    stderr_lines_.push_back(core::abbreviate(line, 500));
    while (stderr_lines_.size() > kStderrTailLines) stderr_lines_.pop_front();
  }

  void read_stdout() {
    std::string buf;
    std::vector<char> chunk(1 << 16);
    int fd = proc_->stdout_fd();
    size_t scanned = 0;
    for (;;) {
      ssize_t n = ::read(fd, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.append(chunk.data(), static_cast<size_t>(n));
      size_t start = 0;
      for (;;) {
        size_t nl = buf.find('\n', std::max(start, scanned));
        if (nl == std::string::npos) break;
        deliver(std::string_view(buf).substr(start, nl - start));
        start = nl + 1;
        scanned = start;
      }
      buf.erase(0, start);
      scanned = buf.size();
      if (buf.size() > kMaxLineBytes) {
        handlers_.on_malformed(core::resource_exhausted(
            fmt::format("MCP server '{}' sent a message larger than {} MB on stdout", config_.name,
                        kMaxLineBytes >> 20)));
        buf.clear();
        scanned = 0;
      }
    }
    // EOF: the server closed stdout, normally because it exited.
    int code = -1;
    auto status = proc_->wait(std::chrono::milliseconds(3000));
    if (status.ok()) code = *status;
    {
      std::lock_guard lock(state_mu_);
      stdout_done_ = true;
    }
    exit_cv_.notify_all();
    bool expected;
    {
      std::lock_guard lock(write_mu_);
      expected = closing_;
    }
    // Let the stderr reader catch up so the tail holds the server's last words.
    for (int i = 0; i < 20 && !expected; ++i) {
      pollfd p{proc_->stderr_fd(), POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::string tail = stderr_tail();
    std::string msg = code >= 0 ? fmt::format("MCP server '{}' ({}) exited with status {}",
                                              config_.name, config_.describe(), code)
                                : fmt::format("MCP server '{}' ({}) closed its stdout",
                                              config_.name, config_.describe());
    if (!tail.empty()) msg += "; its last stderr lines:\n" + tail;
    if (!expected) core::log().warn("{}", msg);
    handlers_.on_closed(core::unavailable(msg));
  }

  void deliver(std::string_view line) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) return;
    auto j = core::parse_json(line, "MCP message");
    if (!j.ok() || !(j->is_object() || j->is_array())) {
      handlers_.on_malformed(core::data_loss(fmt::format(
          "MCP server '{}' wrote something that is not a JSON-RPC message on stdout: '{}'",
          config_.name, core::abbreviate(line, 200))));
      return;
    }
    handlers_.on_message(std::move(j).value());
  }

  McpServerConfig config_;
  TransportHandlers handlers_;
  std::optional<core::Subprocess> proc_;
  std::thread stdout_thread_;
  std::thread stderr_thread_;
  std::mutex write_mu_;
  int stdin_fd_ = -1;     // GUARDED_BY(write_mu_)
  bool closing_ = false;  // GUARDED_BY(write_mu_)
  mutable std::mutex state_mu_;
  std::condition_variable exit_cv_;
  bool stdout_done_ = false;              // GUARDED_BY(state_mu_)
  std::deque<std::string> stderr_lines_;  // GUARDED_BY(state_mu_)
  std::atomic<bool> stop_stderr_{false};
};

}  // namespace

std::unique_ptr<McpTransport> make_stdio_transport(const McpServerConfig& config) {
  return std::make_unique<StdioTransport>(config);
}

std::unique_ptr<McpTransport> make_transport(const McpServerConfig& config) {
  switch (config.transport) {
    case TransportKind::kStdio:
      return make_stdio_transport(config);
    case TransportKind::kStreamableHttp:
      return make_streamable_http_transport(config);
    case TransportKind::kSse:
      return make_sse_transport(config);
  }
  return make_stdio_transport(config);
}

}  // namespace codeact::mcp
