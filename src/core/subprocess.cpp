#include "codeact/core/subprocess.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace codeact::core {
namespace {

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

}  // namespace

std::optional<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!rest.empty()) {
    auto colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    std::string candidate =
        fmt::format("{}/{}", dir.empty() ? std::string_view(".") : std::string_view(dir), name);
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

Result<Subprocess> Subprocess::spawn(const ProcessOptions& options) {
  if (options.argv.empty()) return invalid_argument("cannot start a process: empty argument list");
  auto program = find_program(options.argv[0]);
  if (!program) {
    return not_found(fmt::format("program \"{}\" was not found in PATH", options.argv[0]));
  }

  // Build argv and envp before fork: the child must only call async-signal-safe functions.
  std::vector<std::string> env_strings;
  if (options.inherit_env) {
    for (char** e = environ; *e; ++e) {
      std::string_view kv(*e);
      std::string key(kv.substr(0, kv.find('=')));
      bool drop = options.env.count(key) > 0;
      for (const auto& u : options.unset_env) drop = drop || u == key;
      if (!drop) env_strings.emplace_back(kv);
    }
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(fmt::format("{}={}", k, v));
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1},
      exec_pipe[2] = {-1, -1};
  auto make_pipe = [](int p[2]) { return ::pipe2(p, O_CLOEXEC) == 0; };
  if ((options.pipe_stdin && !make_pipe(in_pipe)) ||
      (options.pipe_stdout && !make_pipe(out_pipe)) ||
      (options.pipe_stderr && !options.stderr_to_stdout && !make_pipe(err_pipe)) ||
      !make_pipe(exec_pipe)) {
    return internal_error(
        fmt::format("cannot create pipes for \"{}\": {}", options.argv[0], std::strerror(errno)));
  }

  pid_t pid = ::fork();
  if (pid < 0) {
    return resource_exhausted(
        fmt::format("cannot fork to start \"{}\": {}", options.argv[0], std::strerror(errno)));
  }
  if (pid == 0) {
    if (options.new_process_group) ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(options.pipe_stdin ? in_pipe[0] : devnull, 0);
    if (options.pipe_stdout) ::dup2(out_pipe[1], 1);
    if (options.stderr_to_stdout && options.pipe_stdout) {
      ::dup2(out_pipe[1], 2);
    } else if (options.pipe_stderr) {
      ::dup2(err_pipe[1], 2);
    }
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) {
      int e = errno;
      (void)!::write(exec_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execve(program->c_str(), argv.data(), envp.data());
    int e = errno;
    (void)!::write(exec_pipe[1], &e, sizeof e);
    ::_exit(127);
  }

  Subprocess p;
  p.pid_ = pid;
  p.own_group_ = options.new_process_group;
  if (options.new_process_group) ::setpgid(pid, pid);  // also from the parent: no race with kill()
  close_fd(in_pipe[0]);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  close_fd(exec_pipe[1]);
  p.stdin_fd_ = in_pipe[1];
  p.stdout_fd_ = out_pipe[0];
  p.stderr_fd_ = err_pipe[0];

  int child_errno = 0;
  ssize_t n = ::read(exec_pipe[0], &child_errno, sizeof child_errno);
  close_fd(exec_pipe[0]);
  if (n == sizeof child_errno) {
    (void)p.wait();
    return not_found(fmt::format("cannot start \"{}\"{}: {}", options.argv[0],
                                 options.cwd.empty() ? "" : fmt::format(" in {}", options.cwd),
                                 std::strerror(child_errno)));
  }
  return p;
}

Subprocess::Subprocess(Subprocess&& o) noexcept
    : pid_(o.pid_),
      stdin_fd_(o.stdin_fd_),
      stdout_fd_(o.stdout_fd_),
      stderr_fd_(o.stderr_fd_),
      own_group_(o.own_group_),
      exit_code_(o.exit_code_) {
  o.pid_ = -1;
  o.stdin_fd_ = o.stdout_fd_ = o.stderr_fd_ = -1;
}

Subprocess& Subprocess::operator=(Subprocess&& o) noexcept {
  if (this != &o) {
    this->~Subprocess();
    new (this) Subprocess(std::move(o));
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_) {
    kill(SIGKILL);
    (void)wait();
  }
  close_fds();
}

void Subprocess::close_fds() {
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
}

Status Subprocess::write_stdin(std::string_view data) {
  if (stdin_fd_ < 0) return failed_precondition("process stdin is not a pipe");
  while (!data.empty()) {
    ssize_t n = ::write(stdin_fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return unavailable(
          fmt::format("writing to process {} failed: {}", pid_, std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return ok_status();
}

void Subprocess::close_stdin() { close_fd(stdin_fd_); }

std::optional<int> Subprocess::poll() {
  if (exit_code_) return exit_code_;
  if (pid_ <= 0) return -1;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_code_ = decode_status(status);
  return exit_code_;
}

Result<int> Subprocess::wait(std::optional<std::chrono::milliseconds> timeout) {
  if (exit_code_) return *exit_code_;
  if (pid_ <= 0) return failed_precondition("no process to wait for");
  if (!timeout) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0) {
      if (errno != EINTR)
        return internal_error(fmt::format("waitpid({}) failed: {}", pid_, std::strerror(errno)));
    }
    exit_code_ = decode_status(status);
    return *exit_code_;
  }
  auto deadline = std::chrono::steady_clock::now() + *timeout;
  auto sleep = std::chrono::microseconds(200);
  while (true) {
    if (auto c = poll()) return *c;
    if (std::chrono::steady_clock::now() >= deadline) {
      return deadline_exceeded(
          fmt::format("process {} still running after {} ms", pid_, timeout->count()));
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(20000));
  }
}

void Subprocess::kill(int signal) {
  if (pid_ <= 0 || exit_code_) return;
  if (own_group_) {
    ::kill(-pid_, signal);
  } else {
    ::kill(pid_, signal);
  }
}

Result<ProcessResult> run_process(std::vector<std::string> argv,
                                  std::optional<std::chrono::milliseconds> timeout,
                                  std::string input, ProcessOptions options,
                                  const CancelToken* cancel) {
  options.argv = std::move(argv);
  options.pipe_stdin = !input.empty();
  options.pipe_stdout = true;
  if (!options.stderr_to_stdout) options.pipe_stderr = true;
  CODEACT_TRY(Subprocess proc, Subprocess::spawn(options));

  ProcessResult result;
  size_t input_off = 0;
  if (proc.stdin_fd() >= 0) ::fcntl(proc.stdin_fd(), F_SETFL, O_NONBLOCK);
  auto start = std::chrono::steady_clock::now();
  bool out_open = proc.stdout_fd() >= 0, err_open = proc.stderr_fd() >= 0;
  while (out_open || err_open || proc.stdin_fd() >= 0) {
    std::vector<pollfd> fds;
    if (out_open) fds.push_back({proc.stdout_fd(), POLLIN, 0});
    if (err_open) fds.push_back({proc.stderr_fd(), POLLIN, 0});
    if (proc.stdin_fd() >= 0) fds.push_back({proc.stdin_fd(), POLLOUT, 0});
    int wait_ms = 100;
    ::poll(fds.data(), fds.size(), wait_ms);
    for (auto& p : fds) {
      if (!p.revents) continue;
      if (p.fd == proc.stdin_fd()) {
        ssize_t n = ::write(p.fd, input.data() + input_off, input.size() - input_off);
        if (n > 0) input_off += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN && errno != EINTR) input_off = input.size();
        if (input_off >= input.size()) proc.close_stdin();
        continue;
      }
      char buf[65536];
      ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n > 0) {
        (p.fd == proc.stdout_fd() ? result.stdout_text : result.stderr_text)
            .append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (p.fd == proc.stdout_fd())
          out_open = false;
        else
          err_open = false;
      }
    }
    bool timed_out = timeout && std::chrono::steady_clock::now() - start > *timeout;
    if (timed_out || (cancel && cancel->cancelled())) {
      proc.kill(SIGKILL);
      (void)proc.wait();
      if (timed_out) {
        return deadline_exceeded(fmt::format("\"{}\" did not finish within {} ms and was killed",
                                             options.argv[0], timeout->count()));
      }
      return cancelled(fmt::format("\"{}\" was cancelled", options.argv[0]));
    }
  }
  auto remaining =
      timeout
          ? std::optional(std::max(std::chrono::milliseconds(1),
                                   *timeout - std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  std::chrono::steady_clock::now() - start)))
          : std::nullopt;
  auto code = proc.wait(remaining);
  if (!code.ok()) {
    proc.kill(SIGKILL);
    (void)proc.wait();
    return deadline_exceeded(fmt::format("\"{}\" did not finish within {} ms and was killed",
                                         options.argv[0], timeout ? timeout->count() : 0));
  }
  result.exit_code = *code;
  return result;
}

}  // namespace codeact::core

