// Part 2 of the SDK against a real Temporal dev server: child workflows, workflow cancellation
// with cleanup, versioning with patched() checked by replaying histories exported with the
// `temporal` CLI, history size and continue-as-new, and the sticky cache when it holds one run
// and twenty are running.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "codeact/core/subprocess.hpp"
#include "temporal_test_fixture.hpp"

namespace codeact::temporal::testing {
namespace {

using namespace std::chrono_literals;

// The events of a run, as the proto3 JSON objects the CLI and the UI show.
Json events_of(Client& client, const std::string& id, const std::string& run_id = "") {
  auto h = client.fetch_history(id, run_id);
  EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error().to_string());
  return h.ok() ? h->to_json()["events"] : Json::array();
}
std::vector<std::string> event_types(const Json& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.value("eventType", ""));
  return out;
}
int count_of(const std::vector<std::string>& types, const std::string& t) {
  return static_cast<int>(std::count(types.begin(), types.end(), t));
}

// `temporal workflow show -w <id> --output json > <dir>/<id>.json`; returns the path.
std::string export_history(const std::string& workflow_id) {
  std::string path = DevServer::temp_dir() + "/" + workflow_id + ".json";
  auto r = core::run_process({DevServer::temporal_cli(), "workflow", "show", "--address",
                              DevServer::address(), "-w", workflow_id, "--output", "json"},
                             60s);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  if (!r.ok()) return path;
  EXPECT_EQ(r->exit_code, 0) << r->stderr_text;
  std::ofstream(path) << r->stdout_text;
  return path;
}

