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
// Throwing ApplicationError fails the workflow with that failure; any other exception fails
// the workflow task (the server retries it, so a fixed worker can resume the run).
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

class TimerAwaitable {
 public:
  explicit TimerAwaitable(std::shared_ptr<internal::Pending> p) : p_(std::move(p)) {}
  bool await_ready() const noexcept { return p_->resolved; }
  void await_suspend(std::coroutine_handle<> h) noexcept { p_->waiter = h; }
  void await_resume() const noexcept {}

 private:
  std::shared_ptr<internal::Pending> p_;
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
  bool is_replaying() const;
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
