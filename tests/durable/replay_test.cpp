// Replay safety of the durable CodeAct workflows: real runs of CodeActTaskWorkflow,
// CodeActChatWorkflow and SimpleAgentWorkflow, recorded against a Temporal dev server and Docker
// (tests/durable/histories/, see its README.md), replayed against the workflow code as it is now.
// A change to src/durable/workflows.cpp that breaks one of these tests would break the runs in
// flight when it is deployed: guard it with ctx.patched(...) or give the workflow a new name.
//
// Each test is named after the history it protects and also checks that the file still shows
// what it was recorded for (a retried cell, a continue-as-new, ...), so a re-recording that lost
// it fails. It runs for every set of recordings (kSets: one per recording commit), so the runs
// of every recorded build stay replayable. No server, no Docker.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codeact/core/base64.hpp"
#include "codeact/core/json.hpp"
#include "codeact/durable/workflows.hpp"
#include "codeact/temporal/worker.hpp"
#include "codeact/temporal/workflow.hpp"

namespace codeact::durable {
namespace {

using core::Json;

const std::string kHistories = std::string(CODEACT_SOURCE_DIR) + "/tests/durable/histories/";

// The sets of histories, each a directory under kHistories (README.md), oldest first: the first
// set at the top, recorded at 2393f8d; the later ones in at-<commit>/ (at-e9b51ca: the typed chat
// payloads; at-63d9977: cancel_turn, the tool results' metadata).
const std::vector<std::string> kSets = {"", "at-e9b51ca/", "at-63d9977/", "at-3b66d7a/",
                                        "at-36df9a8/"};
// The first set (index into kSets) whose chat sends a message with an id ({"task", "id"}).
constexpr size_t kFirstSetWithMessageIds = 3;
// The first set whose model requests are local activities (patch "model-request-local"): each
// one is a `core_local_activity` marker, not a scheduled activity.
constexpr size_t kFirstSetWithLocalModelRequests = 4;

// The histories, each with a test below, and the first set (index into kSets) that holds it:
// every later set holds it too. A file in a set's directory that is not here, or one missing
// from a set that should hold it, fails EveryRecordedHistoryHasItsTest.
const std::map<std::string, size_t> kTested = {
    {"simple_agent_completed.json", 0},     {"task_cells_bash_file_retried.json", 0},
    {"chat_run1_continued_as_new.json", 0}, {"chat_run2_stopped.json", 0},
    {"task_cancelled_during_cell.json", 0}, {"task_failed_usage_limit.json", 0},
    {"chat_turn_cancelled.json", 2},
};

size_t set_index(const std::string& set) {
  return static_cast<size_t>(std::find(kSets.begin(), kSets.end(), set) - kSets.begin());
}

// The files set `set` holds.
std::set<std::string> files_of_set(const std::string& set) {
  std::set<std::string> out;
  for (const auto& [name, first] : kTested)
    if (set_index(set) >= first) out.insert(name);
  return out;
}

core::Status replay_with_current_code(const std::string& file) {
  temporal::Replayer replayer;
  register_codeact_workflows(replayer);
  return replayer.replay_file(kHistories + file);
}

// A history file as `temporal workflow show --output json` wrote it, read to check what it covers.
class RecordedHistory {
 public:
  // `file` is relative to tests/durable/histories/ (a set's directory and the file's name).
  explicit RecordedHistory(const std::string& file) {
    std::ifstream in(kHistories + file);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto j = core::parse_json(text, file);
    if (j.ok()) events_ = (*j)["events"];
  }

  size_t size() const { return events_.size(); }
  const Json& first() const { return events_.front(); }
  std::string last_type() const {
    return events_.empty() ? "" : events_.back().value("eventType", "");
  }
  const Json& last() const { return events_.back(); }

  std::vector<Json> of_type(const std::string& type) const {
    std::vector<Json> out;
    for (const auto& e : events_)
      if (e.value("eventType", "") == type) out.push_back(e);
    return out;
  }
  int first_id(const std::string& type) const {
    for (const auto& e : events_)
      if (e.value("eventType", "") == type) return std::stoi(e.value("eventId", "0"));
    return 0;
  }

