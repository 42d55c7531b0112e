// SandboxHost: where a durable run's sandbox lives, and so where the run's activities go.
//
// A sandbox's container and volume are on one Docker engine: the host of the worker that started
// it. Every worker polls the run's task queue (workflows, sandbox starts) and its own host's
// queue, host_task_queue(queue, host), e.g. "codeact@gpu-1". Once codeact.sandbox_start
// reports the host it ran on, every later activity of the run (agent_prepare, tool_call,
// sandbox_files, sandbox_finish, a start after a continue-as-new, and model_request too: its
// instructions are rendered from the sandbox's variables) goes to that host's queue: nothing
// reaches an engine where the sandbox does not exist. A run whose input names a host starts its
// sandbox there (TaskInput::host).
//
// A host that stops answering: an activity sent to it waits at most `timeout` for one of that
// host's workers to take it (a schedule-to-start timeout). On shared storage (the start said
// "shared": CODEACT_SHARED_DIR, sandbox/shared_storage.hpp) the sandbox moves: the workflow starts
// it again on the run's queue (any live host; move_away() then learn()), which places it there
// with a new ownership epoch and restores its last committed cell, runs the activity again there
// (a cell by the same execution id: committed on the lost host means not run again), and the
// model reads move_note() with its next tool result. Without shared storage the run fails with
// lost(), which says why it cannot move on: the sandbox's state is on that host's local volume.
// Timeout 0 = the run waits for the host however long it is away.
//
// Runs recorded before hosts existed (sandbox_start results without a host) keep every activity
// on the workflow's queue, as they ran. Deterministic (no clock, no I/O); thread-compatible.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::durable {

// The task queue of `host`'s workers beside the shared `task_queue`.
std::string host_task_queue(std::string_view task_queue, std::string_view host);

// Where one activity runs.
struct ActivityRoute {
  std::string task_queue;                          // "" = the workflow's task queue
  std::chrono::milliseconds schedule_to_start{0};  // 0 = no limit
};

class SandboxHost {
 public:
  // `task_queue`: the run's (shared) queue. `host`: where the input pins the sandbox, "" = where
  // its start lands. `shared`: the input says the sandbox's storage is shared (a chat's run after
  // a continue-as-new, which starts no sandbox to learn it from; TaskInput::shared_storage).
  SandboxHost(std::string task_queue, std::string host, std::chrono::milliseconds timeout,
              bool shared = false);

  // Where the run's next activity (any codeact.* one) runs.
  ActivityRoute route() const;
  // Takes the host (and whether its storage is shared, and its cell) from the result of
  // `activity` when it is a codeact.sandbox_start's naming one.
  void learn(std::string_view activity, const core::Json& result);
  // The error of a run whose host did not take `activity` within the timeout (Unavailable).
  core::Error lost(std::string_view activity) const;
  // Whether a lost host's sandbox can be started on another (shared storage, a timeout set).
  bool can_move() const;
  // The host did not take `activity`: forgets it, so the next activity (the sandbox's start
  // again) goes to the run's queue; move_note() is set once the start reports the new host.
  void move_away(std::string_view activity);
  // The start on another host failed: the sandbox is where it was.
  void move_failed();
  // What the model is told after a move ("" when the sandbox has not moved since the last take;
  // a start that lands on the lost host again, back in time, is no move).
  const std::string& move_note() const { return move_note_; }
  // The note was given to the model.
  void take_move_note() { move_note_.clear(); }
  // "" until known.
  const std::string& host() const { return host_; }
  // The last start (or the input) said the sandbox's storage is shared.
  bool shared() const { return shared_; }

 private:
  std::string task_queue_;
  std::string host_;
  std::chrono::milliseconds timeout_;
  bool shared_;              // the last start (or the input) said its storage is shared
  std::string moved_from_;   // set by move_away() until the next start reports a host
  std::string moved_after_;  // the activity the lost host did not take
  std::string move_note_;
};

}  // namespace codeact::durable
