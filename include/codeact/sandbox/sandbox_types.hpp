// The value types of the sandbox API (SandboxBackend, SandboxManager): what a sandbox is made
// from, what its operations take and return. Plain data; copyable; no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::sandbox {

using core::Json;

inline constexpr std::string_view kSandboxLabel = "io.codeact.sandbox";
inline constexpr std::string_view kSandboxIdLabel = "io.codeact.sandbox.id";

// Host function called from sandbox code: (name, positional args, keyword args) -> JSON value,
// or an Error whose message is raised in the sandbox as ToolError.
using BridgeHandler = std::function<core::Result<core::Json>(
    const std::string& name, const core::Json& args, const core::Json& kwargs)>;

struct SandboxOptions {
  std::string id;  // "" = a fresh random id ("sbx-1a2b3c4d")
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  bool network = false;
  std::string memory = "512m";  // docker-style size: 512m, 2g
  double cpus = 1.0;
  int64_t pids_limit = 256;
  std::string tmp_size = "256m";
  // Limit of what the sandbox can write to disk (its volume: state and /output): a docker-style
  // size ("10g"), "none" for no limit, or "" for the backend's default (SandboxManager: 10g, or
  // `sandbox.disk` in app_conf.yml). Fixed when the sandbox is created.
  std::string disk;
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
  std::string disk;        // its disk limit ("10g"); "" = none
  std::string host;        // the host that created it (its label); "" = not known
  std::string shared_dir;  // CODEACT_SHARED_DIR its state is under (any host can start it); ""
  int64_t epoch = 0;       // its container's ownership epoch on shared storage; 0 = none
  int64_t cell = 0;        // last committed cell (when the kernel was asked)
  std::vector<Json> restore_errors;  // {name, reason} reported by the kernel on restore
  std::vector<Json> lost;            // {name, reason}: names the restore could not bring back
  std::string notice;  // what the backend did or could not do, for the user (e.g. no disk limit)
  Json to_json() const;
};

struct CellError {
  std::string type;
  std::string message;
  std::string traceback;
};

struct ExecuteRequest {
  std::string code;
  std::string execution_id;      // "" = none (no replay protection)
  double timeout_seconds = 300;  // 0 = no limit
  bool persist = true;
  Json variables;  // object of name -> JSON value injected first, or null
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
  std::string
      notice;      // what the kernel or the manager did (recovery, killed processes), for the user
  Json truncated;  // {stdout: bytes omitted, ...} or null
  int64_t snapshot_ms = 0;  // time spent saving the state after the cell
  int64_t checkpoint = 0;   // the checkpoint its commit made (0: none, e.g. persist false)

  // The `sandbox exec --json` object: ok, stdout, stderr, result, error, outputs,
  // not_persisted, duration_ms, execution_id (+ files, cell, replayed, timed_out, notice, ...).
  Json to_json() const;
  static ExecuteResult from_json(const Json& j);
};

// One checkpoint: the state (variables and /output files) a committed cell left, numbered from 1
// in commit order (docs/time-travel.md).
struct Checkpoint {
  int64_t n = 0;
  int64_t cell = 0;
  std::string execution_id;                // "" when the cell had none
  double time = 0;                         // seconds since the epoch
  std::vector<std::string> changed;        // names the cell set, rebound or deleted
  std::vector<std::string> files_changed;  // /output/... files it wrote or deleted
  std::vector<std::string> not_persisted;  // names this checkpoint cannot restore
  int64_t added_bytes = 0;                 // storage it added (the files it alone holds)
  bool current = false;                    // the kernel's state is this checkpoint's
  std::string forked_from;                 // "SANDBOX@N" for the first checkpoint of a fork
  Json to_json() const;
  static Checkpoint from_json(const Json& j);
};

struct CheckpointHistory {
  std::vector<Checkpoint> checkpoints;  // oldest first; pruned ones are gone
  int64_t current = 0;
  std::optional<int64_t> keep_last;  // retention: the last N, or all (nullopt)
  int64_t budget = 0;                // bytes the older checkpoints may hold
  Json to_json() const;
};

struct RewindResult {
  int64_t checkpoint = 0;  // the one rewound to
  int64_t previous = 0;    // the one before: rewinding to it undoes this rewind
  std::vector<std::string> restored;
  std::vector<Json> restore_errors;  // {name, reason}
  int64_t files_restored = 0;
  int64_t files_removed = 0;
  std::vector<std::string> files_left;  // untracked files left as they were
  bool replayed = false;                // the recorded answer of the same execution id
  Json to_json() const;
  static RewindResult from_json(const Json& j);
};

// A new sandbox started from a checkpoint of another (SandboxBackend::fork).
struct ForkResult {
  SandboxInfo sandbox;                  // the new one
  std::string source;                   // the sandbox forked
  int64_t source_checkpoint = 0;        // its checkpoint the new one starts from
  std::vector<std::string> restored;    // names the new one has
  std::vector<Json> restore_errors;     // {name, reason}
  std::vector<std::string> files_left;  // untracked /output files not carried over
  Json to_json() const;
};

struct BashResult {
  int64_t exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
  bool timed_out = false;
  int64_t duration_ms = 0;
  bool replayed = false;  // a recorded result (the execution id had run before)
  std::string notice;     // e.g. processes the script left behind that were killed
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

// "512m" -> 536870912; InvalidArgument for garbage.
core::Result<int64_t> parse_size(const std::string& text);

}  // namespace codeact::sandbox