  // The activity types scheduled, in order.
  std::vector<std::string> scheduled() const {
    std::vector<std::string> out;
    for (const auto& e : of_type("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"))
      out.push_back(e["activityTaskScheduledEventAttributes"]["activityType"]["name"]);
    return out;
  }
  int scheduled_id(const std::string& activity_type, int after = 0) const {
    for (const auto& e : of_type("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED")) {
      int id = std::stoi(e.value("eventId", "0"));
      if (id > after &&
          e["activityTaskScheduledEventAttributes"]["activityType"]["name"] == activity_type)
        return id;
    }
    return 0;
  }

  // The event ids of the local activities of this type that completed, in order: each is a
  // `core_local_activity` marker whose "data" detail names the activity type.
  std::vector<int> local_ids(const std::string& activity_type) const {
    std::vector<int> out;
    for (const auto& e : of_type("EVENT_TYPE_MARKER_RECORDED")) {
      const Json& m = e["markerRecordedEventAttributes"];
      if (m.value("markerName", "") != "core_local_activity") continue;
      if (payloads(m["details"]["data"]).find("\"activity_type\":\"" + activity_type + "\"") !=
          std::string::npos)
        out.push_back(std::stoi(e.value("eventId", "0")));
    }
    return out;
  }

  // The model requests made, scheduled activities and local ones alike.
  long model_requests() const {
    const auto acts = scheduled();
    return std::count(acts.begin(), acts.end(), "codeact.model_request") +
           static_cast<long>(local_ids("codeact.model_request").size());
  }
  // The first model request after event `after`, of either kind (0: none).
  int model_request_id(int after) const {
    int id = scheduled_id("codeact.model_request", after);
    for (int local : local_ids("codeact.model_request"))
      if (local > after && (id == 0 || local < id)) return local;
    return id;
  }

  // The highest attempt a started activity of this type reached (the server records the
  // attempt that finished).
  int max_attempt(const std::string& activity_type) const {
    std::set<std::string> ids;
    for (const auto& e : of_type("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"))
      if (e["activityTaskScheduledEventAttributes"]["activityType"]["name"] == activity_type)
        ids.insert(e["eventId"].get<std::string>());
    int most = 0;
    for (const auto& e : of_type("EVENT_TYPE_ACTIVITY_TASK_STARTED")) {
      const Json& a = e["activityTaskStartedEventAttributes"];
      if (ids.count(a["scheduledEventId"].get<std::string>()))
        most = std::max(most, a.value("attempt", 1));
    }
    return most;
  }

  // Every payload of the event, decoded (the files hold them base64-encoded), one per line.
  static std::string payloads(const Json& event) {
    std::string out;
    auto walk = [&out](const Json& v, auto& self) -> void {
      if (v.is_object()) {
        if (v.contains("data") && v["data"].is_string() && v.contains("metadata")) {
          auto decoded = core::base64_decode(v["data"].get<std::string>());
          if (decoded.ok()) out += *decoded + "\n";
        }
        for (const auto& [k, x] : v.items()) self(x, self);
      } else if (v.is_array()) {
        for (const auto& x : v) self(x, self);
      }
    };
    walk(event, walk);
    return out;
  }
  std::string all_payloads() const { return payloads(events_); }

