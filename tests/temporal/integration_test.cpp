// The C++ SDK against a real Temporal dev server: client, worker, activities, signals,
// queries, retries, a killed worker, nondeterminism; and the Python temporalio client driving
// C++-hosted workflows.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "codeact/core/subprocess.hpp"
#include "temporal_test_fixture.hpp"

namespace codeact::temporal::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(TemporalTest, CppClientRunsActivityTimerSignalAndReadsResult) {
  start_worker();
  auto opts = start_options("scenario");
  auto run =
      client_->start_workflow("Scenario", {Json{{"name", "Grace"}, {"sleep_ms", 200}}}, opts);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_FALSE(run->run_id.empty());
  ASSERT_TRUE(
      wait_for_query(opts.id, "state", "waiting", [](const Json& j) { return j["stage"]; }));
  auto d = client_->describe_workflow(opts.id);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->status, "Running");
  EXPECT_EQ(d->workflow_type, "Scenario");
  ASSERT_TRUE(client_->signal_workflow(opts.id, "", "finish", {Json{{"ok", true}}}).ok());
  auto result = client_->get_result(opts.id, run->run_id, 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ(result->at("greeting"), "Hello, Grace!");
  EXPECT_EQ(result->at("signal"), (Json{{"ok", true}}));
  EXPECT_EQ(result->at("uuid_len"), 36);
  EXPECT_EQ(client_->describe_workflow(opts.id)->status, "Completed");
}

TEST_F(TemporalTest, PythonClientStartsSignalsQueriesAndReadsCppWorkflow) {
  start_worker();
  Json out = run_python({"scenario", "--address", DevServer::address(), "--task-queue", queue_,
                         "--workflow-id", unique_name("py-scenario")});
  ASSERT_TRUE(out.is_object()) << out;
  EXPECT_EQ(out["result"]["greeting"], "Hello, Ada!");
  EXPECT_EQ(out["result"]["signal"], (Json{{"by", "python"}, {"n", 42}}));
  EXPECT_EQ(out["stages"].back(), "waiting");
  EXPECT_EQ(out["final_state"]["stage"], "done");
}

TEST_F(TemporalTest, ActivityFailingTwiceIsRetriedUntilItSucceeds) {
  start_worker();
  auto opts = start_options("flaky");
  ASSERT_TRUE(client_->start_workflow("Flaky", {}, opts).ok());
  auto result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ(result->at("attempts"), 3);
  // The heartbeat of attempt 2 is readable by attempt 3.
  EXPECT_EQ(result->at("previous_heartbeat"), (Json{{"attempt", 2}}));
}

TEST_F(TemporalTest, NonRetryableActivityErrorReachesPythonWithTypeAndMessage) {
  start_worker();
  reject_calls() = 0;
  Json out = run_python({"reject", "--address", DevServer::address(), "--task-queue", queue_,
                         "--workflow-id", unique_name("py-reject")});
  EXPECT_EQ(out["error"], "ApplicationError") << out;
  EXPECT_EQ(out["type"], "BadInput");
  EXPECT_EQ(out["message"], "name must not be empty (got '')");
  EXPECT_EQ(out["non_retryable"], true);
  EXPECT_EQ(reject_calls().load(), 1) << "a non-retryable failure must not be retried";
}

TEST_F(TemporalTest, FailedTerminatedAndCancelledRunsAreTypedErrors) {
  start_worker();
  auto opts = start_options("reject");
  ASSERT_TRUE(client_->start_workflow("Reject", {"x"}, opts).ok());
  auto failed = client_->get_result(opts.id, "", 30s);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.failure().kind, FailureKind::kApplication);
  EXPECT_EQ(failed.failure().type, "BadInput");
  EXPECT_EQ(failed.failure().message, "name must not be empty (got 'x')");

  auto t = start_options("durable-terminate");
  ASSERT_TRUE(client_->start_workflow("Durable", {DevServer::temp_dir() + "/" + t.id}, t).ok());
  ASSERT_TRUE(client_->terminate_workflow(t.id, "", "test says stop").ok());
  auto terminated = client_->get_result(t.id, "", 30s);
  ASSERT_FALSE(terminated.ok());
  EXPECT_EQ(terminated.failure().kind, FailureKind::kTerminated);
  EXPECT_NE(terminated.failure().message.find("test says stop"), std::string::npos);

  auto c = start_options("durable-cancel");
  ASSERT_TRUE(client_->start_workflow("Durable", {DevServer::temp_dir() + "/" + c.id}, c).ok());
  ASSERT_TRUE(wait_for_query(c.id, "stage", "waiting"));
  ASSERT_TRUE(client_->cancel_workflow(c.id).ok());
  // Durable ignores cancellation (no activity is pending while it waits for its signal):
  // the cancel request is recorded, the run continues.
  auto d = client_->describe_workflow(c.id);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(client_->terminate_workflow(c.id).ok());

  auto dup = client_->start_workflow("Durable", {"x"}, t);
  auto again = client_->start_workflow("Durable", {"x"}, [&] {
    auto o = start_options("dup");
    o.id = c.id;
    o.id_reuse_policy = IdReusePolicy::kRejectDuplicate;
    return o;
  }());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), core::Code::kAlreadyExists) << again.error().to_string();
  if (dup.ok()) (void)client_->terminate_workflow(t.id);
}

