// The deterministic workflow runtime for one run, structured like Temporal's Core:
// history events -> activation jobs -> coroutine steps on a single-threaded executor -> commands.
//
// replay() walks the full history. Events between two completed workflow tasks become the
// jobs of one activation (resolve an activity, fire a timer, deliver a signal, request
// cancellation); the activation runs the workflow's coroutines until every one is blocked and
// collects the commands they produced. For a workflow task already completed in history, those
// commands must match, one by one and in order, the command events the server recorded after
// it (ActivityTaskScheduled, TimerStarted, MarkerRecorded, WorkflowExecutionCompleted, ...):
// any difference is nondeterminism (HistoryMatcher, history_matcher.hpp, decides). The commands
// of the task being processed are the output.
// Not thread-safe: one thread drives a WorkflowState at a time.
#pragma once

#include <coroutine>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "codeact/core/result.hpp"
#include "codeact/temporal/workflow.hpp"
#include "history_matcher.hpp"
#include "markers.hpp"
#include "temporal/api/command/v1/message.pb.h"
#include "temporal/api/common/v1/message.pb.h"
#include "temporal/api/history/v1/message.pb.h"

namespace codeact::temporal::internal {

namespace historyv1 = ::temporal::api::history::v1;
namespace commandv1 = ::temporal::api::command::v1;
using Events = google::protobuf::RepeatedPtrField<historyv1::HistoryEvent>;

// A local activity the workflow scheduled, for the worker to run (WorkflowState hands it over
// once).
struct LocalActivityRequest {
  int64_t seq = 0;
  std::string name;
  Args args;
  LocalActivityOptions options;
  std::chrono::system_clock::time_point scheduled{};  // the workflow time it was scheduled at
};

class WorkflowState {
 public:
  WorkflowState(WorkflowFunction fn, std::string ns, std::string task_queue);
  ~WorkflowState();
  WorkflowState(const WorkflowState&) = delete;
  WorkflowState& operator=(const WorkflowState&) = delete;

  // Feeds `events`, which continue the history where the previous call stopped (the first
  // call gets the history from event 1; later calls, for a cached run on a sticky queue, get
  // the events after the last one fed). `current_started_event_id` is the WorkflowTaskStarted
  // event of the task being processed (its activation's commands become commands(), and are
  // expected back as command events in the next call); 0 replays only the completed workflow
  // tasks (queries, the Replayer).
  // Errors: FailedPrecondition "nondeterminism: ..." (nondeterministic() is then true), or
  // Internal/Unknown when workflow code threw something other than ApplicationError.
  core::Status replay(const Events& events, int64_t current_started_event_id);
  // The id of the last event fed (0 before the first call).
  int64_t last_event_id() const { return last_event_id_; }
  // True once the workflow code has finished (the run will close).
  bool finished() const { return finished_; }
  bool nondeterministic() const { return nondeterministic_; }
  void set_execution(const std::string& workflow_id, const std::string& run_id) {
    info_.workflow_id = workflow_id;
    info_.run_id = run_id;
  }
  // The commands of the task being processed so far, handed to the server: they are expected
  // back as command events in the next call to replay().
  std::vector<commandv1::Command> take_commands();
  // The run's workflow task timeout (from its started event; 10 s when it says none).
  std::chrono::milliseconds workflow_task_timeout() const { return workflow_task_timeout_; }

  // ---- local activities (run by the worker inside the task being processed) ----
  // Those scheduled and not yet handed over; each is handed over once.
  std::vector<LocalActivityRequest> take_local_activity_requests();
  // Whether local activity `seq` still waits for its outcome (false once resolved or cancelled).
  bool local_activity_waiting(int64_t seq) const { return local_activities_.count(seq) > 0; }
  bool has_waiting_local_activities() const { return !local_activities_.empty(); }
  // Applies the outcome the worker got for local activity `outcome.seq` in the task being
  // processed: records its marker, resolves it (or, with a backoff and fall_back_to_activity,
  // schedules its remaining attempts as an activity) and runs the workflow until it blocks
  // again, as a new activation of the same task. Nothing for a seq no longer waiting.
  core::Status resolve_local_activity(LocalActivityMarker outcome);

  // Runs a query handler on the replayed state. NotFound for an unknown query.
  core::Result<Json> query(const std::string& name, const Args& args);

  // ---- used by WorkflowContext and the awaitables ----
  const WorkflowInfo& info() const { return info_; }
  // Returns the pending result and the activity id.
  std::pair<std::shared_ptr<Pending>, std::string> schedule_activity(const std::string& name,
                                                                     Args args,
                                                                     const ActivityOptions& o);
  void cancel_activity(const std::string& activity_id);
  // Returns the pending result and the activity id (its seq).
  std::pair<std::shared_ptr<Pending>, std::string> schedule_local_activity(
      const std::string& name, Args args, const LocalActivityOptions& o);
  // Returns the pending result and the child's sequence number.
  std::pair<std::shared_ptr<Pending>, int64_t> start_child(const std::string& workflow_type,
                                                           Args args,
                                                           const ChildWorkflowOptions& o);
  void cancel_child(int64_t seq);
  bool patched(const std::string& patch_id, bool deprecated);
  int64_t history_length() const { return history_length_; }
  int64_t history_size_bytes() const { return history_size_bytes_; }
  bool continue_as_new_suggested() const { return continue_as_new_suggested_; }
  std::shared_ptr<Pending> start_timer(std::chrono::milliseconds d,
                                       std::string* timer_id = nullptr);
  void cancel_timer(const std::string& timer_id);
  void add_condition(std::function<bool()> pred, std::coroutine_handle<> h);
  std::chrono::system_clock::time_point now() const { return now_; }
  uint64_t random() { return rng_(); }
  Json side_effect(const std::function<Json()>& fn);
  void set_signal_handler(const std::string& name, std::function<void(const Args&)> handler);
  void set_query_handler(const std::string& name, std::function<Json(const Args&)> handler);
  bool cancel_requested() const { return cancel_requested_; }
  bool is_replaying() const { return replaying_; }
  WorkflowContext& context() { return ctx_; }