TEST_F(TemporalTest, ChildWorkflowsReturnFailAreCancelledAndRefusedDuplicates) {
  start_worker();
  auto opts = start_options("parent");
  ASSERT_TRUE(client_->start_workflow("Parent", {queue_}, opts).ok());
  auto result = client_->get_result(opts.id, "", 60s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  const Json& r = *result;
  EXPECT_EQ(r["ok"]["ok"], true) << r;
  EXPECT_EQ(r["ok"]["value"]["greeting"], "Hello, child!");
  EXPECT_EQ(r["ok"]["value"]["workflow_id"], opts.id + "-ok") << "the child runs under its id";
  EXPECT_EQ(r["ok"]["value"]["task_queue"], queue_);
  EXPECT_EQ(r["failed"]["ok"], false);
  EXPECT_EQ(r["failed"]["type"], "BadInput") << r["failed"];
  EXPECT_EQ(r["failed"]["message"], "name must not be empty (got 'kid')");
  EXPECT_EQ(r["cancelled"]["kind"], "CanceledFailure") << r["cancelled"];
  EXPECT_EQ(r["duplicate"]["type"], "ChildWorkflowAlreadyStarted") << r["duplicate"];
  EXPECT_EQ(r["long"]["kind"], "CanceledFailure") << r["long"];

  auto types = event_types(events_of(*client_, opts.id));
  EXPECT_EQ(count_of(types, "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED"), 5);
  EXPECT_EQ(count_of(types, "EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED"), 1);
  EXPECT_EQ(count_of(types, "EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED"), 1);
  EXPECT_EQ(count_of(types, "EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED"), 2);
  EXPECT_EQ(count_of(types, "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED"), 1);
  EXPECT_EQ(count_of(types, "EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED"), 2);
  // The children's own runs ended as their parent saw them.
  EXPECT_EQ(client_->describe_workflow(opts.id + "-ok")->status, "Completed");
  EXPECT_EQ(client_->describe_workflow(opts.id + "-fail")->status, "Failed");
  EXPECT_EQ(client_->describe_workflow(opts.id + "-long")->status, "Canceled");

  // The parent's history replays against its code (children matched by initiated event).
  Replayer replayer;
  replayer.register_workflow("Parent", parent_workflow);
  auto h = client_->fetch_history(opts.id);
  ASSERT_TRUE(h.ok());
  auto st = replayer.replay(*h);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST_F(TemporalTest, ParentClosePolicyDecidesWhatHappensToRunningChildren) {
  start_worker();
  auto opts = start_options("closing");
  std::string abandon = opts.id + "-abandon", terminate = opts.id + "-terminate",
              cancel = opts.id + "-cancel";
  ASSERT_TRUE(client_->start_workflow("ClosingParent", {abandon, terminate, cancel}, opts).ok());
  auto result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  auto terminated = client_->get_result(terminate, "", 30s);
  EXPECT_EQ(terminated.ok() ? FailureKind::kOther : terminated.failure().kind,
            FailureKind::kTerminated);
  auto cancelled = client_->get_result(cancel, "", 30s);
  EXPECT_EQ(cancelled.ok() ? FailureKind::kOther : cancelled.failure().kind,
            FailureKind::kCanceled);
  auto d = client_->describe_workflow(abandon);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->status, "Running") << "an abandoned child outlives its parent";
  (void)client_->terminate_workflow(abandon);
}

// Cancel while an activity runs: the activity is asked to cancel (sees it through its heartbeat),
// the workflow runs a cleanup activity after the cancel, then ends as it chooses.
TEST_F(TemporalTest, CancelReachesActivityAndCleanupRunsBeforeRunEndsCancelled) {
  start_worker();
  for (std::string mode : {"throw", "return"}) {
    SCOPED_TRACE(mode);
    auto opts = start_options("cancellable-" + mode);
    std::string marker = DevServer::temp_dir() + "/" + opts.id + ".log";
    ASSERT_TRUE(client_->start_workflow("Cancellable", {marker, mode}, opts).ok());
    // Wait until the activity is pending, and give it time to heartbeat.
    bool running = false;
    for (int i = 0; i < 300 && !running; ++i) {
      auto d = client_->describe_workflow(opts.id);
      running = d.ok() && d->pending_activities > 0;
      if (!running) std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(running);
    std::this_thread::sleep_for(500ms);
    ASSERT_TRUE(client_->cancel_workflow(opts.id, "", "test cancels").ok());
    auto result = client_->get_result(opts.id, "", 60s);
    auto types = event_types(events_of(*client_, opts.id));
    EXPECT_EQ(count_of(types, "EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED"), 1);
    EXPECT_EQ(count_of(types, "EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED"), 1);
    EXPECT_EQ(count_of(types, "EVENT_TYPE_ACTIVITY_TASK_CANCELED"), 1)
        << "the activity saw the cancel through its heartbeat and reported it";
    std::ifstream in(marker);
    std::string all((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(all, "cleanup\n") << "the cleanup activity ran once, after the cancel";
    if (mode == "throw") {
      ASSERT_FALSE(result.ok());
      EXPECT_EQ(result.failure().kind, FailureKind::kCanceled) << result.failure().to_string();
      EXPECT_EQ(count_of(types, "EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED"), 1);
      EXPECT_EQ(client_->describe_workflow(opts.id)->status, "Canceled");
    } else {
      ASSERT_TRUE(result.ok()) << result.failure().to_string();
      EXPECT_EQ(result->at("cancel_requested"), true);
      EXPECT_EQ(result->at("activity_cancelled"), true);
      EXPECT_EQ(result->at("cleanup"), 1);
      EXPECT_EQ(client_->describe_workflow(opts.id)->status, "Completed");
    }
  }
}

// Cancelling a parent that waits for a child cancels the child; the parent's cleanup cancels
// its deadline timer, and both runs end Canceled.
TEST_F(TemporalTest, CancelledParentCancelsItsChildAndItsTimer) {
  start_worker();
  auto opts = start_options("await-child");
  std::string child_id = opts.id + "-child";
  ASSERT_TRUE(client_->start_workflow("AwaitChild", {child_id}, opts).ok());
  bool started = false;
  for (int i = 0; i < 300 && !started; ++i) {
    started = count_of(event_types(events_of(*client_, opts.id)),
                       "EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED") == 1;
    if (!started) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(started);
  ASSERT_TRUE(client_->cancel_workflow(opts.id).ok());
  auto parent = client_->get_result(opts.id, "", 30s);
  ASSERT_FALSE(parent.ok());
  EXPECT_EQ(parent.failure().kind, FailureKind::kCanceled) << parent.failure().to_string();
  auto child = client_->get_result(child_id, "", 30s);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.failure().kind, FailureKind::kCanceled) << child.failure().to_string();
  auto types = event_types(events_of(*client_, opts.id));
  EXPECT_EQ(count_of(types, "EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED"), 1);
  EXPECT_EQ(count_of(types, "EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED"), 1);
  EXPECT_EQ(count_of(types, "EVENT_TYPE_TIMER_CANCELED"), 1);
  EXPECT_EQ(count_of(types, "EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED"), 1);
}

TEST_F(TemporalTest, PythonClientCancelsCppWorkflowAndSeesItCancelled) {
  start_worker();
  std::string id = unique_name("py-cancel");
  std::string marker = DevServer::temp_dir() + "/" + id + ".log";
  Json out = run_python({"cancel", "--address", DevServer::address(), "--task-queue", queue_,
                         "--workflow-id", id, "--arg", marker});
  EXPECT_EQ(out["error"], "CancelledError") << out;
  EXPECT_EQ(out["status"], "CANCELED") << out;
}

// A changed workflow (v2 guards its change with patched()) replays histories of v1 exported by
// the CLI; an unguarded change does not. Old runs resume on v2 on the old path, new runs take
// the new one; v3 (deprecate_patch) and v4 (no call) replay v2's new-path history.
TEST_F(TemporalTest, PatchedWorkflowReplaysOldHistoriesAndResumesOldRuns) {
  WorkerOptions o;
  o.task_queue = queue_;
  o.max_cached_workflows = 0;
  auto v1 = std::make_unique<Worker>(*client_, o);
  v1->register_workflow("Patchy", patch_v1);
  v1->register_activity("compose_greeting", compose_greeting);
  ASSERT_TRUE(v1->start().ok());
  auto old_run = start_options("patchy-old");
  ASSERT_TRUE(client_->start_workflow("Patchy", {}, old_run).ok());
  bool ready = false;  // the activity's result processed by a workflow task
  for (int i = 0; i < 300 && !ready; ++i) {
    auto types = event_types(events_of(*client_, old_run.id));
    ready = count_of(types, "EVENT_TYPE_ACTIVITY_TASK_COMPLETED") == 1 &&
            types.back() == "EVENT_TYPE_WORKFLOW_TASK_COMPLETED";
    if (!ready) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(ready);
  v1->shutdown(5s);
  std::string v1_file = export_history(old_run.id);

  Replayer v2_replayer;
  v2_replayer.register_workflow("Patchy", patch_v2);
  auto st = v2_replayer.replay_file(v1_file);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  Replayer unguarded;
  unguarded.register_workflow("Patchy", patch_v2_unguarded);
  auto bad = unguarded.replay_file(v1_file);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("nondeterminism"), std::string::npos)
      << bad.error().message();

  std::this_thread::sleep_for(300ms);
  auto v2 = std::make_unique<Worker>(*client_, o);
  v2->register_workflow("Patchy", patch_v2);
  v2->register_activity("compose_greeting", compose_greeting);
  ASSERT_TRUE(v2->start().ok());
  ASSERT_TRUE(client_->signal_workflow(old_run.id, "", "go").ok());
  auto old_result = client_->get_result(old_run.id, "", 30s);
  ASSERT_TRUE(old_result.ok()) << old_result.failure().to_string();
  EXPECT_EQ(*old_result, "Hello, v1!") << "a run of v1 keeps v1's path on v2";

  auto new_run = start_options("patchy-new");
  ASSERT_TRUE(client_->start_workflow("Patchy", {}, new_run).ok());
  ASSERT_TRUE(client_->signal_workflow(new_run.id, "", "go").ok());
  auto new_result = client_->get_result(new_run.id, "", 30s);
  v2->shutdown(5s);
  ASSERT_TRUE(new_result.ok()) << new_result.failure().to_string();
  EXPECT_EQ(*new_result, "Hello, v2!");
  Json marker;
  for (const auto& e : events_of(*client_, new_run.id))
    if (e.value("eventType", "") == "EVENT_TYPE_MARKER_RECORDED") marker = e;
  ASSERT_FALSE(marker.is_null()) << "patched() records a marker in new runs";
  EXPECT_EQ(marker["markerRecordedEventAttributes"]["markerName"], "core_patch");
  std::string v2_file = export_history(new_run.id);
  const std::vector<std::pair<std::string, WorkflowFunction>> versions = {{"v2", patch_v2},
                                                                          {"v3", patch_v3}};
  for (const auto& [name, fn] : versions) {
    Replayer r;
    r.register_workflow("Patchy", fn);
    auto s = r.replay_file(v2_file);
    EXPECT_TRUE(s.ok()) << name << ": " << s.error().to_string();
  }
  // v1 cannot replay a run of v2's new path, nor can v4 (the call is gone while v2's
  // non-deprecated marker is in history: deprecate first).
  Replayer old_code;
  old_code.register_workflow("Patchy", patch_v1);
  EXPECT_FALSE(old_code.replay_file(v2_file).ok());
  Replayer v4_replayer;
  v4_replayer.register_workflow("Patchy", patch_v4);
  EXPECT_FALSE(v4_replayer.replay_file(v2_file).ok());

  // A run of v3 records a deprecated marker, which v4 skips.
  auto v3 = std::make_unique<Worker>(*client_, o);
  v3->register_workflow("Patchy", patch_v3);
  v3->register_activity("compose_greeting", compose_greeting);
  ASSERT_TRUE(v3->start().ok());
  auto v3_run = start_options("patchy-v3");
  ASSERT_TRUE(client_->start_workflow("Patchy", {}, v3_run).ok());
  ASSERT_TRUE(client_->signal_workflow(v3_run.id, "", "go").ok());
  auto v3_result = client_->get_result(v3_run.id, "", 30s);
  v3->shutdown(5s);
  ASSERT_TRUE(v3_result.ok()) << v3_result.failure().to_string();
  EXPECT_EQ(*v3_result, "Hello, v2!");
  auto s = v4_replayer.replay_file(export_history(v3_run.id));
  EXPECT_TRUE(s.ok()) << s.error().to_string();
}

// The Python SDK and this one read each other's patch markers: a history the C++ worker wrote
// replays in Python's Replayer, and one the Python worker wrote replays in the C++ Replayer.
TEST_F(TemporalTest, PatchMarkersAreReadByThePythonSdkAndViceVersa) {
  start_worker();
  auto opts = start_options("interop-cpp");
  ASSERT_TRUE(client_->start_workflow("Interop", {}, opts).ok());
  auto cpp_result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(cpp_result.ok()) << cpp_result.failure().to_string();
  EXPECT_EQ(*cpp_result, "Hello, v2!");
  std::string cpp_file = export_history(opts.id);
  auto py = [](const std::vector<std::string>& args) {
    return run_python_script("patch_interop.py", args);
  };
  Json replayed = py({"replay", "--history", cpp_file});
  EXPECT_EQ(replayed["ok"], true) << replayed;

  std::string py_file = DevServer::temp_dir() + "/interop-py.json";
  Json ran = py({"run", "--address", DevServer::address(), "--task-queue", unique_name("py-tq"),
                 "--workflow-id", unique_name("interop-py"), "--out", py_file});
  EXPECT_EQ(ran["result"], "Hello, v2!") << ran;
  Replayer same;
  same.register_workflow("Interop", interop_workflow);
  auto st = same.replay_file(py_file);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  // Code without the patched() call does not match it: the marker was read as a patch.
  Replayer unpatched;
  unpatched.register_workflow("Interop", [](WorkflowContext& ctx, Args) -> Task<Json> {
    auto r = co_await ctx.execute_activity("compose_greeting", "v2", quick_activity());
    co_return std::move(r).value_or_throw();
  });
  auto bad = unpatched.replay_file(py_file);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("patch_id='greet-v2'"), std::string::npos)
      << bad.error().message();
}

// The workflow watches its history grow and continues as new past a limit; the client follows.
TEST_F(TemporalTest, WorkflowSeesHistoryLengthAndContinuesAsNewBeforeALimit) {
  start_worker();
  auto opts = start_options("compacting");
  auto run = client_->start_workflow("Compacting", {2, 20}, opts);
  ASSERT_TRUE(run.ok());
  auto result = client_->get_result(opts.id, run->run_id, 60s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  const Json& lengths = result->at("lengths");
  ASSERT_GE(lengths.size(), 2u) << *result;
  EXPECT_EQ(lengths[0], 3) << "the first workflow task starts at event 3";
  for (size_t i = 1; i < lengths.size(); ++i) EXPECT_GT(lengths[i], lengths[i - 1]);
  EXPECT_GE(result->at("final_length"), 20);
  EXPECT_GT(result->at("max_size_bytes"), 0) << "the dev server reports history size";
  EXPECT_EQ(result->at("suggested"), false);
  auto d = client_->describe_workflow(opts.id);
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->run_id, run->run_id);
  EXPECT_LE(d->history_length, 30) << "the last run is short";
}

// One cache slot, twenty runs in flight: runs are evicted and rebuilt from full history all the
// time, and every one still completes with the right result and no failed workflow task.
TEST_F(TemporalTest, OneSlotCacheWithTwentyRunningWorkflowsCompletesThemAll) {
  std::atomic<int> hits{0}, rebuilt{0};
  WorkerOptions o;
  o.task_queue = queue_;
  o.max_cached_workflows = 1;
  o.on_workflow_task = [&](const WorkflowTaskStats& s) {
    if (s.cache_hit) ++hits;
    if (!s.cache_hit && s.history_length > 3) ++rebuilt;  // not a first task: replayed
  };
  worker_ = std::make_unique<Worker>(*client_, o);
  register_test_workflows(*worker_);
  ASSERT_TRUE(worker_->start().ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    auto opts = start_options("steps-" + std::to_string(i));
    ASSERT_TRUE(client_->start_workflow("Steps", {6, "w" + std::to_string(i)}, opts).ok());
    ids.push_back(opts.id);
  }
  for (int i = 0; i < 20; ++i) {
    auto result = client_->get_result(ids[i], "", 120s);
    ASSERT_TRUE(result.ok()) << ids[i] << ": " << result.failure().to_string();
    ASSERT_EQ(result->size(), 6u);
    for (int k = 0; k < 6; ++k)
      EXPECT_EQ((*result)[k], "Hello, w" + std::to_string(i) + "#" + std::to_string(k) + "!");
    auto types = event_types(events_of(*client_, ids[i]));
    EXPECT_EQ(count_of(types, "EVENT_TYPE_WORKFLOW_TASK_FAILED"), 0) << ids[i];
  }
  worker_->shutdown(5s);
  EXPECT_GT(rebuilt.load(), 0) << "evicted runs must have been rebuilt from full history";
  RecordProperty("cache_hits", hits.load());
  RecordProperty("rebuilt_from_history", rebuilt.load());
}

}  // namespace
}  // namespace codeact::temporal::testing
