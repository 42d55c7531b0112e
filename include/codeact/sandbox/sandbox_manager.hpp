// SandboxManager: isolated, crash-proof Python sandboxes on the local Docker engine.
//
// A sandbox is identified by a user-chosen id (`[A-Za-z0-9][A-Za-z0-9_.-]{0,62}`) and made of
//   - a named volume `workflow-{id}` mounted at /persistent-storage (state under
//     /persistent-storage/{id}/state/, the agent's files under /persistent-storage/{id}/output/,
//     also visible at /output), which outlives containers;
//   - a hardened container `codeact-{id}`: non-root user, all capabilities dropped,
//     no-new-privileges, read-only root with a tmpfs /tmp, pids/memory/CPU limits, and no network
//     unless asked for; labelled io.codeact.sandbox=1 so that ls/cleanup touch only ours;
//   - one long-lived kernel in it, reached over a unix socket in a host directory
//     (<data_dir>/run/{id}) bind-mounted at /run/codeact.
// Starting an id that exists resumes it with its state; nothing here ever wipes state except
// clear() and remove(id, /*volume=*/true).
//
// Recovery is built in: an operation on a sandbox whose container stopped or died starts it again
// (the kernel restores the last snapshot) and says so in the result's `notice`; a cell that runs
// past its timeout and does not stop when interrupted gets its kernel killed and restarted.
//
// Thread-safe: operations on different sandboxes run in parallel; operations on one sandbox are
// serialized by the kernel (one cell at a time).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/kernel_channel.hpp"

namespace codeact::sandbox {

using core::Json;

inline constexpr std::string_view kSandboxLabel = "io.codeact.sandbox";
inline constexpr std::string_view kSandboxIdLabel = "io.codeact.sandbox.id";

struct SandboxOptions {
  std::string id;  // "" = a fresh random id ("sbx-1a2b3c4d")
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  bool network = false;
  std::string memory = "512m";  // docker-style size: 512m, 2g
  double cpus = 1.0;
  int64_t pids_limit = 256;
  std::string tmp_size = "256m";
  // Default: ENABLE_PERSISTENCE (true unless "false"/"0").
  std::optional<bool> persistence;
  std::string image;  // "" = the codeact sandbox image (built on first use)
};

struct SandboxInfo {
  std::string id;
  std::string container_id;
  std::string container_name;
  std::string volume;
  std::string image;
  std::string status;  // docker state: running, exited, created, ... ; "missing" without container
  bool running = false;
  bool network = false;
  bool resumed = false;  // start() found an existing sandbox
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  int64_t cell = 0;      // last committed cell (when the kernel was asked)
  std::vector<Json> restore_errors;  // {name, reason} reported by the kernel on restore
  Json to_json() const;
};

struct CellError {
  std::string type;
  std::string message;
  std::string traceback;
};

struct ExecuteRequest {
  std::string code;
  std::string execution_id;  // "" = none (no replay protection)
  double timeout_seconds = 300;  // 0 = no limit
  bool persist = true;
  Json variables;                // object of name -> JSON value injected first, or null
  int64_t max_output_bytes = 65536;
  // Live output: (stream name, text) as the cell prints.
  std::function<void(const std::string& stream, const std::string& text)> on_output;
  // Host functions callable from the cell (MCP tools, custom functions).
  BridgeHandler bridge;
  const core::CancelToken* cancel = nullptr;
};

struct ExecuteResult {
  bool ok = false;  // the cell ran without raising
  std::string stdout_text;
  std::string stderr_text;
  std::optional<std::string> result;  // repr of the final expression's value
  std::optional<CellError> error;
  std::vector<Json> outputs;        // {type: "image/png", path}
  std::vector<std::string> files;   // files the cell created or changed
  std::vector<Json> not_persisted;  // {name, reason}
  int64_t duration_ms = 0;
  std::string execution_id;
  int64_t cell = 0;
  bool replayed = false;
  bool timed_out = false;
  bool kernel_restarted = false;
  std::string notice;  // what the manager did to recover, for the user
  Json truncated;      // {stdout: bytes omitted, ...} or null

  // The `sandbox exec --json` object: ok, stdout, stderr, result, error, outputs,
  // not_persisted, duration_ms, execution_id (+ files, cell, replayed, timed_out, notice, ...).
  Json to_json() const;
  static ExecuteResult from_json(const Json& j);
};

struct BashResult {
  int64_t exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
  bool timed_out = false;
  int64_t duration_ms = 0;
  bool replayed = false;  // a recorded result (the execution id had run before)
  Json to_json() const;
};

struct FileEntry {
  std::string path;
  int64_t size = 0;
  double mtime = 0;
};

struct InstallResult {
  bool ok = false;
  std::vector<std::string> installed;
  std::string output;  // installer output (capped)
  std::string image;   // for system packages: the new image the sandbox now runs
  Json to_json() const;
};

struct SandboxManagerOptions {
  // Where per-sandbox host state lives (kernel socket directories). "" = core::data_dir().
  std::string data_dir;
  // Timeout for a kernel to come up after a (re)start. Default 60 s.
  std::chrono::milliseconds ready_timeout{60000};
  // Extra time a cell gets past its timeout to stop by itself before its kernel is killed.
  std::chrono::milliseconds kill_grace{5000};
  // Image progress (first-use build) goes here; null = silent.
  std::function<void(std::string_view)> progress;
  // Environment lookup for ENABLE_PERSISTENCE, VOLUME_DRIVER, NFS_SERVER, NFS_PATH,
  // CODEACT_DURABILITY. Null = the process environment.
  std::function<std::optional<std::string>(const std::string&)> env;
};

class SandboxManager {
 public:
  SandboxManager(std::shared_ptr<DockerClient> docker, SandboxManagerOptions options = {});

