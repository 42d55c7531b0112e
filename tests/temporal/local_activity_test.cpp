// Local activities against a real Temporal dev server: run inside the workflow task with only
// their result in history (a "core_local_activity" marker, never their input), retried in the
// worker, kept alive past the workflow task timeout, handed to a normal activity when a backoff
// is too long to wait in the worker, cancelled, and read by the Python SDK and vice versa.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "codeact/core/base64.hpp"
#include "codeact/core/subprocess.hpp"
#include "local_activity_workflows.hpp"
#include "temporal_test_fixture.hpp"

namespace codeact::temporal::testing {
namespace {

using namespace std::chrono_literals;

class LocalActivityTest : public TemporalTest {
 protected:
  Worker& start_local_worker() {
    WorkerOptions o;
    o.task_queue = queue_;
    worker_ = std::make_unique<Worker>(*client_, o);
    register_test_workflows(*worker_);
    worker_->register_workflow("LocalInterop", local_interop_workflow);
    worker_->register_workflow("LocalGreet", local_greet_workflow);
    worker_->register_workflow("Retrying", retrying_workflow);
    worker_->register_workflow("Slow", slow_workflow);
    worker_->register_workflow("CancelLocal", cancel_local_workflow);
    worker_->register_workflow("Fallback", fallback_workflow);
    worker_->register_activity("measure", measure);
    worker_->register_activity("flaky_local", flaky_local);
    worker_->register_activity("slow_local", slow_local);
    worker_->register_activity("fails_once", fails_once);
    EXPECT_TRUE(worker_->start().ok());
    return *worker_;
  }
  // With CODEACT_HISTORY_OUT set, writes the run's history there as NAME.json (how
  // tests/temporal/histories/local_*.json were recorded).
  void save_history(const std::string& id, const std::string& name) {
    const char* dir = std::getenv("CODEACT_HISTORY_OUT");
    if (!dir || !*dir) return;
    auto h = client_->fetch_history(id, "");
    ASSERT_TRUE(h.ok());
    std::ofstream(std::string(dir) + "/" + name + ".json") << h->to_json().dump(1) << "\n";
  }
  Json events(const std::string& id) {
    auto h = client_->fetch_history(id, "");
    EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error().to_string());
    return h.ok() ? h->to_json()["events"] : Json::array();
  }
  static int count(const Json& events, const std::string& type) {
    int n = 0;
    for (const auto& e : events) n += e.value("eventType", "") == type;
    return n;
  }
  // The "data" of each local activity marker, decoded.
  static std::vector<Json> marker_data(const Json& events) {
    std::vector<Json> out;
    for (const auto& e : events) {
      if (e.value("eventType", "") != "EVENT_TYPE_MARKER_RECORDED") continue;
      const Json& m = e["markerRecordedEventAttributes"];
      if (m.value("markerName", "") != "core_local_activity") continue;
      auto raw =
          core::base64_decode(m["details"]["data"]["payloads"][0]["data"].get<std::string>());
      out.push_back(raw.ok() ? core::parse_json(*raw).value_or(Json()) : Json());
    }
    return out;
  }
};

TEST_F(LocalActivityTest, RunInTheWorkflowTaskAndOnlyTheirResultIsInHistory) {
  start_local_worker();
  auto opts = start_options("local-greet");
  const std::string big(50 * 1024, 'x');
  ASSERT_TRUE(client_->start_workflow("LocalGreet", {big}, opts).ok());
  auto result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ((*result)["a"]["length"], big.size());
  EXPECT_EQ((*result)["a"]["local"], true);
  EXPECT_EQ((*result)["b"], "Hello, remote!");
  EXPECT_EQ((*result)["c"], "Hello, again!");

  Json ev = events(opts.id);
  EXPECT_EQ(count(ev, "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"), 1) << "only the normal activity";
  auto markers = marker_data(ev);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0]["seq"], 1);
  EXPECT_EQ(markers[0]["activity_type"], "measure");
  EXPECT_EQ(markers[1]["seq"], 3) << "one sequence with the activity between them";
  EXPECT_EQ(count(ev, "EVENT_TYPE_WORKFLOW_TASK_FAILED"), 0);
  // The 200 KiB input appears in the workflow's own input only, never in a later event.
  size_t later_bytes = 0;
  for (size_t i = 1; i < ev.size(); ++i) later_bytes += ev[i].dump().size();
  EXPECT_LT(later_bytes, 20000u) << "a local activity's input must not be recorded";

  auto h = client_->fetch_history(opts.id, "");
  ASSERT_TRUE(h.ok());
  Replayer same;
  same.register_workflow("LocalGreet", local_greet_workflow);
  auto st = same.replay(*h);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  // Code that no longer calls the first local activity does not replay it.
  Replayer changed;
  changed.register_workflow("LocalGreet", [](WorkflowContext& ctx, Args) -> Task<Json> {
    auto b = co_await ctx.execute_activity("compose_greeting", Json("remote"), quick_activity());
    co_return std::move(b).value_or_throw();
  });
  auto bad = changed.replay(*h);
  save_history(opts.id, "local_greet");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("core_local_activity"), std::string::npos)
      << bad.error().message();
}

