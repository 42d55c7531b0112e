// Child processes: spawn with an argument vector (never a shell string), optional pipes,
// environment changes, its own process group; wait with a timeout; kill the whole group.
//
// A Subprocess owns its pipes and reaps its child; destroying a running Subprocess kills its
// process group (SIGKILL) and waits for it, so no process outlives its owner by accident.
// Not thread-safe, except kill(), which may be called from another thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codeact/core/cancel.hpp"
#include "codeact/core/result.hpp"

namespace codeact::core {

struct ProcessOptions {
  std::vector<std::string> argv;           // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;  // added to (or replacing) the inherited environment
  std::vector<std::string> unset_env;      // removed from the inherited environment
  bool inherit_env = true;
  std::string cwd;                // "" = current directory
  bool pipe_stdin = false;        // else /dev/null
  bool pipe_stdout = true;        // else inherited
  bool pipe_stderr = true;        // else inherited
  bool stderr_to_stdout = false;  // merge stderr into the stdout pipe
  bool new_process_group = true;  // so kill() reaches grandchildren
};

class Subprocess {
 public:
  static Result<Subprocess> spawn(const ProcessOptions& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return stdin_fd_; }    // -1 when not piped
  int stdout_fd() const { return stdout_fd_; }  // -1 when not piped
  int stderr_fd() const { return stderr_fd_; }  // -1 when not piped

  // Writes all of data to stdin (blocking). Unavailable if the child closed it.
  Status write_stdin(std::string_view data);
  void close_stdin();

  // Waits for exit. Returns the exit code, or 128+signal if killed by a signal.
  // DeadlineExceeded when `timeout` passes first (the child keeps running).
  Result<int> wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Non-blocking: the exit code if the child has exited.
  std::optional<int> poll();
  bool running() { return !poll().has_value(); }

  // Sends a signal to the child (its process group when it has one).
  void kill(int signal = 9);

 private:
  Subprocess() = default;
  void close_fds();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  bool own_group_ = false;
  std::optional<int> exit_code_;
};

struct ProcessResult {
  int exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
};

// Runs a process to completion, feeding `input` on stdin and collecting both outputs.
// DeadlineExceeded (after killing the process) if it runs past `timeout`; NotFound if the
// program does not exist. A non-zero exit is NOT an error here.
Result<ProcessResult> run_process(std::vector<std::string> argv,
                                  std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                                  std::string input = "", ProcessOptions options = {},
                                  const CancelToken* cancel = nullptr);

// Starts `argv` in a session of its own that outlives this process on purpose (a local server
// later commands reuse): its stdin is /dev/null, its output is appended to `log_file`, and it is
// re-parented to init. Returns its pid (also written to `pid_file` when not ""). Unavailable
// when it cannot be started; a program that starts and then fails is seen by the caller's own
// readiness check, not here.
Result<pid_t> spawn_detached(const std::vector<std::string>& argv, const std::string& log_file,
                             const std::string& pid_file = "");

// Finds a program in PATH; nullopt if absent.
std::optional<std::string> find_program(const std::string& name);

}  // namespace codeact::core