 private:
  Json events_ = Json::array();
};

long count_of(const std::vector<std::string>& v, const std::string& s) {
  return std::count(v.begin(), v.end(), s);
}

// ---------------------------------------------------------------------------------------------
// Each set of recordings (a directory of tests/durable/histories/, "" for the first one), each
// made at one commit by record.py (README.md): every set keeps replaying, so runs started by any
// of those builds can be finished by this one.

class DurableHistoryReplay : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(RecordedSets, DurableHistoryReplay,
                         ::testing::ValuesIn(std::vector<std::string>(kSets.begin(), kSets.end())),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.empty() ? std::string("at_2393f8d")
                                                     : "at_" + info.param.substr(3, 7);
                         });

TEST_P(DurableHistoryReplay, SimpleAgentCompletedReplays) {
  const std::string f = GetParam() + "simple_agent_completed.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  EXPECT_EQ(h.first()["workflowExecutionStartedEventAttributes"]["workflowType"]["name"],
            "SimpleAgentWorkflow");
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED");
  EXPECT_NE(RecordedHistory::payloads(h.last()).find("Hello from the sandbox!"), std::string::npos);
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST_P(DurableHistoryReplay, TaskCellsBashFileRetriedReplays) {
  const std::string f = GetParam() + "task_cells_bash_file_retried.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  EXPECT_EQ(h.first()["workflowExecutionStartedEventAttributes"]["workflowType"]["name"],
            kTaskWorkflow);
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED");
  const auto acts = h.scheduled();
  EXPECT_GE(count_of(acts, "codeact.tool_call"), 5);
  EXPECT_GE(h.model_requests(), 6);
  // A worker was SIGKILLed during a cell and during a model request: both were retried on the
  // restarted worker, and its cached workflow tasks timed out. A local model request leaves no
  // attempt of its own: the workflow task it ran in timed out and the next one asked again
  // (record.py checked that the model was asked twice).
  EXPECT_GE(h.max_attempt("codeact.tool_call"), 2);
  if (set_index(GetParam()) >= kFirstSetWithLocalModelRequests) {
    EXPECT_EQ(count_of(acts, "codeact.model_request"), 0);
    EXPECT_GE(h.of_type("EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT").size(), 2u);
  } else {
    EXPECT_GE(h.max_attempt("codeact.model_request"), 2);
    EXPECT_FALSE(h.of_type("EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT").empty());
  }
  const std::string payloads = h.all_payloads();
  for (const char* tool : {"execute_python", "execute_bash", "write_file"})
    EXPECT_NE(payloads.find(std::string("\"tool_name\":\"") + tool + "\""), std::string::npos)
        << tool;
  EXPECT_NE(RecordedHistory::payloads(h.last()).find("/output/report.txt"), std::string::npos);
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST_P(DurableHistoryReplay, ChatRun1ContinuedAsNewReplays) {
  const std::string f = GetParam() + "chat_run1_continued_as_new.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  EXPECT_EQ(h.first()["workflowExecutionStartedEventAttributes"]["workflowType"]["name"],
            kChatWorkflow);
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW");
  // Three messages arrived; two were answered (max_turns_per_run 2), the third is carried over.
  EXPECT_EQ(h.of_type("EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED").size(), 3u);
  const std::string carried = RecordedHistory::payloads(h.last());
  EXPECT_NE(carried.find("Double the sum"), std::string::npos);
  EXPECT_NE(carried.find("The sum is 15."), std::string::npos);
  if (set_index(GetParam()) >= kFirstSetWithMessageIds) {  // the queued message had an id
    EXPECT_NE(carried.find("\"id\":\"msg-carried\""), std::string::npos) << carried;
  }
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST_P(DurableHistoryReplay, ChatRun2StoppedReplays) {
  const std::string f = GetParam() + "chat_run2_stopped.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  const Json& started = h.first()["workflowExecutionStartedEventAttributes"];
  EXPECT_EQ(started["workflowType"]["name"], kChatWorkflow);
  // The run chat_run1 continued into: its sandbox already started, the queued message answered.
  RecordedHistory run1(GetParam() + "chat_run1_continued_as_new.json");
  ASSERT_GT(run1.size(), 0u);
  EXPECT_EQ(
      started.value("continuedExecutionRunId", ""),
      run1.first()["workflowExecutionStartedEventAttributes"].value("originalExecutionRunId", "x"));
  EXPECT_EQ(count_of(h.scheduled(), "codeact.sandbox_start"), 0);
  auto signals = h.of_type("EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED");
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0]["workflowExecutionSignaledEventAttributes"]["signalName"], kStopChat);
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED");
  EXPECT_NE(RecordedHistory::payloads(h.last()).find("\"reason\":\"stopped\""), std::string::npos);
  if (set_index(GetParam()) >= kFirstSetWithMessageIds) {  // its turn carries the message's id
    EXPECT_NE(RecordedHistory::payloads(h.last()).find("\"message_id\":\"msg-carried\""),
              std::string::npos);
  }
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST_P(DurableHistoryReplay, TaskCancelledDuringCellReplays) {
  const std::string f = GetParam() + "task_cancelled_during_cell.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED");
  // The cancel request reached the running cell, then the cleanup activity removed the container.
  const int cancel = h.first_id("EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED");
  ASSERT_GT(cancel, 0);
  EXPECT_GT(h.first_id("EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED"), cancel);
  const int cleanup = h.scheduled_id("codeact.sandbox_finish", cancel);
  ASSERT_GT(cleanup, cancel);
  for (const auto& e : h.of_type("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED")) {
    if (e["eventId"] == std::to_string(cleanup)) {
      EXPECT_NE(RecordedHistory::payloads(e).find("\"mode\":\"remove\""), std::string::npos);
    }
  }
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST_P(DurableHistoryReplay, TaskFailedUsageLimitReplays) {
  const std::string f = GetParam() + "task_failed_usage_limit.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_FAILED");
  EXPECT_NE(h.last()["workflowExecutionFailedEventAttributes"]["failure"]
                .value("message", "")
                .find("request_limit"),
            std::string::npos);
  EXPECT_EQ(h.scheduled().back(), "codeact.sandbox_finish");
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST_P(DurableHistoryReplay, ChatTurnCancelledReplays) {
  if (!files_of_set(GetParam()).count("chat_turn_cancelled.json"))
    GTEST_SKIP() << "this set was recorded before cancel_turn existed";
  const std::string f = GetParam() + "chat_turn_cancelled.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  EXPECT_EQ(h.first()["workflowExecutionStartedEventAttributes"]["workflowType"]["name"],
            kChatWorkflow);
  // A message, cancel_turn while its cell ran, a second message, stop_chat.
  std::vector<std::string> signals;
  int cancel_turn = 0;
  for (const auto& e : h.of_type("EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED")) {
    signals.push_back(e["workflowExecutionSignaledEventAttributes"]["signalName"]);
    if (signals.back() == kCancelTurn) cancel_turn = std::stoi(e.value("eventId", "0"));
  }
  EXPECT_EQ(signals,
            (std::vector<std::string>{kSendUserTask, kCancelTurn, kSendUserTask, kStopChat}));
  // The signal asked the running cell's activity to cancel; the session went on in the same
  // sandbox: one start, and the next message got a model request of its own.
  ASSERT_GT(cancel_turn, 0);
  EXPECT_GT(h.first_id("EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED"), cancel_turn);
  EXPECT_EQ(count_of(h.scheduled(), "codeact.sandbox_start"), 1);
  EXPECT_GT(h.model_request_id(cancel_turn), cancel_turn);
  EXPECT_NE(h.all_payloads().find("the turn was cancelled"), std::string::npos);
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED");
  EXPECT_NE(RecordedHistory::payloads(h.last()).find("\"reason\":\"stopped\""), std::string::npos);
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST_P(DurableHistoryReplay, EveryRecordedHistoryHasItsTest) {
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kHistories + GetParam()))
    if (entry.path().extension() == ".json") files.insert(entry.path().filename().string());
  EXPECT_EQ(files, files_of_set(GetParam()))
      << "add a test for each history file to kTested (and drop the test of a removed one)";
}

