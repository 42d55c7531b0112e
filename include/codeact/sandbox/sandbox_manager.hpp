// SandboxManager: isolated, crash-proof Python sandboxes on the local Docker engine; the real
// SandboxBackend.
//
// A sandbox is identified by a user-chosen id (`[A-Za-z0-9][A-Za-z0-9_.-]{0,62}`) and made of
//   - a named volume `workflow-{id}` mounted at /persistent-storage (state under
//     /persistent-storage/{id}/state/, the agent's files under /persistent-storage/{id}/output/,
//     also visible at /output), which outlives containers (with CODEACT_SHARED_DIR it binds
//     <dir>/{id} on the storage every host mounts: shared_storage.hpp). On a local volume it is a
//     size-limited ext4 file system (--disk, default 10g) in <data_dir>/sandboxes/{id}/disk.ext4
//     on a loop device, so a sandbox cannot fill the host's disk; a full disk is an error in the
//     cell, and the state committed before it stays intact;
//   - a hardened container `codeact-{id}`: all capabilities dropped but SETUID/SETGID/SETPCAP,
//     which the kernel's start-up uses once to empty the bounding set and drop to the non-root
//     sandbox user (uid 1000) for good (no root process and no capability remain); the
//     host's block devices masked in /sys; the volume mounted nosuid,nodev; no-new-privileges,
//     read-only root with a tmpfs /tmp, pids/memory/CPU limits, capped Docker logs, and no
//     network unless asked for; labelled io.codeact.sandbox=1 so that ls/cleanup touch only
//     ours;
//   - one long-lived kernel in it, reached over a unix socket in <data_dir>/sandboxes/{id}/kernel,
//     a host-owned directory bind-mounted at /run/codeact that the sandbox user cannot write.
//     The host never follows a path the sandbox could have changed: the socket is opened without
//     following links and checked, and every connection authenticates the kernel with a secret
//     made for this container (KernelChannel), so no sandbox can make the host talk to another
//     sandbox's kernel or to any other socket.
// Starting an id that exists resumes it with its state; nothing here ever wipes state except
// clear() and remove(id, /*volume=*/true). Containers made by older codeact versions are
// recreated (state kept) on their next start.
//
// Recovery is built in: an operation on a sandbox whose container stopped or died starts it again
// (the kernel restores the last snapshot) and says so in the result's `notice`, with the exit
// status and what the restore could not bring back; a kernel that runs but no longer accepts
// connections is restarted; a cell that runs past its timeout and does not stop when interrupted
// gets its kernel killed and restarted (a cell queued behind an earlier one that never stops is
// reported as such, naming that cell). A cell whose kernel died is reported lost only when the
// restarted kernel says its execution id did not commit; one that did gets its recorded reply,
// and when the kernel cannot be asked the execute is Unavailable (a retry with the same id
// finds out), so a committed cell is never reported lost.
//
// Thread-safe: operations on different sandboxes run in parallel; operations on one sandbox are
// serialized by the kernel (one cell at a time).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"
#include "codeact/sandbox/sandbox_types.hpp"

namespace codeact::sandbox {

using core::Json;

struct SandboxManagerOptions {
  // Where per-sandbox host state lives (kernel socket directories). "" = core::data_dir().
  std::string data_dir;
  // Timeout for a kernel to come up after a (re)start. Default 60 s.
  std::chrono::milliseconds ready_timeout{60000};
  // The disk limit of sandboxes started without one (SandboxOptions::disk ""): a size or "none".
  // "" = 10g. The CLI passes `sandbox.disk` of app_conf.yml.
  std::string default_disk;
  // Checkpoint retention of sandboxes created from now on (docs/time-travel.md): keep the last
  // `checkpoints_kept` (0 = all) within `checkpoint_budget` bytes held by the older ones. The CLI
  // passes `sandbox.checkpoints` (all | last N) and `sandbox.checkpoint_budget` of app_conf.yml.
  int64_t checkpoints_kept = 0;
  int64_t checkpoint_budget = int64_t{1} << 30;
  // Extra time a cell gets past its timeout to stop by itself before its kernel is killed.
  std::chrono::milliseconds kill_grace{5000};
  // The host this manager's Docker engine is (a worker's --host-id, docs/deploy.md): containers
  // it creates are labelled io.codeact.host with it, and SandboxInfo::host reads it back.
  // "" = no label.
  std::string host_id;
  // Image progress (first-use build) goes here; null = silent.
  std::function<void(std::string_view)> progress;
  // Environment lookup for ENABLE_PERSISTENCE, VOLUME_DRIVER, NFS_SERVER, NFS_PATH,
  // CODEACT_SHARED_DIR (shared_storage.hpp), CODEACT_DURABILITY. Null = the process environment.
  std::function<std::optional<std::string>(const std::string&)> env;
};

// The `sandbox:` section of app_conf.yml (`disk: 10g`) applied to `base`; a missing section
// changes nothing. InvalidArgument naming the key for a bad value.
core::Result<SandboxManagerOptions> manager_options_from_config(const Json& app_config,
                                                                SandboxManagerOptions base = {});

class SandboxManager final : public SandboxBackend {
 public:
  SandboxManager(std::shared_ptr<DockerClient> docker, SandboxManagerOptions options = {});
  ~SandboxManager() override;
  SandboxManager(const SandboxManager&) = delete;
  SandboxManager& operator=(const SandboxManager&) = delete;

