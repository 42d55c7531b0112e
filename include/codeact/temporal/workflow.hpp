// Workflow code: C++20 coroutines (Task<Json>) run by a deterministic single-threaded executor.
//
// A workflow function takes a WorkflowContext& and its arguments and returns Task<Json>:
//
//   Task<Json> greet(WorkflowContext& ctx, Args args) {
//     ActivityOptions opts;
//     opts.start_to_close_timeout = std::chrono::seconds(10);
//     auto r = co_await ctx.execute_activity("compose_greeting", args.at(0), opts);
//     co_await ctx.sleep(std::chrono::seconds(1));
//     co_return std::move(r).value_or_throw();
//   }
//
// Workflow code must be deterministic: the runtime replays it from the start against the
// workflow's history whenever it resumes (a new worker, a restarted process), and a mismatch
// between the commands it produces and the history fails the workflow task as
// NON_DETERMINISTIC. Use ctx.now(), ctx.random(), ctx.uuid() and ctx.side_effect() instead of
// clocks, random devices and I/O; do I/O in activities. Do not block or start threads.
//
// How a run ends: returning a value completes it. Throwing ApplicationError fails it with that
// failure, except that a failure of kind kCanceled (CancelledError, or the failure of a
// cancelled activity or child re-thrown by value_or_throw) thrown *after a cancel request*
// ends the run as Canceled (CancelWorkflowExecution); without a cancel request it fails the
// run. Any other exception fails the workflow task (the server retries it, so a fixed worker
// can resume the run).
//
// Cancellation: a client's cancel request makes cancel_requested() true (await it with
// cancellation()), and asks every activity and child workflow pending at that moment to cancel
// (activities learn it through their next heartbeat; their awaitables then give a kCanceled
// Failure unless they finish first). Timers keep running (TimerAwaitable::cancel() stops one).
// Nothing else is interrupted: the code decides what to do, and may still schedule and await
// activities (cleanup) before it returns or throws CancelledError.
//
// Versioning: patched("id") lets changed code still replay runs written by the old code (see
// the method). Children: start_child_workflow. Size: history_length() and friends tell the code
// when to continue_as_new.
//
// The WorkflowContext and everything it returns belong to one run; use them only from that
// run's coroutines.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codeact/temporal/failure.hpp"
#include "codeact/temporal/payload.hpp"
#include "codeact/temporal/task.hpp"

namespace codeact::temporal {

struct RetryPolicy {
  std::chrono::milliseconds initial_interval{std::chrono::seconds(1)};
  double backoff_coefficient = 2.0;
  std::chrono::milliseconds maximum_interval{0};  // 0 = 100 x initial_interval (server default)
  int maximum_attempts = 0;                       // 0 = unlimited
  std::vector<std::string> non_retryable_error_types;
};

struct ActivityOptions {
  // At least one of start_to_close_timeout and schedule_to_close_timeout is REQUIRED.
  std::chrono::milliseconds start_to_close_timeout{0};
  std::chrono::milliseconds schedule_to_close_timeout{0};
  std::chrono::milliseconds schedule_to_start_timeout{0};
  std::chrono::milliseconds heartbeat_timeout{0};
  std::optional<RetryPolicy> retry_policy;  // nullopt = the server's default policy
  std::string task_queue;                   // "" = the workflow's task queue
  std::string activity_id;                  // "" = the command's sequence number
};

// A local activity: run by the worker that runs the workflow, inside its workflow task, with no
// trip through the server's activity queue; only its result is recorded (a "core_local_activity"
// marker, the official SDKs' format, so their histories and ours replay in both). Its input is
// never in history. Meant for short work that needs no particular host.
//
// Attempts and retries happen in the worker, backing off as retry_policy says (nullopt: the
// server default, unlimited attempts from 1 s doubling to 100 s). A retry whose backoff would be
// longer than local_retry_threshold is not waited for in the worker: when fall_back_to_activity
// is set, the remaining attempts run as a normal activity on the workflow's task queue (same
// name, input, timeouts and policy); else the last failure is the result. While a local
// activity runs longer than the workflow task timeout allows, the worker keeps the task alive
// (it completes it asking for a new one at once), so a long one does not time the task out.
// A cancel() resolves it at once as cancelled (the running attempt is asked to stop).
// At least one of start_to_close_timeout and schedule_to_close_timeout is REQUIRED.
struct LocalActivityOptions {
  std::chrono::milliseconds start_to_close_timeout{0};     // one attempt
  std::chrono::milliseconds schedule_to_close_timeout{0};  // all attempts, backoffs included
  std::optional<RetryPolicy> retry_policy;
  std::chrono::milliseconds local_retry_threshold{std::chrono::minutes(1)};
  bool fall_back_to_activity = true;
};

struct WorkflowInfo {
  std::string ns;
  std::string workflow_id;
  std::string run_id;
  std::string first_execution_run_id;
  std::string workflow_type;
  std::string task_queue;
  int attempt = 1;
};

using ActivityResult = Outcome<Json>;

// What happens to a child workflow when its parent closes (completes, fails, is cancelled,
// continues as new, ...). The server applies it.
enum class ParentClosePolicy { kTerminate, kAbandon, kRequestCancel };

struct ChildWorkflowOptions {
  std::string workflow_id;  // "" = "<parent workflow id>-child-<n>-<run id prefix>"
  std::string task_queue;   // "" = the parent's task queue
  std::chrono::milliseconds execution_timeout{0};  // 0 = unlimited
  std::chrono::milliseconds run_timeout{0};        // 0 = unlimited
  std::chrono::milliseconds task_timeout{0};       // 0 = server default (10s)
  ParentClosePolicy parent_close_policy = ParentClosePolicy::kTerminate;
  std::optional<RetryPolicy> retry_policy;  // nullopt = no retries of the child run
};

// Thrown by workflow code to end the run as cancelled (see "How a run ends" above).
class CancelledError : public ApplicationError {
 public:
  explicit CancelledError(const std::string& message = "workflow cancelled")
      : ApplicationError(Failure::cancelled(message)) {}
};

// Thrown by WorkflowContext::continue_as_new; the runtime turns it into the command.
struct ContinueAsNew {
  Args args;
};

namespace internal {
class WorkflowState;
// A result the executor fills in later (activity result, timer firing).
struct Pending {
  bool resolved = false;
  std::optional<ActivityResult> result;
  std::coroutine_handle<> waiter;
};
}  // namespace internal

// A scheduled activity. co_await it (once) for its result.
class ActivityAwaitable {
 public:
  ActivityAwaitable(std::shared_ptr<internal::Pending> p, internal::WorkflowState* state,
                    std::string activity_id)
      : p_(std::move(p)), state_(state), activity_id_(std::move(activity_id)) {}
  bool await_ready() const noexcept { return p_->resolved; }
  void await_suspend(std::coroutine_handle<> h) noexcept { p_->waiter = h; }
  ActivityResult await_resume() { return std::move(*p_->result); }
  // Requests cancellation. The activity sees it through its next heartbeat; the result is then
  // a kCanceled Failure, unless the activity completes or fails first. An activity not yet
  // scheduled is not scheduled at all.
  void cancel();

