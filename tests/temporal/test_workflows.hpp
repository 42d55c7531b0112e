// Workflows and activities the integration tests host, in-process or in temporal_test_worker.
#pragma once

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

inline void register_test_workflows(Worker& w) {
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