  // SandboxBackend (see sandbox_backend.hpp for the contracts).
  // start(): also installs requested packages; an existing sandbox keeps its container unless
  // asked for network or system packages it lacks.
  core::Result<SandboxInfo> start(const SandboxOptions& options) override;
  core::Status stop(const std::string& id) override;
  core::Result<SandboxInfo> restart(const std::string& id) override;
  core::Status remove(const std::string& id, bool volume = false) override;
  core::Result<SandboxInfo> info(const std::string& id) override;
  // Sandboxes this codeact created (by label).
  core::Result<std::vector<SandboxInfo>> list() override;
  core::Result<ExecuteResult> execute(const std::string& id,
                                      const ExecuteRequest& request) override;
  // A retry of a script still running waits for it; the record survives kernel restarts.
  core::Result<BashResult> bash(const std::string& id, const std::string& script,
                                double timeout_seconds = 300,
                                const std::string& execution_id = "") override;
  core::Result<Json> variables(const std::string& id) override;
  core::Result<Json> variable(const std::string& id, const std::string& name) override;
  core::Result<Json> clear(const std::string& id, const std::string& execution_id = "") override;
  core::Result<std::vector<FileEntry>> list_files(const std::string& id,
                                                  const std::string& path = "") override;
  core::Result<std::string> read_file(const std::string& id, const std::string& path) override;
  core::Status write_file(const std::string& id, const std::string& path, std::string_view data,
                          const std::string& execution_id = "") override;
  // Python packages go to the sandbox's volume (need network); system packages rebuild the
  // sandbox's image with them and recreate its container (state is kept on the volume).
  core::Result<InstallResult> install(const std::string& id,
                                      const std::vector<std::string>& packages, bool system = false,
                                      const std::string& execution_id = "") override;
  core::Status register_functions(const std::string& id, const Json& functions) override;
  core::Status define(const std::string& id, const std::string& source) override;
  core::Result<CheckpointHistory> history(const std::string& id) override;
  core::Result<RewindResult> rewind(const std::string& id, int64_t to,
                                    const std::string& execution_id = "") override;
  // The source's checkpoint is exported by its kernel (hard links), copied from the source's
  // volume into the new sandbox's by a short-lived container in the Docker engine (nothing
  // passes through this process), and imported by the new kernel; installed Python packages go
  // along. A source without a volume is FailedPrecondition. A fork that fails after starting the
  // new sandbox removes it.
  core::Result<ForkResult> fork(const std::string& id, int64_t at,
                                const std::string& new_id) override;
  // The options a sandbox was started with (read from its container's labels).
  core::Result<SandboxOptions> options_of(const std::string& id);

  // Removes every container this codeact created (volumes kept unless `volumes`).
  core::Result<std::vector<std::string>> cleanup(bool volumes = false);
  // On shared storage: removes this engine's containers whose sandbox was placed on another
  // host since (a newer ownership epoch, shared_storage.hpp), running or not; their state stays.
  // Returns the sandbox ids. A worker calls it periodically (a host that was cut off and came
  // back leaves no container behind).
  core::Result<std::vector<std::string>> reap_moved();
  // Raw kernel operation (with recovery), for callers that need one not wrapped above.
  core::Result<Json> kernel_call(const std::string& id, const std::string& op, Json fields,
                                 std::chrono::milliseconds timeout = std::chrono::minutes(5));

  // volumes
  core::Result<std::vector<VolumeInfo>> list_volumes();
  core::Status remove_volume(const std::string& id);

  DockerClient& docker();
  // The host directory of the sandbox's kernel socket.
  std::string socket_path(const std::string& id) const;

  static core::Status validate_id(const std::string& id);
  static std::string container_name(const std::string& id) { return "codeact-" + id; }
  static std::string volume_name(const std::string& id) { return "workflow-" + id; }
  // Package names: letters, digits and . _ - [ ] , plus a version spec; anything that could
  // mean something to a shell is refused (InvalidArgument naming the package).
  static core::Status validate_python_package(const std::string& name);
  static core::Status validate_system_package(const std::string& name);
  // A --disk value: "", "none" or a size of at least 16m.
  static core::Status validate_disk(const std::string& disk);
  // The volume to create for a sandbox given CODEACT_SHARED_DIR (a bind of <dir>/<id>, labelled
  // io.codeact.shared-dir) or VOLUME_DRIVER / NFS_SERVER / NFS_PATH. Starting a sandbox refuses
  // CODEACT_SHARED_DIR beside a VOLUME_DRIVER other than local, and makes <dir>/<id> (the
  // sandbox user's); `remove(id, true)` removes it with the volume.
  VolumeSpec volume_spec(const std::string& id) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace codeact::sandbox
