// SandboxBackend: the operations on sandboxes that code above the sandbox layer uses (the agent's
// sandbox tools, the sandbox functions, the durable activities). SandboxManager is the real one
// (Docker containers with a live kernel); tests use an in-memory fake.
//
// A sandbox is named by an id (`[A-Za-z0-9][A-Za-z0-9_.-]{0,62}`). Every operation but start()
// needs the sandbox to exist (NotFound otherwise) and may restart it first when it had stopped
// (saying so in the result's `notice` where the result has one). Errors use the canonical codes:
// InvalidArgument for bad input (a bad id, package name or path), NotFound, PermissionDenied (a
// path outside the workspace), FailedPrecondition (e.g. installing without network), Unavailable
// or DeadlineExceeded when Docker or the kernel does not answer (worth retrying).
//
// Thread-safe: operations on different sandboxes run in parallel; operations on one sandbox are
// serialized (one cell at a time).
#pragma once

#include <string>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_types.hpp"

namespace codeact::sandbox {

class SandboxBackend {
 public:
  virtual ~SandboxBackend() = default;

  // Creates, or resumes (running or not), the sandbox and waits until it answers. Never wipes
  // state. An empty options.id picks a fresh random one (returned in SandboxInfo::id).
  virtual core::Result<SandboxInfo> start(const SandboxOptions& options) = 0;
  // Stops it; all state is kept.
  virtual core::Status stop(const std::string& id) = 0;
  // Restarts it (state restored from the last committed cell).
  virtual core::Result<SandboxInfo> restart(const std::string& id) = 0;
  // Removes it; its state too when `volume` is true.
  virtual core::Status remove(const std::string& id, bool volume = false) = 0;
  virtual core::Result<SandboxInfo> info(const std::string& id) = 0;
  // Every sandbox of this backend.
  virtual core::Result<std::vector<SandboxInfo>> list() = 0;

  // Runs a cell. A cell that raises or times out is a result (ok false, error set), not an Error.
  virtual core::Result<ExecuteResult> execute(const std::string& id,
                                              const ExecuteRequest& request) = 0;
  // With an `execution_id` the script runs once: the same id again returns the recorded result.
  virtual core::Result<BashResult> bash(const std::string& id, const std::string& script,
                                        double timeout_seconds = 300,
                                        const std::string& execution_id = "") = 0;
  // {variables: [{name, type, kind, persisted, reason?, size?, preview}]}
  virtual core::Result<Json> variables(const std::string& id) = 0;
  // {name, value_type, repr, value}; NotFound when there is no such variable.
  virtual core::Result<Json> variable(const std::string& id, const std::string& name) = 0;
  // {cleared: [names]}. With an `execution_id` it clears once: the same id again returns the
  // recorded answer (replayed: true) and clears nothing.
  virtual core::Result<Json> clear(const std::string& id, const std::string& execution_id = "") = 0;
  // Regular files under `path` ("" = /output), recursively, sorted by path.
  virtual core::Result<std::vector<FileEntry>> list_files(const std::string& id,
                                                          const std::string& path = "") = 0;
  virtual core::Result<std::string> read_file(const std::string& id, const std::string& path) = 0;
  // With an `execution_id` the file is written once: the same id again writes nothing (a
  // retry never overwrites what came after the first write).
  virtual core::Status write_file(const std::string& id, const std::string& path,
                                  std::string_view data, const std::string& execution_id = "") = 0;
  // Python packages (need network) or, with `system`, Debian packages. With an `execution_id`
  // a Python install runs once (the same id again returns the recorded result, pip is not run);
  // a system install is idempotent by itself (packages the image has are not added again).
  virtual core::Result<InstallResult> install(const std::string& id,
                                              const std::vector<std::string>& packages,
                                              bool system = false,
                                              const std::string& execution_id = "") = 0;
  // Registers host functions callable from cells (over the bridge): [{name, signature, doc}].
  virtual core::Status register_functions(const std::string& id, const Json& functions) = 0;
  // Executes Python source whose names become sandbox-provided (custom functions): not listed
  // as variables, not persisted.
  virtual core::Status define(const std::string& id, const std::string& source) = 0;

  // Time travel (docs/time-travel.md). Every committed cell leaves a checkpoint, numbered from 1.
  // FailedPrecondition when the sandbox runs without persistence.
  virtual core::Result<CheckpointHistory> history(const std::string& id) = 0;
  // The live kernel's variables and /output files become checkpoint `to`'s (NotFound when it was
  // never made or was pruned); what cells left uncommitted is committed first. Later checkpoints
  // are kept: rewinding to the result's `previous` undoes it. With an `execution_id` it rewinds
  // once: the same id again returns the recorded answer.
  virtual core::Result<RewindResult> rewind(const std::string& id, int64_t to,
                                            const std::string& execution_id = "") = 0;
  // A new sandbox `new_id` (own container and volume, the source's options) starting from
  // checkpoint `at` of sandbox `id`, whose own state is untouched. AlreadyExists when `new_id`
  // exists and was not made by this fork, or has state of its own (checkpoints, variables,
  // /output files); a retry of a fork that finished returns its result.
  virtual core::Result<ForkResult> fork(const std::string& id, int64_t at,
                                        const std::string& new_id) = 0;
};

}  // namespace codeact::sandbox