 private:
  std::shared_ptr<internal::Pending> p_;
  internal::WorkflowState* state_;
  std::string activity_id_;
};

// A started (or starting) child workflow. co_await it (once) for its result: the value the
// child returned, or a Failure: kApplication/kTimeout/kTerminated/kCanceled as the child ended,
// or kServer with type "ChildWorkflowAlreadyStarted" when the server refused to start it
// (e.g. a running workflow already has that id).
class ChildWorkflowAwaitable {
 public:
  ChildWorkflowAwaitable(std::shared_ptr<internal::Pending> p, internal::WorkflowState* state,
                         int64_t seq)
      : p_(std::move(p)), state_(state), seq_(seq) {}
  bool await_ready() const noexcept { return p_->resolved; }
  void await_suspend(std::coroutine_handle<> h) noexcept { p_->waiter = h; }
  Outcome<Json> await_resume() { return std::move(*p_->result); }
  // Requests cancellation of the child (RequestCancelExternalWorkflowExecution, sent once it
  // has started). The child sees a cancel request; the result is a kCanceled Failure if the
  // child ends as cancelled. A child whose start was not yet sent is not started at all.
  void cancel();

 private:
  std::shared_ptr<internal::Pending> p_;
  internal::WorkflowState* state_;
  int64_t seq_;
};

// A durable timer. co_await it (once) to sleep until it fires or is cancelled.
class TimerAwaitable {
 public:
  TimerAwaitable(std::shared_ptr<internal::Pending> p, internal::WorkflowState* state,
                 std::string timer_id)
      : p_(std::move(p)), state_(state), timer_id_(std::move(timer_id)) {}
  bool await_ready() const noexcept { return p_->resolved; }
  void await_suspend(std::coroutine_handle<> h) noexcept { p_->waiter = h; }
  void await_resume() const noexcept {}
  // Cancels the timer if it has not fired: CancelTimer is sent (or, for a timer started in the
  // same activation, StartTimer is never sent) and an awaiter resumes at once.
  void cancel();
  // True when the timer ended by cancel() rather than by firing.
  bool cancelled() const { return p_->resolved && p_->result && !p_->result->ok(); }

 private:
  std::shared_ptr<internal::Pending> p_;
  internal::WorkflowState* state_;
  std::string timer_id_;
};

class ConditionAwaitable {
 public:
  ConditionAwaitable(internal::WorkflowState* state, std::function<bool()> pred)
      : state_(state), pred_(std::move(pred)) {}
  bool await_ready() const { return pred_(); }
  void await_suspend(std::coroutine_handle<> h);
  void await_resume() const noexcept {}