// ---------------------------------------------------------------------------------------------
// Runs whose sandbox moved off a lost host (hosts/, recorded by tests/hosts with
// CODEACT_HISTORY_OUT set: private Docker engines, shared storage; README.md). Not a set of
// record.py's: each file is its own scenario.

// The task queues the activities of `h` were scheduled on, in order.
std::vector<std::string> scheduled_queues(const RecordedHistory& h) {
  std::vector<std::string> out;
  for (const auto& e : h.of_type("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"))
    out.push_back(e["activityTaskScheduledEventAttributes"]["taskQueue"]["name"]);
  return out;
}

// The one activity that its host did not take, and the start on the run's queue that followed.
void expect_one_move(const RecordedHistory& h) {
  auto timed_out = h.of_type("EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT");
  ASSERT_EQ(timed_out.size(), 1u);
  EXPECT_NE(timed_out[0].dump().find("TIMEOUT_TYPE_SCHEDULE_TO_START"), std::string::npos);
  const int lost = std::stoi(timed_out[0].value("eventId", "0"));
  const int start = h.scheduled_id("codeact.sandbox_start", lost);
  ASSERT_GT(start, lost) << "no start after the lost activity";
  // The start went to the run's queue (any live host); every later activity to one host's.
  const auto scheduled = h.scheduled();
  const auto queues = scheduled_queues(h);
  const auto it = std::find(scheduled.rbegin(), scheduled.rend(), "codeact.sandbox_start");
  const size_t at = static_cast<size_t>(scheduled.rend() - it) - 1;
  EXPECT_EQ(queues[at].find('@'), std::string::npos) << queues[at];
  ASSERT_LT(at + 1, queues.size());
  for (size_t i = at + 1; i < queues.size(); ++i) {
    EXPECT_EQ(queues[i], queues[at + 1]) << scheduled[i];
    EXPECT_NE(queues[i].find('@'), std::string::npos) << scheduled[i];
  }
  // The model was told (in the next model request's conversation).
  EXPECT_NE(h.all_payloads().find("[The sandbox moved from host"), std::string::npos);
}

