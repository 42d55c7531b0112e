// temporal::Worker: hosts workflows and activities for one task queue.
//
// Register functions by name, then start(): poller threads long-poll the workflow and activity
// task queues (and this worker's sticky queue); a run's state is cached between workflow tasks
// and fed only the new events, and a run not in the cache (a new worker, a restart, an
// eviction) is rebuilt by replaying its full history through the deterministic executor (see
// workflow.hpp). Activities run on their own threads, at most
// max_concurrent_activities at a time. Local activities (LocalActivityOptions) run on threads
// of their own inside their workflow task, which is then completed on a thread of its own, so
// the pollers go on meanwhile; registered activities serve both kinds. shutdown() stops
// polling, lets in-flight tasks finish within the deadline (a task waiting for local
// activities leaves them), then cancels the activities still running and waits for them.
// Register before start(); start/shutdown from one thread; the destructor shuts down.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "codeact/core/result.hpp"
#include "codeact/temporal/activity.hpp"
#include "codeact/temporal/client.hpp"
#include "codeact/temporal/workflow.hpp"

namespace codeact::temporal {

// What one workflow task cost the worker (for metrics and benchmarks).
struct WorkflowTaskStats {
  std::string workflow_id;
  std::string run_id;
  int64_t history_length = 0;  // the task's WorkflowTaskStarted event id
  int events_fed = 0;          // events replayed for this task (all of them on a cache miss)
  bool cache_hit = false;      // the run's cached state was reused
  // From the poll's answer to the call that answers the task: history pages fetched, replay,
  // workflow code, building the commands.
  std::chrono::nanoseconds processing_time{0};
};

struct WorkerOptions {
  std::string task_queue;  // REQUIRED
  // Also the number of workflow tasks processed at once, besides those waiting for local
  // activities.
  int workflow_task_pollers = 2;
  int activity_task_pollers = 2;
  int max_concurrent_activities = 16;
  // Runs kept in memory between workflow tasks (served through a sticky queue, so the server
  // sends only new events). 0 = none: every task replays the run's full history.
  int max_cached_workflows = 500;
  std::string identity;  // "" = the client's identity
  // Called after each completed workflow task (not for queries), on a poller thread (or the
  // thread of a task that waited for local activities); must be thread-safe and quick.
  // Empty = none.
  std::function<void(const WorkflowTaskStats&)> on_workflow_task;
};

class Worker {
 public:
  Worker(Client client, WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void register_workflow(const std::string& name, WorkflowFunction fn);
  void register_activity(const std::string& name, ActivityFunction fn);

  // Starts the pollers. InvalidArgument without a task queue or registrations.
  core::Status start();
  // Blocks until shutdown() is called (from another thread or a signal handler thread).
  void wait();
  // Graceful stop: no new polls; in-flight tasks get until `deadline` to finish.
  void shutdown(std::chrono::milliseconds deadline = std::chrono::seconds(10));

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with activity threads
};

// Replays histories against registered workflow code, without a server: the way to check that
// changed workflow code still matches the runs it must resume.
class Replayer {
 public:
  void register_workflow(const std::string& name, WorkflowFunction fn);
  // OK when the code reproduces the history's commands; FailedPrecondition with a message
  // naming the mismatching command and event ("nondeterminism: ...") otherwise.
  core::Status replay(const History& history) const;
  // Replays a history exported with `temporal workflow show -w <id> --output json > path`:
  // keep such files next to the tests of a workflow, and a change that would break running
  // workflows fails its test. Errors as replay(), or from History::load_json_file.
  core::Status replay_file(const std::string& path) const;

 private:
  std::map<std::string, WorkflowFunction> workflows_;
};

}  // namespace codeact::temporal