  // Creates, or resumes (running or not), the sandbox; waits until its kernel answers; installs
  // requested packages. Never wipes state.
  core::Result<SandboxInfo> start(const SandboxOptions& options);
  // Stops the container; the volume (and so all state) is kept.
  core::Status stop(const std::string& id);
  // Restarts the container (the kernel restores its snapshot).
  core::Result<SandboxInfo> restart(const std::string& id);
  // Removes the container, and its volume too when `volume` is true.
  core::Status remove(const std::string& id, bool volume = false);
  core::Result<SandboxInfo> info(const std::string& id);
  // Sandboxes this codeact created (by label).
  core::Result<std::vector<SandboxInfo>> list();
  // Removes every container this codeact created (volumes kept unless `volumes`).
  core::Result<std::vector<std::string>> cleanup(bool volumes = false);

  core::Result<ExecuteResult> execute(const std::string& id, const ExecuteRequest& request);
  // With an `execution_id` the script runs once: the same id again returns the recorded result
  // (replayed), also when the first call is still running (it waits) or the kernel restarted.
  core::Result<BashResult> bash(const std::string& id, const std::string& script,
                                double timeout_seconds = 300, const std::string& execution_id = "");
  core::Result<Json> variables(const std::string& id);                       // {variables: [...]}
  core::Result<Json> variable(const std::string& id, const std::string& name);  // {name,type,repr,value}
  core::Result<Json> clear(const std::string& id);                           // {cleared: [...]}
  core::Result<std::vector<FileEntry>> list_files(const std::string& id, const std::string& path = "");
  core::Result<std::string> read_file(const std::string& id, const std::string& path);
  core::Status write_file(const std::string& id, const std::string& path, std::string_view data);
  // Python packages go to the sandbox's volume (need network); system packages rebuild the
  // sandbox's image with them and recreate its container (state is kept on the volume).
  core::Result<InstallResult> install(const std::string& id, const std::vector<std::string>& packages,
                                      bool system = false);
  // Registers host functions in the kernel's namespace (for bridge calls): [{name, signature, doc}].
  core::Status register_functions(const std::string& id, const Json& functions);
  // Executes Python source whose names become kernel-provided (custom functions).
  core::Status define(const std::string& id, const std::string& source);
  // Raw kernel operation (with recovery), for callers that need one not wrapped above.
  core::Result<Json> kernel_call(const std::string& id, const std::string& op, Json fields,
                                 std::chrono::milliseconds timeout = std::chrono::minutes(5));

  // volumes
  core::Result<std::vector<VolumeInfo>> list_volumes();
  core::Status remove_volume(const std::string& id);

  DockerClient& docker() { return *docker_; }
  std::string socket_path(const std::string& id) const;

  static core::Status validate_id(const std::string& id);
  static std::string container_name(const std::string& id) { return "codeact-" + id; }
  static std::string volume_name(const std::string& id) { return "workflow-" + id; }
  // Package names: letters, digits and . _ - [ ] , plus a version spec; anything that could
  // mean something to a shell is refused (InvalidArgument naming the package).
  static core::Status validate_python_package(const std::string& name);
  static core::Status validate_system_package(const std::string& name);
  // The volume to create for a sandbox given VOLUME_DRIVER / NFS_SERVER / NFS_PATH.
  VolumeSpec volume_spec(const std::string& id) const;

 private:
  core::Result<std::string> ensure_image(const SandboxOptions& options);
  core::Result<std::string> ensure_system_image(const std::string& base, const std::vector<std::string>& packages);
  core::Result<ContainerSpec> container_spec(const SandboxOptions& options, const std::string& image);
  core::Result<Json> wait_ready(const std::string& id);
  // Makes sure the container runs and its kernel answers; `notice` says what was done.
  core::Result<Json> ensure_running(const std::string& id, std::string* notice);
  core::Result<std::unique_ptr<KernelChannel>> open_channel(const std::string& id, std::string* notice);
  core::Result<Json> call_with_recovery(const std::string& id, const std::string& op, Json fields,
                                        std::chrono::milliseconds timeout, std::string* notice);
  std::optional<std::string> env(const std::string& name) const;
  std::mutex& lock_for(const std::string& id);

  std::shared_ptr<DockerClient> docker_;
  SandboxManagerOptions options_;
  std::mutex locks_mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> locks_;  // GUARDED_BY(locks_mu_)
};

// "512m" -> 536870912; InvalidArgument for garbage.
core::Result<int64_t> parse_size(const std::string& text);

}  // namespace codeact::sandbox