TEST(DurableMovedHistoryReplay, TaskMovedHostReplays) {
  const std::string f = "hosts/task_moved_host.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  EXPECT_EQ(h.first()["workflowExecutionStartedEventAttributes"]["workflowType"]["name"],
            kTaskWorkflow);
  // A running cell's heartbeat stopped with its host, and its retry was not taken (recorded
  // under the host-lost-after-heartbeat patch); the cell ran again on the new host.
  EXPECT_NE(
      h.of_type("EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT")[0].dump().find("TIMEOUT_TYPE_HEARTBEAT"),
      std::string::npos);
  EXPECT_EQ(h.of_type("EVENT_TYPE_MARKER_RECORDED").size(), 1u);
  expect_one_move(h);
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED");
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

TEST(DurableMovedHistoryReplay, ChatMovedAfterContinueAsNewReplays) {
  const std::string f = "hosts/chat_moved_after_continue_as_new.json";
  RecordedHistory h(f);
  ASSERT_GT(h.size(), 0u) << f;
  EXPECT_EQ(h.first()["workflowExecutionStartedEventAttributes"]["workflowType"]["name"],
            kChatWorkflow);
  // The run after a continue-as-new: its input carries the shared storage, it starts no sandbox
  // until its host is lost, then moves it.
  EXPECT_NE(RecordedHistory::payloads(h.first()).find("\"shared_storage\":true"),
            std::string::npos);
  EXPECT_EQ(count_of(h.scheduled(), "codeact.sandbox_start"), 1);
  expect_one_move(h);
  EXPECT_EQ(h.last_type(), "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW");
  auto st = replay_with_current_code(f);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
}

// ---------------------------------------------------------------------------------------------
// The check can fail: other code registered under a recorded workflow's name is caught.

temporal::ActivityOptions one_minute() {
  temporal::ActivityOptions o;
  o.start_to_close_timeout = std::chrono::seconds(60);
  return o;
}

// Prepares the agent before starting the sandbox (the recorded code starts the sandbox first).
temporal::Task<Json> prepares_before_starting(temporal::WorkflowContext& ctx, temporal::Args) {
  auto prepare = ctx.execute_activity("codeact.agent_prepare", Json::object(), one_minute());
  (void)co_await prepare;
  co_return Json(nullptr);
}

// Starts the sandbox as recorded, then calls the model without preparing the agent.
temporal::Task<Json> skips_the_prepare_step(temporal::WorkflowContext& ctx, temporal::Args) {
  auto start = ctx.execute_activity("codeact.sandbox_start", Json::object(), one_minute());
  (void)co_await start;
  auto model = ctx.execute_activity("codeact.model_request", Json::object(), one_minute());
  (void)co_await model;
  co_return Json(nullptr);
}

core::Status replay_with(const std::string& file, const std::string& name,
                         temporal::WorkflowFunction fn) {
  temporal::Replayer replayer;
  replayer.register_workflow(name, std::move(fn));
  return replayer.replay_file(kHistories + file);
}

TEST(DurableHistoryMismatch, TaskCellsBashFileRetriedFailsOnADifferentFirstActivity) {
  const std::string f = "task_cells_bash_file_retried.json";
  auto st = replay_with(f, kTaskWorkflow, prepares_before_starting);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), core::Code::kFailedPrecondition);
  const std::string& m = st.error().message();
  EXPECT_NE(m.find("nondeterminism"), std::string::npos) << m;
  EXPECT_NE(m.find("ScheduleActivityTask(activity_type='codeact.agent_prepare'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("ActivityTaskScheduled(activity_type='codeact.sandbox_start'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(f), std::string::npos) << "the error names the file: " << m;
}

TEST(DurableHistoryMismatch, ChatRun1ContinuedAsNewFailsWhenAStepIsDropped) {
  const std::string f = "chat_run1_continued_as_new.json";
  auto st = replay_with(f, kChatWorkflow, skips_the_prepare_step);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), core::Code::kFailedPrecondition);
  const std::string& m = st.error().message();
  EXPECT_NE(m.find("nondeterminism"), std::string::npos) << m;
  EXPECT_NE(m.find("ScheduleActivityTask(activity_type='codeact.model_request'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("ActivityTaskScheduled(activity_type='codeact.agent_prepare'"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace codeact::durable
