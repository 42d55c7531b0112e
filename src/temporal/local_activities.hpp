// LocalActivities: the worker side of local activities (workflow.hpp, LocalActivityOptions).
// Each one handed over by a WorkflowState runs on a thread of its own, attempt after attempt as
// its retry policy says: an attempt past its start-to-close timeout is asked to cancel and
// counts as timed out; a retry waits its backoff in the worker, unless the backoff is longer
// than the local retry threshold, in which case the outcome is the last failure together with
// that backoff (the workflow then goes on with a normal activity, or fails it). Outcomes come
// back, one at a time, through next(). Activity code sees an ActivityContext whose info has
// `local` set; its heartbeats go nowhere.
// Thread-safe. Threads outlive the object when an attempt does not return; their outcome is
// then dropped.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "codeact/temporal/activity.hpp"
#include "markers.hpp"
#include "workflow_state.hpp"

namespace codeact::temporal::internal {

class LocalActivities {
 public:
  // `base` gives the workflow's ids, namespace and task queue to every attempt's info.
  explicit LocalActivities(ActivityInfo base);
  ~LocalActivities();  // cancels what still runs
  LocalActivities(const LocalActivities&) = delete;
  LocalActivities& operator=(const LocalActivities&) = delete;

  // Starts running `request` with `fn` (null: the outcome is a NotFound failure at once).
  void start(LocalActivityRequest request, const ActivityFunction* fn);
  // The next outcome, waiting for one until `deadline`; nullopt when none came by then.
  std::optional<LocalActivityMarker> next(std::chrono::steady_clock::time_point deadline);
  // Asks local activity `seq` to stop; its outcome is never given.
  void cancel(int64_t seq);
  void cancel_all();
  // The seqs started whose outcome was not given yet (nor cancelled).
  std::vector<int64_t> running() const;

  // The retry backoff after failed attempt `attempt` (1-based) under `policy` (nullopt: the
  // server's default: 1 s, doubling, at most 100 s).
  static std::chrono::milliseconds backoff(const std::optional<RetryPolicy>& policy, int attempt);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  ActivityInfo base_;
};

}  // namespace codeact::temporal::internal
