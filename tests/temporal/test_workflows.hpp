// Workflows and activities the integration tests host, in-process or in temporal_test_worker.
#pragma once

#include <algorithm>
#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "codeact/temporal/worker.hpp"

namespace codeact::temporal::testing {

inline ActivityOptions quick_activity() {
  ActivityOptions o;
  o.start_to_close_timeout = std::chrono::seconds(10);
  RetryPolicy r;
  r.initial_interval = std::chrono::milliseconds(100);
  r.maximum_interval = std::chrono::milliseconds(500);
  r.maximum_attempts = 5;
  o.retry_policy = r;
  return o;
}

// activity -> timer -> signal -> result, with a query answering at each stage.
inline Task<Json> scenario_workflow(WorkflowContext& ctx, Args args) {
  Json input = args.empty() ? Json::object() : args[0];
  std::string stage = "started";
  Json signal_value;
  bool signalled = false;
  ctx.set_query_handler("state", [&](const Args&) { return Json{{"stage", stage}}; });
  ctx.set_signal_handler("finish", [&](const Args& a) {
    signal_value = a.empty() ? Json(nullptr) : a[0];
    signalled = true;
  });
  auto greeting = co_await ctx.execute_activity("compose_greeting", input.value("name", "nobody"),
                                                quick_activity());
  stage = "sleeping";
  co_await ctx.sleep(std::chrono::milliseconds(input.value("sleep_ms", 200)));
  stage = "waiting";
  co_await ctx.wait_condition([&] { return signalled; });
  stage = "done";
  co_return Json{{"greeting", std::move(greeting).value_or_throw()},
                 {"signal", signal_value},
                 {"uuid_len", ctx.uuid().size()}};
}

inline core::Result<Json> compose_greeting(ActivityContext&, const Args& args) {
  if (args.empty() || !args[0].is_string())
    return core::invalid_argument("compose_greeting: expected a name");
  return Json("Hello, " + args[0].get<std::string>() + "!");
}

// Fails with a retryable error on attempts 1 and 2, then succeeds.
inline core::Result<Json> flaky_activity(ActivityContext& ctx, const Args&) {
  ctx.heartbeat({Json{{"attempt", ctx.info().attempt}}});
  if (ctx.info().attempt < 3)
    return core::unavailable("flaky: attempt " + std::to_string(ctx.info().attempt) +
                             " fails on purpose");
  return Json{{"attempts", ctx.info().attempt},
              {"previous_heartbeat",
               ctx.heartbeat_details().empty() ? Json(nullptr) : ctx.heartbeat_details()[0]}};
}

inline Task<Json> flaky_workflow(WorkflowContext& ctx, Args) {
  auto r = co_await ctx.execute_activity("flaky", Args(), quick_activity());
  co_return std::move(r).value_or_throw();
}

inline std::atomic<int>& reject_calls() {
  static std::atomic<int> n{0};
  return n;
}

inline core::Result<Json> reject_activity(ActivityContext&, const Args& args) {
  ++reject_calls();
  throw ApplicationError(
      "BadInput", "name must not be empty (got '" + args.at(0).get<std::string>() + "')", true);
}

inline Task<Json> reject_workflow(WorkflowContext& ctx, Args args) {
  auto r = co_await ctx.execute_activity("reject", args.at(0), quick_activity());
  co_return std::move(r).value_or_throw();
}

// Appends a line to a file; returns the number of lines. For exactly-once checks.
inline core::Result<Json> record_activity(ActivityContext&, const Args& args) {
  std::string path = args.at(0).get<std::string>();
  {
    std::ofstream out(path, std::ios::app);
    out << args.at(1).get<std::string>() << "\n";
  }
  std::ifstream in(path);
  int n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return Json(n);
}

// record one, record two, wait for signal "go", record three.
inline Task<Json> durable_workflow(WorkflowContext& ctx, Args args) {
  std::string path = args.at(0).get<std::string>();
  bool go = false;
  std::string stage = "started";
  ctx.set_signal_handler("go", [&](const Args&) { go = true; });
  ctx.set_query_handler("stage", [&](const Args&) { return Json(stage); });
  Json steps = Json::array();
  for (const char* step : {"one", "two"}) {
    Args record_args{path, step};
    auto r = co_await ctx.execute_activity("record", std::move(record_args), quick_activity());
    steps.push_back(std::move(r).value_or_throw());
  }
  stage = "waiting";
  co_await ctx.wait_condition([&] { return go; });
  Args record_args{path, "three"};
  auto r = co_await ctx.execute_activity("record", std::move(record_args), quick_activity());
  steps.push_back(std::move(r).value_or_throw());
  co_return steps;
}

// Counts down through continue-as-new; the client follows the runs to the last one's result.
inline Task<Json> countdown_workflow(WorkflowContext& ctx, Args args) {
  int n = args.at(0).get<int>();
  if (n > 0) ctx.continue_as_new({Json(n - 1)});
  co_return Json{{"done", true}, {"run_id_set", !ctx.info().run_id.empty()}};
}

// Heartbeats until cancelled (at most 20 s).
inline core::Result<Json> wait_for_cancel_activity(ActivityContext& ctx, const Args&) {
  for (int i = 0; i < 200; ++i) {
    ctx.heartbeat({Json(i)});
    if (ctx.cancelled()) return core::cancelled("wait_for_cancel: cancelled as asked");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Json("never cancelled");
}

// Starts a long activity, cancels it after a timer, reports what came back.
inline Task<Json> cancel_activity_workflow(WorkflowContext& ctx, Args) {
  ActivityOptions o;
  o.start_to_close_timeout = std::chrono::seconds(30);
  o.heartbeat_timeout = std::chrono::seconds(1);
  auto act = ctx.execute_activity("wait_for_cancel", Args(), o);
  co_await ctx.sleep(std::chrono::milliseconds(500));
  act.cancel();
  ActivityResult r = co_await act;
  if (r.ok()) co_return Json{{"cancelled", false}, {"value", r.value()}};
  co_return Json{{"cancelled", r.failure().kind == FailureKind::kCanceled},
                 {"message", r.failure().message}};
}

// ---- child workflows ----

// A child: greets its argument through an activity.
inline Task<Json> child_greeter_workflow(WorkflowContext& ctx, Args args) {
  auto r = co_await ctx.execute_activity("compose_greeting", args.at(0), quick_activity());
  co_return Json{{"greeting", std::move(r).value_or_throw()},
                 {"task_queue", ctx.info().task_queue},
                 {"workflow_id", ctx.info().workflow_id}};
}

// Waits until cancelled (or for args[0] ms), then ends as cancelled.
inline Task<Json> wait_for_cancel_workflow(WorkflowContext& ctx, Args args) {
  int64_t ms = args.empty() ? 60000 : args[0].get<int64_t>();
  bool done = co_await ctx.wait_condition([&] { return ctx.cancel_requested(); },
                                          std::chrono::milliseconds(ms));
  if (done) throw CancelledError("child saw its cancel request");
  co_return "not cancelled";
}

// Starts three children: one that succeeds (own id and task queue), one that fails, one that
// it cancels after it started. Returns what each gave back.
inline Task<Json> parent_workflow(WorkflowContext& ctx, Args args) {
  std::string prefix = ctx.info().workflow_id;
  ChildWorkflowOptions ok_opts;
  ok_opts.workflow_id = prefix + "-ok";
  ok_opts.task_queue = args.at(0).get<std::string>();
  ok_opts.execution_timeout = std::chrono::seconds(30);
  auto ok_child = ctx.start_child_workflow("ChildGreeter", Args{Json("child")}, ok_opts);
  ChildWorkflowOptions fail_opts;
  fail_opts.workflow_id = prefix + "-fail";
  auto fail_child = ctx.start_child_workflow("Reject", Args{Json("kid")}, fail_opts);
  ChildWorkflowOptions cancel_opts;  // default id
  auto cancel_child = ctx.start_child_workflow("WaitForCancel", Args{Json(30000)}, cancel_opts);
  co_await ctx.sleep(std::chrono::milliseconds(500));
  cancel_child.cancel();
  Outcome<Json> ok = co_await ok_child;
  Outcome<Json> failed = co_await fail_child;
  Outcome<Json> cancelled = co_await cancel_child;
  // A second child with the id of a running one is refused by the server.
  ChildWorkflowOptions dup_opts;
  dup_opts.workflow_id = prefix + "-long";
  auto long_child = ctx.start_child_workflow("WaitForCancel", Args{Json(30000)}, dup_opts);
  co_await ctx.sleep(std::chrono::milliseconds(300));
  auto dup_child = ctx.start_child_workflow("WaitForCancel", Args{Json(30000)}, dup_opts);
  Outcome<Json> dup = co_await dup_child;
  long_child.cancel();
  Outcome<Json> long_result = co_await long_child;
  auto describe = [](const Outcome<Json>& o) {
    if (o.ok()) return Json{{"ok", true}, {"value", o.value()}};
    return Json{{"ok", false},
                {"kind", std::string(failure_kind_name(o.failure().kind))},
                {"type", o.failure().type},
                {"message", o.failure().message}};
  };
  co_return Json{{"ok", describe(ok)},
                 {"failed", describe(failed)},
                 {"cancelled", describe(cancelled)},
                 {"duplicate", describe(dup)},
                 {"long", describe(long_result)}};
}

// Starts two long children with the given ids and parent close policies, then completes.
inline Task<Json> closing_parent_workflow(WorkflowContext& ctx, Args args) {
  ChildWorkflowOptions abandon;
  abandon.workflow_id = args.at(0).get<std::string>();
  abandon.parent_close_policy = ParentClosePolicy::kAbandon;
  ChildWorkflowOptions terminate;
  terminate.workflow_id = args.at(1).get<std::string>();
  terminate.parent_close_policy = ParentClosePolicy::kTerminate;
  ChildWorkflowOptions request_cancel;
  request_cancel.workflow_id = args.at(2).get<std::string>();
  request_cancel.parent_close_policy = ParentClosePolicy::kRequestCancel;
  [[maybe_unused]] auto a = ctx.start_child_workflow("WaitForCancel", Args{Json(30000)}, abandon);
  [[maybe_unused]] auto t = ctx.start_child_workflow("WaitForCancel", Args{Json(30000)}, terminate);
  [[maybe_unused]] auto c =
      ctx.start_child_workflow("WaitForCancel", Args{Json(30000)}, request_cancel);
  co_await ctx.sleep(std::chrono::milliseconds(300));  // let the children start
  co_return "parent done";
}

// ---- cancellation ----

// Waits for a child (id args[0]) with a one-hour deadline timer; when the child ends, cancels
// the timer and returns the child's value or rethrows its failure. Cancelling this workflow
// cancels the child, so the run ends Canceled.
inline Task<Json> await_child_workflow(WorkflowContext& ctx, Args args) {
  ChildWorkflowOptions o;
  o.workflow_id = args.at(0).get<std::string>();
  auto deadline = ctx.sleep(std::chrono::hours(1));
  auto child = ctx.start_child_workflow("WaitForCancel", Args{Json(60000)}, o);
  Outcome<Json> r = co_await child;
  deadline.cancel();
  co_await deadline;
  co_return std::move(r).value_or_throw();
}

// Runs a heartbeating activity until the workflow is cancelled; then runs a cleanup activity
// (record args[0] "cleanup") and either throws CancelledError (args[1] == "throw") or returns.
inline Task<Json> cancellable_workflow(WorkflowContext& ctx, Args args) {
  std::string path = args.at(0).get<std::string>();
  std::string mode = args.at(1).get<std::string>();
  std::string stage = "working";
  ctx.set_query_handler("stage", [&](const Args&) { return Json(stage); });
  ActivityOptions o;
  o.start_to_close_timeout = std::chrono::seconds(30);
  o.heartbeat_timeout = std::chrono::seconds(2);
  ActivityResult work = co_await ctx.execute_activity("wait_for_cancel", Args(), o);
  stage = "cleaning";
  Args record_args{path, "cleanup"};
  auto cleanup = co_await ctx.execute_activity("record", std::move(record_args), quick_activity());
  Json report{{"cancel_requested", ctx.cancel_requested()},
              {"activity_cancelled", !work.ok() && work.failure().kind == FailureKind::kCanceled},
              {"cleanup", std::move(cleanup).value_or_throw()}};
  if (mode == "throw") throw CancelledError("cancelled after cleanup");
  co_return report;
}

// ---- versioning ----

// Version 1: greet "v1", wait for signal "go".
inline Task<Json> patch_v1(WorkflowContext& ctx, Args) {
  bool go = false;
  ctx.set_signal_handler("go", [&](const Args&) { go = true; });
  auto r = co_await ctx.execute_activity("compose_greeting", "v1", quick_activity());
  co_await ctx.wait_condition([&] { return go; });
  co_return std::move(r).value_or_throw();
}
// Version 2, changed with patched(): new runs greet "v2" after a timer; old runs keep v1.
inline Task<Json> patch_v2(WorkflowContext& ctx, Args) {
  bool go = false;
  ctx.set_signal_handler("go", [&](const Args&) { go = true; });
  Outcome<Json> r = Json(nullptr);
  if (ctx.patched("greet-v2")) {
    co_await ctx.sleep(std::chrono::milliseconds(10));
    r = co_await ctx.execute_activity("compose_greeting", "v2", quick_activity());
  } else {
    r = co_await ctx.execute_activity("compose_greeting", "v1", quick_activity());
  }
  co_await ctx.wait_condition([&] { return go; });
  co_return std::move(r).value_or_throw();
}
// Version 2 changed without patched(): breaks runs of version 1.
inline Task<Json> patch_v2_unguarded(WorkflowContext& ctx, Args) {
  bool go = false;
  ctx.set_signal_handler("go", [&](const Args&) { go = true; });
  co_await ctx.sleep(std::chrono::milliseconds(10));
  auto r = co_await ctx.execute_activity("compose_greeting", "v2", quick_activity());
  co_await ctx.wait_condition([&] { return go; });
  co_return std::move(r).value_or_throw();
}
// Version 3: no v1 runs remain; the patch is deprecated, only the new code is left.
inline Task<Json> patch_v3(WorkflowContext& ctx, Args) {
  bool go = false;
  ctx.set_signal_handler("go", [&](const Args&) { go = true; });
  ctx.deprecate_patch("greet-v2");
  co_await ctx.sleep(std::chrono::milliseconds(10));
  auto r = co_await ctx.execute_activity("compose_greeting", "v2", quick_activity());
  co_await ctx.wait_condition([&] { return go; });
  co_return std::move(r).value_or_throw();
}
// Version 4: the deprecate_patch call is gone too.
inline Task<Json> patch_v4(WorkflowContext& ctx, Args) {
  bool go = false;
  ctx.set_signal_handler("go", [&](const Args&) { go = true; });
  co_await ctx.sleep(std::chrono::milliseconds(10));
  auto r = co_await ctx.execute_activity("compose_greeting", "v2", quick_activity());
  co_await ctx.wait_condition([&] { return go; });
  co_return std::move(r).value_or_throw();
}

// The twin of the Python SDK's "Interop" workflow (tests/temporal/py/patch_interop.py): the
// same commands, so each SDK replays the other's histories.
inline Task<Json> interop_workflow(WorkflowContext& ctx, Args) {
  std::string name = ctx.patched("greet-v2") ? "v2" : "v1";
  auto r = co_await ctx.execute_activity("compose_greeting", name, quick_activity());
  co_return std::move(r).value_or_throw();
}

// ---- history size ----

// Runs activities until the history has at least args[1] events, then continues as new with
// one run fewer (args[0]); the last run returns the lengths each of its tasks saw.
inline Task<Json> compacting_workflow(WorkflowContext& ctx, Args args) {
  int runs_left = args.at(0).get<int>();
  int64_t limit = args.at(1).get<int64_t>();
  Json seen = Json::array();
  int64_t max_bytes = 0;
  bool suggested = false;
  while (ctx.history_length() < limit) {
    seen.push_back(ctx.history_length());
    max_bytes = std::max(max_bytes, ctx.history_size_bytes());
    suggested = suggested || ctx.continue_as_new_suggested();
    auto r = co_await ctx.execute_activity("compose_greeting", "size", quick_activity());
    (void)std::move(r).value_or_throw();
  }
  if (runs_left > 0) ctx.continue_as_new({Json(runs_left - 1), Json(limit)});
  co_return Json{{"lengths", seen},
                 {"final_length", ctx.history_length()},
                 {"max_size_bytes", max_bytes},
                 {"suggested", suggested}};
}

// ---- sticky cache ----

// args[0] sequential activities with a short timer between them; returns the greetings.
inline Task<Json> steps_workflow(WorkflowContext& ctx, Args args) {
  int n = args.at(0).get<int>();
  std::string who = args.at(1).get<std::string>();
  Json out = Json::array();
  for (int i = 0; i < n; ++i) {
    auto r = co_await ctx.execute_activity("compose_greeting", who + "#" + std::to_string(i),
                                           quick_activity());
    out.push_back(std::move(r).value_or_throw());
    if (i % 2 == 0) co_await ctx.sleep(std::chrono::milliseconds(20));
  }
  co_return out;
}

inline void register_test_workflows(Worker& w) {
  w.register_workflow("ChildGreeter", child_greeter_workflow);
  w.register_workflow("WaitForCancel", wait_for_cancel_workflow);
  w.register_workflow("Parent", parent_workflow);
  w.register_workflow("ClosingParent", closing_parent_workflow);
  w.register_workflow("Cancellable", cancellable_workflow);
  w.register_workflow("AwaitChild", await_child_workflow);
  w.register_workflow("Compacting", compacting_workflow);
  w.register_workflow("Interop", interop_workflow);
  w.register_workflow("Steps", steps_workflow);
  w.register_workflow("Countdown", countdown_workflow);
  w.register_workflow("CancelActivity", cancel_activity_workflow);
  w.register_activity("wait_for_cancel", wait_for_cancel_activity);
  w.register_workflow("Scenario", scenario_workflow);
  w.register_workflow("Flaky", flaky_workflow);
  w.register_workflow("Reject", reject_workflow);
  w.register_workflow("Durable", durable_workflow);
  w.register_activity("compose_greeting", compose_greeting);
  w.register_activity("flaky", flaky_activity);
  w.register_activity("reject", reject_activity);
  w.register_activity("record", record_activity);
}

}  // namespace codeact::temporal::testing