TEST_F(TemporalTest, ResultFollowsContinueAsNew) {
  start_worker();
  auto opts = start_options("countdown");
  auto run = client_->start_workflow("Countdown", {3}, opts);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  auto result = client_->get_result(opts.id, run->run_id, 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ(result->at("done"), true);
  auto d = client_->describe_workflow(opts.id);
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->run_id, run->run_id) << "the last run is a new run";
  auto first = client_->get_result(opts.id, run->run_id, 30s, /*follow_runs=*/false);
  EXPECT_FALSE(first.ok());
}

TEST_F(TemporalTest, WorkflowCancelsActivityWhichSeesItThroughHeartbeat) {
  start_worker();
  auto opts = start_options("cancel-activity");
  ASSERT_TRUE(client_->start_workflow("CancelActivity", {}, opts).ok());
  auto result = client_->get_result(opts.id, "", 60s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ(result->at("cancelled"), true) << *result;
}

TEST_F(TemporalTest, QueryIsAnsweredWhileWorkflowWaitsForSignal) {
  start_worker();
  auto opts = start_options("query");
  std::string marker = DevServer::temp_dir() + "/" + opts.id;
  ASSERT_TRUE(client_->start_workflow("Durable", {marker}, opts).ok());
  ASSERT_TRUE(wait_for_query(opts.id, "stage", "waiting"));
  auto unknown = client_->query_workflow(opts.id, "", "no_such_query");
  EXPECT_FALSE(unknown.ok());
  auto r = client_->signal_with_start("Durable", {marker}, opts, "go");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->started) << "signal-with-start must signal the running workflow";
  auto result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ(*result, (Json{1, 2, 3}));
}

// The worker runs in its own process, is SIGKILLed while the run waits, and is restarted.
TEST_F(TemporalTest, KilledWorkerIsRestartedAndCompletedActivitiesDoNotRunAgain) {
  auto opts = start_options("crash");
  std::string marker = DevServer::temp_dir() + "/" + opts.id + ".log";
  auto spawn_worker = [&] {
    core::ProcessOptions po;
    po.argv = {TEMPORAL_TEST_WORKER, "--address", DevServer::address(), "--task-queue", queue_};
    po.pipe_stdout = false;
    po.pipe_stderr = false;
    auto p = core::Subprocess::spawn(po);
    EXPECT_TRUE(p.ok());
    return std::move(p).value();
  };
  auto worker = spawn_worker();
  ASSERT_TRUE(client_->start_workflow("Durable", {marker}, opts).ok());
  ASSERT_TRUE(wait_for_query(opts.id, "stage", "waiting"));
  worker.kill(SIGKILL);
  (void)worker.wait(10s);
  ASSERT_TRUE(client_->signal_workflow(opts.id, "", "go").ok());
  auto restarted = spawn_worker();
  auto result = client_->get_result(opts.id, "", 60s);
  restarted.kill(SIGTERM);
  (void)restarted.wait(10s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ(*result, (Json{1, 2, 3}));
  std::ifstream in(marker);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(all, "one\ntwo\nthree\n") << "each activity must have run exactly once";
}

TEST_F(TemporalTest, ExampleHelloWorkerAnswersPythonClient) {
#ifndef TEMPORAL_HELLO
  GTEST_SKIP() << "examples/ not built (CODEACT_BUILD_EXAMPLES=OFF)";
#else
  core::ProcessOptions po;
  po.argv = {TEMPORAL_HELLO, "--address", DevServer::address(), "--task-queue", queue_};
  po.pipe_stdout = false;
  po.pipe_stderr = false;
  auto worker = core::Subprocess::spawn(po);
  ASSERT_TRUE(worker.ok()) << worker.error().to_string();
  Json out = run_python({"hello", "--address", DevServer::address(), "--task-queue", queue_,
                         "--workflow-id", unique_name("hello")});
  worker->kill(SIGTERM);
  auto code = worker->wait(15s);
  EXPECT_EQ(out["result"], "Hello, Python!") << out;
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0) << "temporal_hello must shut down cleanly on SIGTERM";
#endif
}