 private:
  internal::WorkflowState* state_;
  std::function<bool()> pred_;
};

class WorkflowContext {
 public:
  explicit WorkflowContext(internal::WorkflowState* state) : state_(state) {}

  const WorkflowInfo& info() const;

  // Schedules the activity now; co_await the result (several may run in parallel).
  // Note: g++ 12 rejects braced lists inside a co_await expression ("array used as
  // initializer"); build an Args first, or pass one Json value to the second overload.
  ActivityAwaitable execute_activity(const std::string& name, Args args,
                                     const ActivityOptions& options);
  // One argument (one payload).
  ActivityAwaitable execute_activity(const std::string& name, const Json& arg,
                                     const ActivityOptions& options) {
    return execute_activity(name, Args(1, arg), options);
  }
  // Runs a local activity (see LocalActivityOptions); co_await the result.
  ActivityAwaitable execute_local_activity(const std::string& name, Args args,
                                           const LocalActivityOptions& options);
  ActivityAwaitable execute_local_activity(const std::string& name, const Json& arg,
                                           const LocalActivityOptions& options) {
    return execute_local_activity(name, Args(1, arg), options);
  }
  // Starts a child workflow now; co_await the result (several may run in parallel).
  ChildWorkflowAwaitable start_child_workflow(const std::string& workflow_type, Args args,
                                              const ChildWorkflowOptions& options);
  // A durable timer. REQUIRES: duration > 0.
  TimerAwaitable sleep(std::chrono::milliseconds duration);
  // Resumes when pred() is true; pred is re-evaluated after every change of workflow state.
  ConditionAwaitable wait_condition(std::function<bool()> pred);
  // Same, giving up after `timeout` (a durable timer, cancelled when pred() wins).
  // Returns pred()'s value on resumption: false means the timeout won.
  Task<bool> wait_condition(std::function<bool()> pred, std::chrono::milliseconds timeout);

  // The time of the current workflow task (identical on replay).
  std::chrono::system_clock::time_point now() const;
  // Deterministic pseudo-random numbers seeded from the run.
  uint64_t random();
  std::string uuid();
  // Runs fn once and records its result in history; on replay returns the recorded value.
  Json side_effect(const std::function<Json()>& fn);

  // Signals that arrive before their handler is set are buffered and delivered on set.
  void set_signal_handler(const std::string& name, std::function<void(const Args&)> handler);
  // Query handlers must not change workflow state.
  void set_query_handler(const std::string& name, std::function<Json(const Args&)> handler);

  bool cancel_requested() const;
  // Resumes once a cancel request has arrived (at once if it already has).
  ConditionAwaitable cancellation();
  bool is_replaying() const;

  // Versioning. patched(id) returns true when this run takes the new code path: always in a
  // run executing new code (a "core_patch" marker is recorded in history, as the official
  // SDKs do), and on replay exactly when the workflow task being replayed recorded that marker,
  // so runs written by the old code keep taking the old path. The answer for an id is fixed
  // for the rest of the run. Write `if (ctx.patched("x")) { new } else { old }`.
  // Once no run of the old code remains, replace the call by deprecate_patch("x") and keep only
  // the new code; later the call can be removed (deprecated markers in history are skipped).
  bool patched(const std::string& patch_id);
  void deprecate_patch(const std::string& patch_id);

  // The size of the run's history as of the current workflow task, to continue_as_new before
  // the server's limits: the number of events (the task's WorkflowTaskStarted event id), the
  // size in bytes (0 when the server does not report it), and the server's suggestion to
  // continue as new.
  int64_t history_length() const;
  int64_t history_size_bytes() const;
  bool continue_as_new_suggested() const;
  [[noreturn]] void continue_as_new(Args args) { throw ContinueAsNew{std::move(args)}; }

  // The context of the workflow whose code is running on this thread.
  // REQUIRES: called from workflow code.
  static WorkflowContext& current();

 private:
  internal::WorkflowState* state_;
};

using WorkflowFunction = std::function<Task<Json>(WorkflowContext&, Args)>;

// Free functions on WorkflowContext::current(), for code that has no context at hand.
namespace workflow {
inline ConditionAwaitable wait_condition(std::function<bool()> pred) {
  return WorkflowContext::current().wait_condition(std::move(pred));
}
inline std::chrono::system_clock::time_point now() { return WorkflowContext::current().now(); }
inline uint64_t random() { return WorkflowContext::current().random(); }
inline std::string uuid() { return WorkflowContext::current().uuid(); }
inline TimerAwaitable sleep(std::chrono::milliseconds d) {
  return WorkflowContext::current().sleep(d);
}
}  // namespace workflow

}  // namespace codeact::temporal
