// SandboxRun: the lifecycle of a CodeAct run's sandbox, written once for both modes.
//
//   open()     start (or resume) the sandbox; when that fails, remove its container again (a
//              failed package install may have left it running; the volume is kept unless
//              remove_volume) and return the error, with the cleanup's own if it failed too
//   prepare()  bind the agent to it (system prompt rendered from the sandbox's variables)
//   turn()     list /output, run the agent on a task, list /output again: the files produced
//   close()    end it as SandboxPlan::end says: stop the container after a success, remove it
//              after a failure or a cancel; with remove_volume remove container and volume
//              whatever the outcome; with keep_sandbox (which wins) leave both as they are
//
// A task run is open, prepare, one turn, close (run_task_in_sandbox); a chat opens once, prepares
// once, takes a turn per message and closes at the end. The steps' effects go through RunSteps:
// direct mode runs them inline on a SandboxBackend (CodeActAgent::run_direct); the durable layer
// schedules each as an activity, and the agent its prepare step gives runs the same loop with the
// model request and tool calls as activities (durable/durable_agent.hpp).
//
// The steps are coroutines (agent::Task) so that a workflow's deterministic executor can drive
// them; nothing here blocks or starts a thread. Not thread-safe: one SandboxRun per run.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/agent/agent.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"
#include "codeact/sandbox/sandbox_types.hpp"

namespace codeact::codeact {

// What happens to a run's sandbox at the end.
enum class SandboxEnd { kStop, kRemove, kKeep };
std::string_view sandbox_end_name(SandboxEnd end);  // "stop" | "remove" | "keep"

// Where a sandbox that is forked starts: checkpoint `checkpoint` of sandbox `sandbox`
// (SandboxBackend::fork).
struct SandboxFork {
  std::string sandbox;
  int64_t checkpoint = 0;
};

// The sandbox of a run and what becomes of it.
struct SandboxPlan {
  std::string sandbox_id;  // REQUIRED
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  bool network = false;
  std::string disk;  // the sandbox's disk limit ("10g", "none"); "" = the backend's default
  bool keep_sandbox = false;   // leave the container running at the end
  bool remove_volume = false;  // also remove the volume (its state and files) at the end
  // Set: the sandbox starts as a fork of that checkpoint when it does not exist yet (or exists
  // with no checkpoint: a fork cut short); an existing one is resumed as it is.
  std::optional<SandboxFork> fork_from;

  // kKeep with keep_sandbox; kStop after a success unless remove_volume; kRemove otherwise.
  SandboxEnd end(bool success) const;
  sandbox::SandboxOptions start_options() const;
};

// What the start said.
struct SandboxStarted {
  bool resumed = false;  // an existing sandbox was resumed with its state
  std::string volume;
  std::string host;     // the worker host it runs on (durable runs, docs/deploy.md); "" in process
  bool shared = false;  // its state is on shared storage: another host can start it
  int64_t cell = 0;     // its last committed cell
};

// The agent a turn runs and how: its loop's drivers (direct: a RunLoop executor; durable: the
// activity-backed model and the workflow's clock).
struct PreparedAgent {
  std::shared_ptr<const agent::Agent> agent;
  agent::RunDrivers drivers;
  std::string model_name;
};

// Where the lifecycle's effects go.
class RunSteps {
 public:
  virtual ~RunSteps() = default;
  virtual agent::Task<core::Result<SandboxStarted>> start_sandbox(const SandboxPlan& plan) = 0;
  // Files under /output, sorted by path.
  virtual agent::Task<core::Result<std::vector<sandbox::FileEntry>>> list_output(
      const std::string& sandbox_id) = 0;
  // Stops, removes or keeps it (end_sandbox's rules). A sandbox already gone is not an error.
  virtual agent::Task<core::Status> finish_sandbox(const std::string& sandbox_id, SandboxEnd end,
                                                   bool remove_volume) = 0;
  virtual agent::Task<core::Result<PreparedAgent>> prepare_agent(const std::string& sandbox_id) = 0;
};

// What a run's sandbox went through, for a live view or progress lines.
struct SandboxRunEvent {
  enum class Kind {
    kStarting,  // before the start
    kStarted,   // `started` is set
    kFiles,     // a turn produced `files`
    kClosing,   // before the end `end`
    kClosed,    // after it; `closed` says whether it worked
  };
  Kind kind;
  std::string sandbox_id;
  SandboxStarted started;
  std::vector<std::string> files;
  SandboxEnd end = SandboxEnd::kStop;
  core::Status closed;
};

// One agent run in the sandbox: the result, and the files it produced under /output.
struct TurnResult {
  core::Result<agent::AgentRunResult> run = core::internal_error("not run");
  std::vector<std::string> files;
};

class SandboxRun {
 public:
  // REQUIRES: `steps` outlives this object and every task it returns.
  SandboxRun(RunSteps& steps, SandboxPlan plan,
             std::function<void(const SandboxRunEvent&)> on_event = {});

  agent::Task<core::Result<SandboxStarted>> open();
  agent::Task<core::Result<PreparedAgent>> prepare();
  // A failed listing fails the turn ("listing the files ..." in the message).
  agent::Task<TurnResult> turn(const PreparedAgent& agent, std::string task,
                               agent::RunOptions options);
  agent::Task<core::Status> close(bool success);

  const SandboxPlan& plan() const { return plan_; }

 private:
  void emit(SandboxRunEvent e) const;
  RunSteps& steps_;
  SandboxPlan plan_;
  std::function<void(const SandboxRunEvent&)> on_event_;
};

// How a task run ended.
struct TaskRunOutcome {
  // The error of the step that failed (open, prepare or the turn), or the agent's result.
  core::Result<agent::AgentRunResult> run = core::internal_error("not run");
  std::vector<std::string> files;
  std::string model_name;  // "" when the agent was not prepared
  bool opened = false;     // the sandbox started
  bool cancelled = false;  // the run ended by a cancel (`cancelled()`, or a Cancelled error)
  core::Status closed;     // what closing the sandbox said
};

// open -> prepare -> one turn -> close(success), success being a turn that succeeded and was not
// cancelled; when open fails, it has already cleaned up and nothing else runs.
agent::Task<TaskRunOutcome> run_task_in_sandbox(SandboxRun& run, std::string task,
                                                agent::RunOptions options,
                                                std::function<bool()> cancelled);

// The start and the end as they act on a backend: what direct mode's steps and the durable
// activities run. end_sandbox: kStop stops it, kRemove removes the container (and the volume with
// `remove_volume`), kKeep does nothing; a sandbox already gone is not an error (a retried end, or
// a user removed it).
core::Result<SandboxStarted> start_sandbox(sandbox::SandboxBackend& backend,
                                           const SandboxPlan& plan);
core::Status end_sandbox(sandbox::SandboxBackend& backend, const std::string& sandbox_id,
                         SandboxEnd end, bool remove_volume);

// Files under /output that are new or changed (size or mtime) in `after` compared to `before`,
// sorted.
std::vector<std::string> produced_files(const std::vector<sandbox::FileEntry>& before,
                                        const std::vector<sandbox::FileEntry>& after);

// The error of a step plus the cleanup's, when that failed too: "<error> (and cleaning up the
// sandbox failed: <cleanup>)".
core::Error with_cleanup(core::Error error, const core::Status& cleanup);

}  // namespace codeact::codeact