// Version 1 of a workflow: an activity, then a signal. Version 2 starts with a timer instead.
Task<Json> versioned_v1(WorkflowContext& ctx, Args) {
  bool go = false;
  ctx.set_signal_handler("go", [&](const Args&) { go = true; });
  auto r = co_await ctx.execute_activity("compose_greeting", "v1", quick_activity());
  co_await ctx.wait_condition([&] { return go; });
  co_return std::move(r).value_or_throw();
}
Task<Json> versioned_v2(WorkflowContext& ctx, Args) {
  bool go = false;
  ctx.set_signal_handler("go", [&](const Args&) { go = true; });
  co_await ctx.sleep(1s);
  co_await ctx.wait_condition([&] { return go; });
  co_return "v2";
}

TEST_F(TemporalTest, ChangedWorkflowCodeIsReportedAsNondeterministic) {
  WorkerOptions o;
  o.task_queue = queue_;
  // No cache, so no sticky queue: the next workflow task goes straight to the normal queue,
  // where v2 gets it as attempt 1 (whose failure the server records in history).
  o.max_cached_workflows = 0;
  auto v1 = std::make_unique<Worker>(*client_, o);
  v1->register_workflow("Versioned", versioned_v1);
  v1->register_activity("compose_greeting", compose_greeting);
  ASSERT_TRUE(v1->start().ok());
  auto opts = start_options("versioned");
  ASSERT_TRUE(client_->start_workflow("Versioned", {}, opts).ok());
  // Wait until the activity result has been processed by a workflow task.
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    auto h = client_->fetch_history(opts.id);
    ASSERT_TRUE(h.ok());
    ready = h->to_json()["events"].size() >=
            10;  // ... ActivityTaskCompleted, WFT sched/started/completed
    if (!ready) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(ready);
  v1->shutdown(5s);
  auto history = client_->fetch_history(opts.id);
  ASSERT_TRUE(history.ok());

  // The same code replays cleanly; the changed code does not.
  Replayer same;
  same.register_workflow("Versioned", versioned_v1);
  auto ok = same.replay(*history);
  EXPECT_TRUE(ok.ok()) << ok.error().to_string();
  Replayer changed;
  changed.register_workflow("Versioned", versioned_v2);
  auto bad = changed.replay(*history);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(bad.error().message().find("nondeterminism"), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("StartTimer(timer_id='1')"), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("ActivityTaskScheduled(activity_type='compose_greeting'"),
            std::string::npos)
      << bad.error().message();

  // A live worker with the changed code fails the workflow task as NON_DETERMINISTIC.
  std::this_thread::sleep_for(300ms);  // lets the server drop v1's cancelled polls
  auto v2 = std::make_unique<Worker>(*client_, o);
  v2->register_workflow("Versioned", versioned_v2);
  ASSERT_TRUE(v2->start().ok());
  ASSERT_TRUE(client_->signal_workflow(opts.id, "", "go").ok());
  Json failed_event;
  Json events;
  for (int i = 0; i < 300 && failed_event.is_null(); ++i) {
    auto h = client_->fetch_history(opts.id);
    ASSERT_TRUE(h.ok());
    events = h->to_json()["events"];
    for (const auto& e : events)
      if (e.value("eventType", "") == "EVENT_TYPE_WORKFLOW_TASK_FAILED") failed_event = e;
    if (failed_event.is_null()) std::this_thread::sleep_for(50ms);
  }
  v2->shutdown(5s);
  ASSERT_FALSE(failed_event.is_null()) << events.dump(1);
  const Json& attrs = failed_event["workflowTaskFailedEventAttributes"];
  EXPECT_EQ(attrs["cause"], "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR");
  EXPECT_NE(attrs["failure"]["message"].get<std::string>().find("StartTimer"), std::string::npos)
      << attrs;
  (void)client_->terminate_workflow(opts.id);
}

}  // namespace
}  // namespace codeact::temporal::testing