namespace codeact::core {

Result<pid_t> spawn_detached(const std::vector<std::string>& argv, const std::string& log_file,
                             const std::string& pid_file) {
  if (argv.empty()) return invalid_argument("spawn_detached: no program");
  // The shell starts it in its own session and exits at once, so it is re-parented to init.
  std::vector<std::string> shell = {
      "/bin/sh", "-c", "log=$1; shift; setsid \"$@\" >>\"$log\" 2>&1 </dev/null & echo $!", "sh",
      log_file.empty() ? "/dev/null" : log_file};
  shell.insert(shell.end(), argv.begin(), argv.end());
  auto r = run_process(shell, std::chrono::seconds(10));
  if (!r.ok()) return std::move(r).error().with_context("starting " + argv[0]);
  pid_t pid = 0;
  try {
    pid = static_cast<pid_t>(std::stol(r->stdout_text));
  } catch (const std::exception&) {
  }
  if (r->exit_code != 0 || pid <= 0) {
    return unavailable(fmt::format("starting {} failed: {}", argv[0], r->stderr_text));
  }
  if (!pid_file.empty()) {
    int fd = ::open(pid_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      std::string text = std::to_string(pid) + "\n";
      [[maybe_unused]] auto n = ::write(fd, text.data(), text.size());
      ::close(fd);
    }
  }
  return pid;
}

}  // namespace codeact::core