TEST_F(LocalActivityTest, RetriesBackOffInTheWorkerAndANonRetryableFailureIsFinal) {
  g_flaky_calls = 0;
  reject_calls() = 0;
  start_local_worker();
  auto opts = start_options("local-retry");
  ASSERT_TRUE(client_->start_workflow("Retrying", {}, opts).ok());
  auto result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ((*result)["ok"]["attempt"], 3);
  EXPECT_EQ((*result)["refused_type"], "BadInput");
  EXPECT_EQ((*result)["refused_id"], "2");
  EXPECT_EQ(reject_calls().load(), 1) << "a non-retryable failure is not retried";
  Json ev = events(opts.id);
  EXPECT_EQ(count(ev, "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"), 0);
  auto markers = marker_data(ev);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0]["attempt"], 3);
  EXPECT_TRUE(markers[0]["backoff"].is_null());
  save_history(opts.id, "local_retried");
}

TEST_F(LocalActivityTest, OneLongerThanTheWorkflowTaskTimeoutKeepsTheTaskAlive) {
  start_local_worker();
  auto opts = start_options("local-slow");
  opts.task_timeout = 2s;
  ASSERT_TRUE(client_->start_workflow("Slow", {4500}, opts).ok());
  auto result = client_->get_result(opts.id, "", 60s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ(*result, "slept");
  Json ev = events(opts.id);
  EXPECT_GE(count(ev, "EVENT_TYPE_WORKFLOW_TASK_COMPLETED"), 3)
      << "the task was completed and taken again while the local activity ran";
  EXPECT_EQ(count(ev, "EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT"), 0);
  EXPECT_EQ(count(ev, "EVENT_TYPE_WORKFLOW_TASK_FAILED"), 0);
  EXPECT_EQ(marker_data(ev).size(), 1u) << "run once";
  auto h = client_->fetch_history(opts.id, "");
  ASSERT_TRUE(h.ok());
  Replayer same;
  same.register_workflow("Slow", slow_workflow);
  auto st = same.replay(*h);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  save_history(opts.id, "local_slow_task_renewed");
}

// A server as clusters are by default: one query held per busy workflow task. Several watchers
// querying while a local activity runs must all get their answer (the client asks again when the
// server says its query buffer is full), none an error.
TEST_F(LocalActivityTest, SeveralQueriesWhileOneRunsAreAllAnsweredOnAServerThatHoldsOne) {
  const auto dir = std::filesystem::temp_directory_path() / unique_name("one-query-buffer");
  std::filesystem::create_directories(dir);
  DevServerOptions so;
  so.db_file = (dir / "temporal.db").string();
  so.log_file = (dir / "temporal.log").string();
  so.max_buffered_queries = 0;  // the server's default: 1
  auto server = codeact::temporal::DevServer::start(so);
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  auto client = server->client();
  ASSERT_TRUE(client.ok()) << client.error().to_string();
  client_.emplace(std::move(*client));
  start_local_worker();
  auto opts = start_options("local-queried");
  opts.task_timeout = 2s;
  ASSERT_TRUE(client_->start_workflow("Slow", {5000}, opts).ok());
  std::this_thread::sleep_for(500ms);  // the local activity runs, its workflow task is busy

  constexpr int kWatchers = 4;
  std::vector<core::Result<Json>> answers(kWatchers, core::internal_error("not asked"));
  std::vector<std::thread> watchers;
  for (int i = 0; i < kWatchers; ++i) {
    watchers.emplace_back(
        [&, i] { answers[i] = client_->query_workflow(opts.id, "", "state", {}, 15s); });
  }
  for (auto& t : watchers) t.join();
  for (int i = 0; i < kWatchers; ++i) {
    ASSERT_TRUE(answers[i].ok()) << "watcher " << i << ": " << answers[i].error().to_string();
    EXPECT_EQ(*answers[i], "sleeping");
  }
  auto result = client_->get_result(opts.id, "", 60s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ(*result, "slept");
  worker_->shutdown(5s);
  worker_.reset();
  server->stop();
  std::filesystem::remove_all(dir);
}

TEST_F(LocalActivityTest, ABackoffLongerThanTheThresholdGoesOnAsANormalActivity) {
  g_fallback_calls = 0;
  start_local_worker();
  auto opts = start_options("local-fallback");
  ASSERT_TRUE(client_->start_workflow("Fallback", {}, opts).ok());
  auto result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ((*result)["local"], false) << "the second call ran as a normal activity";
  EXPECT_EQ(g_fallback_calls.load(), 2);
  Json ev = events(opts.id);
  auto markers = marker_data(ev);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_TRUE(markers[0]["backoff"].is_object()) << markers[0];
  EXPECT_EQ(count(ev, "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"), 1);
  auto h = client_->fetch_history(opts.id, "");
  ASSERT_TRUE(h.ok());
  Replayer same;
  same.register_workflow("Fallback", fallback_workflow);
  auto st = same.replay(*h);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  save_history(opts.id, "local_fallback");
}

TEST_F(LocalActivityTest, CancelResolvesItAtOnceAndStopsTheAttempt) {
  g_saw_cancel = false;
  start_local_worker();
  auto opts = start_options("local-cancel");
  opts.task_timeout = 2s;
  ASSERT_TRUE(client_->start_workflow("CancelLocal", {}, opts).ok());
  std::this_thread::sleep_for(2500ms);  // past one workflow task heartbeat
  ASSERT_TRUE(client_->signal_workflow(opts.id, "", "cancel").ok());
  auto result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  EXPECT_EQ((*result)["cancelled"], true) << *result;
  for (int i = 0; i < 50 && !g_saw_cancel; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(g_saw_cancel.load()) << "the running attempt was asked to stop";
  auto h = client_->fetch_history(opts.id, "");
  ASSERT_TRUE(h.ok());
  Replayer same;
  same.register_workflow("CancelLocal", cancel_local_workflow);
  auto st = same.replay(*h);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  save_history(opts.id, "local_cancelled");
}

// The Python SDK and this one read each other's local activity markers.
TEST_F(LocalActivityTest, MarkersAreReadByThePythonSdkAndViceVersa) {
  start_local_worker();
  auto opts = start_options("local-interop-cpp");
  ASSERT_TRUE(client_->start_workflow("LocalInterop", {}, opts).ok());
  auto cpp_result = client_->get_result(opts.id, "", 30s);
  ASSERT_TRUE(cpp_result.ok()) << cpp_result.failure().to_string();
  EXPECT_EQ(*cpp_result, "Hello, local! Hello, remote!");
  std::string cpp_file = DevServer::temp_dir() + "/" + opts.id + ".json";
  {
    auto h = client_->fetch_history(opts.id, "");
    ASSERT_TRUE(h.ok());
    std::ofstream(cpp_file) << h->to_json().dump();
  }
  auto py = [](const std::vector<std::string>& args) {
    return run_python_script("local_activity_interop.py", args);
  };
  Json replayed = py({"replay", "--history", cpp_file});
  EXPECT_EQ(replayed["ok"], true) << replayed;

  std::string py_file = DevServer::temp_dir() + "/local-interop-py.json";
  Json ran = py({"run", "--address", DevServer::address(), "--task-queue", unique_name("py-tq"),
                 "--workflow-id", unique_name("local-interop-py"), "--out", py_file});
  EXPECT_EQ(ran["result"], "Hello, local! Hello, remote!") << ran;
  Replayer same;
  same.register_workflow("LocalInterop", local_interop_workflow);
  auto st = same.replay_file(py_file);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  if (const char* dir = std::getenv("CODEACT_HISTORY_OUT"); dir && *dir)
    std::filesystem::copy_file(py_file, std::string(dir) + "/local_interop_python.json",
                               std::filesystem::copy_options::overwrite_existing);
}

}  // namespace
}  // namespace codeact::temporal::testing