 private:
  core::Status activate(std::chrono::system_clock::time_point time);
  core::Status apply_job(const historyv1::HistoryEvent& e);
  core::Status run_until_blocked();
  void finish_root();
  core::Status match_command_event(const historyv1::HistoryEvent& e, int task_index);
  core::Status check_no_leftover(const historyv1::HistoryEvent* next, int task_index);
  void resolve(const std::shared_ptr<Pending>& p, ActivityResult result);
  core::Error nondeterminism(std::string message);
  void request_cancel_child_execution(int64_t seq);
  void resolve_child(int64_t initiated_event_id, ActivityResult result);
  void cancel_everything_pending();
  void schedule_activity_command(const std::string& id, const std::string& name, const Args& args,
                                 const ActivityOptions& o);
  // Resolves the local activities whose markers the task being replayed recorded, in the order
  // it recorded them.
  core::Status resolve_recorded_local_activities();

  WorkflowFunction fn_;
  WorkflowInfo info_;
  WorkflowContext ctx_;
  Args input_;
  // The run's memo from its started event: a continue-as-new run is given it, as the official
  // SDKs do (the server does not carry a memo over by itself).
  ::temporal::api::common::v1::Memo memo_;
  std::optional<Task<Json>> root_;
  bool started_ = false;
  bool finished_ = false;
  std::deque<std::coroutine_handle<>> ready_;
  std::vector<std::pair<std::function<bool()>, std::coroutine_handle<>>> conditions_;

  std::vector<commandv1::Command> commands_;   // produced by the current activation
  HistoryMatcher matcher_;                     // commands produced, matched with history
  std::vector<historyv1::HistoryEvent> jobs_;  // events for the next activation
  int task_index_ = 0;
  int64_t last_event_id_ = 0;
  int64_t next_activity_seq_ = 1;
  int64_t next_timer_seq_ = 1;
  int64_t next_marker_seq_ = 1;
  std::map<std::string, std::shared_ptr<Pending>> activities_by_id_;  // pending, by activity id
  std::map<int64_t, std::string> activity_id_by_scheduled_event_;
  std::map<std::string, std::shared_ptr<Pending>> timers_;  // pending, by timer id
  std::set<std::string> recorded_timers_;                   // TimerStarted seen
  std::map<int64_t, Json> recorded_side_effects_;           // from history, by seq
  std::set<std::string> cancel_sent_activities_;            // RequestCancelActivityTask sent

  struct LocalActivity {
    std::shared_ptr<Pending> pending;
    LocalActivityRequest request;
  };
  std::map<int64_t, LocalActivity> local_activities_;  // waiting for their outcome, by seq
  std::vector<int64_t> unrequested_local_activities_;  // not handed to the worker yet
  // Replay: the local activity markers each completed task recorded (by its started event id),
  // in history order, and those of the task being replayed not yet applied.
  std::map<int64_t, std::vector<LocalActivityMarker>> local_markers_by_task_;
  std::vector<LocalActivityMarker> task_local_markers_;
  std::chrono::milliseconds workflow_task_timeout_{std::chrono::seconds(10)};

  struct Child {
    std::shared_ptr<Pending> pending;  // null once resolved
    std::string workflow_id;
    std::string run_id;              // set when started
    int64_t initiated_event_id = 0;  // set when the start command is recorded
    bool cancel_wanted = false;      // cancel() called before the child started
    bool cancel_sent = false;
  };
  int64_t next_child_seq_ = 1;
  std::map<int64_t, Child> children_;              // by seq
  std::map<int64_t, int64_t> child_by_initiated_;  // initiated event id -> seq

  // Patches: markers recorded by each completed workflow task (by its started event id), the
  // set for the task being replayed, and the answers given so far.
  std::map<int64_t, int64_t> started_by_completed_event_;
  std::map<int64_t, std::set<std::string>> patches_by_task_;
  std::set<std::string> task_patches_;
  std::map<std::string, bool> patch_memo_;
  std::set<std::string> deprecated_sent_;

  int64_t history_length_ = 0;
  int64_t history_size_bytes_ = 0;
  bool continue_as_new_suggested_ = false;
  std::string original_run_id_;

  std::map<std::string, std::function<void(const Args&)>> signal_handlers_;
  std::map<std::string, std::deque<Args>> buffered_signals_;
  std::map<std::string, std::function<Json(const Args&)>> query_handlers_;
  bool cancel_requested_ = false;
  bool replaying_ = false;
  bool nondeterministic_ = false;
  std::chrono::system_clock::time_point now_{};
  std::mt19937_64 rng_;
};

}  // namespace codeact::temporal::internal
