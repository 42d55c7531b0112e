// Workflows and activities of the local activity tests (tests/temporal/local_activity_test.cpp,
// against a dev server) and of the replays of their recorded histories
// (tests/temporal/histories/local_*.json, local_activity_replay_test.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "test_workflows.hpp"

namespace codeact::temporal::testing {

using namespace std::chrono_literals;

inline LocalActivityOptions quick_local() {
  LocalActivityOptions o;
  o.start_to_close_timeout = 10s;
  RetryPolicy r;
  r.initial_interval = 100ms;
  r.maximum_interval = 500ms;
  r.maximum_attempts = 5;
  o.retry_policy = r;
  return o;
}

// The twin of LocalInterop in tests/temporal/py/local_activity_interop.py.
inline Task<Json> local_interop_workflow(WorkflowContext& ctx, Args) {
  auto a = co_await ctx.execute_local_activity("compose_greeting", Json("local"), quick_local());
  auto b = co_await ctx.execute_activity("compose_greeting", Json("remote"), quick_activity());
  co_return Json(std::move(a).value_or_throw().get<std::string>() + " " +
                 std::move(b).value_or_throw().get<std::string>());
}

// A local activity with a large input, a normal activity, a second local activity.
inline Task<Json> local_greet_workflow(WorkflowContext& ctx, Args args) {
  const std::string big = args.at(0).get<std::string>();
  auto a = co_await ctx.execute_local_activity("measure", Json(big), quick_local());
  auto b = co_await ctx.execute_activity("compose_greeting", Json("remote"), quick_activity());
  auto c = co_await ctx.execute_local_activity("compose_greeting", Json("again"), quick_local());
  co_return Json{{"a", std::move(a).value_or_throw()},
                 {"b", std::move(b).value_or_throw()},
                 {"c", std::move(c).value_or_throw()}};
}

inline core::Result<Json> measure(ActivityContext& ctx, const Args& args) {
  return Json{{"length", args.at(0).get<std::string>().size()}, {"local", ctx.info().local}};
}

inline std::atomic<int> g_flaky_calls{0};
// Fails (retryably) on its first two calls, then answers with its attempt number.
inline core::Result<Json> flaky_local(ActivityContext& ctx, const Args&) {
  if (++g_flaky_calls < 3) return core::unavailable("flaky on purpose");
  return Json{{"attempt", ctx.info().attempt}, {"local", ctx.info().local}};
}

inline Task<Json> retrying_workflow(WorkflowContext& ctx, Args) {
  auto ok = co_await ctx.execute_local_activity("flaky_local", Args(), quick_local());
  auto refused = co_await ctx.execute_local_activity("reject", Json("x"), quick_local());
  Json out{{"ok", std::move(ok).value_or_throw()}};
  out["refused_type"] = refused.ok() ? "" : refused.failure().type;
  out["refused_id"] = refused.ok() ? "" : refused.failure().activity_id;
  co_return out;
}

// Sleeps args[0] ms (watching for cancellation) and returns how long it slept.
inline std::atomic<bool> g_saw_cancel{false};
inline core::Result<Json> slow_local(ActivityContext& ctx, const Args& args) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(args.at(0).get<int>());
  while (std::chrono::steady_clock::now() < until) {
    if (ctx.cancelled()) {
      g_saw_cancel = true;
      return core::cancelled("slow_local cancelled");
    }
    std::this_thread::sleep_for(20ms);
  }
  return Json("slept");
}

inline Task<Json> slow_workflow(WorkflowContext& ctx, Args args) {
  ctx.set_query_handler("state", [](const Args&) { return Json("sleeping"); });
  LocalActivityOptions o = quick_local();
  o.start_to_close_timeout = 30s;
  auto r = co_await ctx.execute_local_activity("slow_local", args.at(0), o);
  co_return std::move(r).value_or_throw();
}

inline Task<Json> cancel_local_workflow(WorkflowContext& ctx, Args) {
  LocalActivityOptions o = quick_local();
  o.start_to_close_timeout = 30s;
  auto act = ctx.execute_local_activity("slow_local", Json(20000), o);
  bool go = false;
  ctx.set_signal_handler("cancel", [&](const Args&) {
    go = true;
    act.cancel();
  });
  auto r = co_await act;
  co_return Json{{"cancelled", !r.ok() && r.failure().kind == FailureKind::kCanceled},
                 {"signalled", go}};
}

inline std::atomic<int> g_fallback_calls{0};
inline core::Result<Json> fails_once(ActivityContext& ctx, const Args&) {
  if (++g_fallback_calls == 1) return core::unavailable("first call fails");
  return Json{{"local", ctx.info().local}, {"attempt", ctx.info().attempt}};
}

inline Task<Json> fallback_workflow(WorkflowContext& ctx, Args) {
  LocalActivityOptions o = quick_local();
  o.retry_policy->initial_interval = 1500ms;
  o.retry_policy->maximum_interval = 2s;
  o.local_retry_threshold = 500ms;
  auto r = co_await ctx.execute_local_activity("fails_once", Args(), o);
  co_return std::move(r).value_or_throw();
}

}  // namespace codeact::temporal::testing
