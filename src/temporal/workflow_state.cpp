#include "workflow_state.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "codec.hpp"
#include "ids.hpp"
#include "markers.hpp"

namespace codeact::temporal::internal {

namespace enumsv1 = ::temporal::api::enums::v1;

namespace {

thread_local WorkflowState* g_current = nullptr;

// Sets the thread's current workflow for the duration of a scope.
class CurrentScope {
 public:
  explicit CurrentScope(WorkflowState* s) : prev_(g_current) { g_current = s; }
  ~CurrentScope() { g_current = prev_; }

 private:
  WorkflowState* prev_;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

bool is_job_event(const historyv1::HistoryEvent& e) {
  switch (e.event_type()) {
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_FAILED:
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_CANCELED:
    case enumsv1::EVENT_TYPE_TIMER_FIRED:
    case enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
    case enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
    case enumsv1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED:
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT:
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
      return true;
    default:
      return false;
  }
}

// The retry policy of an activity or child workflow command.
void encode_retry_policy(const RetryPolicy& policy, ::temporal::api::common::v1::RetryPolicy* out) {
  set_duration(policy.initial_interval, out->mutable_initial_interval());
  out->set_backoff_coefficient(policy.backoff_coefficient);
  if (policy.maximum_interval.count() > 0)
    set_duration(policy.maximum_interval, out->mutable_maximum_interval());
  out->set_maximum_attempts(policy.maximum_attempts);
  for (const auto& t : policy.non_retryable_error_types) out->add_non_retryable_error_types(t);
}

// Resolves `p` with an InvalidArgument failure when neither timeout is set; true if it did.
bool refused_without_timeout(Pending& p, const std::string& kind, const std::string& name,
                             std::chrono::milliseconds start_to_close,
                             std::chrono::milliseconds schedule_to_close) {
  if (start_to_close.count() > 0 || schedule_to_close.count() > 0) return false;
  p.resolved = true;
  p.result.emplace(Failure::application(
      "InvalidArgument",
      kind + " '" + name + "': set start_to_close_timeout or schedule_to_close_timeout", true));
  return true;
}

}  // namespace

WorkflowState::WorkflowState(WorkflowFunction fn, std::string ns, std::string task_queue)
    : fn_(std::move(fn)), ctx_(this) {
  info_.ns = std::move(ns);
  info_.task_queue = std::move(task_queue);
}

WorkflowState::~WorkflowState() {
  // Destroy coroutine frames with this workflow current, so destructors of locals that touch
  // the context still find it.
  CurrentScope scope(this);
  root_.reset();
}

core::Error WorkflowState::nondeterminism(std::string message) {
  nondeterministic_ = true;
  return core::failed_precondition("nondeterminism in workflow " + info_.workflow_id + " (type " +
                                   info_.workflow_type + ", run " + info_.run_id + "): " + message);
}

core::Status WorkflowState::replay(const Events& events, int64_t current_started_event_id) {
  CurrentScope scope(this);
  if (!events.empty() && events.begin()->event_id() != last_event_id_ + 1)
    return core::internal_error("workflow " + info_.workflow_id + ": history continues at event " +
                                std::to_string(events.begin()->event_id()) + ", expected event " +
                                std::to_string(last_event_id_ + 1));
  // Workflow tasks that completed (a failed or timed-out one produced nothing). A batch ends at
  // the current task, so every earlier task's outcome is inside the batch.
  std::set<int64_t> completed_started;
  // Patch markers name the WorkflowTaskCompleted event of their task, which is in the same batch.
  started_by_completed_event_.clear();
  for (const auto& e : events) {
    if (e.has_workflow_task_completed_event_attributes()) {
      int64_t started = e.workflow_task_completed_event_attributes().started_event_id();
      completed_started.insert(started);
      started_by_completed_event_[e.event_id()] = started;
    } else if (e.has_workflow_execution_started_event_attributes()) {
      const auto& a = e.workflow_execution_started_event_attributes();
      info_.workflow_type = a.workflow_type().name();
      if (info_.task_queue.empty()) info_.task_queue = a.task_queue().name();
      info_.first_execution_run_id = a.first_execution_run_id();
      info_.attempt = a.attempt();
      memo_ = a.memo();
      if (a.has_workflow_task_timeout() && to_millis(a.workflow_task_timeout()).count() > 0)
        workflow_task_timeout_ = to_millis(a.workflow_task_timeout());
      original_run_id_ = a.original_execution_run_id();
      if (!a.workflow_id().empty()) info_.workflow_id = a.workflow_id();
      input_ = decode_payloads(a.input());
      rng_.seed(fnv1a(a.first_execution_run_id().empty() ? a.original_execution_run_id()
                                                         : a.first_execution_run_id()));
    } else if (e.has_marker_recorded_event_attributes()) {
      const auto& m = e.marker_recorded_event_attributes();
      if (auto patch = patch_marker(e)) {
        auto task = started_by_completed_event_.find(m.workflow_task_completed_event_id());
        if (task != started_by_completed_event_.end())
          patches_by_task_[task->second].insert(patch->id);
        continue;
      }
      if (auto local = local_activity_marker(e)) {
        auto task = started_by_completed_event_.find(m.workflow_task_completed_event_id());
        if (task != started_by_completed_event_.end())
          local_markers_by_task_[task->second].push_back(std::move(*local));
        continue;
      }
      if (m.marker_name() != kSideEffectMarker) continue;
      auto seq = m.details().find("seq");
      auto data = m.details().find("data");
      if (seq == m.details().end() || data == m.details().end()) continue;
      Args s = decode_payloads(seq->second);
      Args d = decode_payloads(data->second);
      if (!s.empty() && s[0].is_number_integer())
        recorded_side_effects_[s[0].get<int64_t>()] = d.empty() ? Json(nullptr) : d[0];
    }
  }

  for (const auto& e : events) {
    last_event_id_ = e.event_id();
    if (e.event_type() == enumsv1::EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      bool current = e.event_id() == current_started_event_id;
      if (!current && !completed_started.count(e.event_id())) continue;  // failed or timed out
      CODEACT_TRY_STATUS(check_no_leftover(&e, task_index_));
      ++task_index_;
      replaying_ = !current;
      const auto& started = e.workflow_task_started_event_attributes();
      history_length_ = e.event_id();
      history_size_bytes_ = started.history_size_bytes();
      continue_as_new_suggested_ = started.suggest_continue_as_new();
      task_patches_.clear();
      if (auto p = patches_by_task_.find(e.event_id()); p != patches_by_task_.end()) {
        if (replaying_) task_patches_ = p->second;
        patches_by_task_.erase(p);
      }
      task_local_markers_.clear();
      if (auto l = local_markers_by_task_.find(e.event_id()); l != local_markers_by_task_.end()) {
        if (replaying_) task_local_markers_ = std::move(l->second);
        local_markers_by_task_.erase(l);
      }
      CODEACT_TRY_STATUS(activate(to_time_point(e.event_time())));
      if (current) return core::ok_status();  // its commands are expected once taken
      CODEACT_TRY_STATUS(resolve_recorded_local_activities());
      // These commands come back as command events after this task's WorkflowTaskCompleted.
      matcher_.expect(commands_);
      commands_.clear();
    } else if (HistoryMatcher::is_command_event(e)) {
      CODEACT_TRY_STATUS(match_command_event(e, task_index_));
    } else if (is_job_event(e)) {
      jobs_.push_back(e);
    }
  }
  if (current_started_event_id != 0)
    return core::internal_error("workflow task history of " + info_.workflow_id +
                                " does not contain its WorkflowTaskStarted event " +
                                std::to_string(current_started_event_id));
  CODEACT_TRY_STATUS(check_no_leftover(nullptr, task_index_));
  return core::ok_status();
}

std::vector<commandv1::Command> WorkflowState::take_commands() {
  matcher_.expect(commands_);
  std::vector<commandv1::Command> out;
  out.swap(commands_);
  return out;
}

core::Status WorkflowState::resolve_recorded_local_activities() {
  for (;;) {
    auto next =
        std::find_if(task_local_markers_.begin(), task_local_markers_.end(),
                     [&](const LocalActivityMarker& m) { return local_activity_waiting(m.seq); });
    if (next == task_local_markers_.end()) return core::ok_status();
    LocalActivityMarker m = std::move(*next);
    task_local_markers_.erase(next);
    CODEACT_TRY_STATUS(resolve_local_activity(std::move(m)));
  }
}

core::Status WorkflowState::match_command_event(const historyv1::HistoryEvent& e, int task_index) {
  if (auto matched = matcher_.match(e, task_index); !matched.ok())
    return nondeterminism(matched.error().message());
  // What later events refer to by the recorded command's event id.
  if (e.event_type() == enumsv1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    activity_id_by_scheduled_event_[e.event_id()] =
        e.activity_task_scheduled_event_attributes().activity_id();
  if (e.event_type() == enumsv1::EVENT_TYPE_TIMER_STARTED)
    recorded_timers_.insert(e.timer_started_event_attributes().timer_id());
  if (e.event_type() == enumsv1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED) {
    const std::string& wid =
        e.start_child_workflow_execution_initiated_event_attributes().workflow_id();
    for (auto& [seq, child] : children_) {
      if (child.initiated_event_id == 0 && child.workflow_id == wid) {
        child.initiated_event_id = e.event_id();
        child_by_initiated_[e.event_id()] = seq;
        break;
      }
    }
  }
  return core::ok_status();
}

core::Status WorkflowState::check_no_leftover(const historyv1::HistoryEvent* next, int task_index) {
  if (auto all = matcher_.check_all_matched(next, task_index); !all.ok())
    return nondeterminism(all.error().message());
  return core::ok_status();
}

core::Status WorkflowState::activate(std::chrono::system_clock::time_point time) {
  now_ = time;
  commands_.clear();
  std::vector<historyv1::HistoryEvent> jobs;
  jobs.swap(jobs_);
  if (!started_) {
    started_ = true;
    try {
      root_.emplace(fn_(ctx_, input_));
    } catch (const std::exception& ex) {
      return core::internal_error("workflow " + info_.workflow_type +
                                  " could not start: " + ex.what());
    }
    ready_.push_back(root_->handle());
  }
  try {
    for (const auto& e : jobs) CODEACT_TRY_STATUS(apply_job(e));
  } catch (const std::exception& ex) {
    return core::internal_error(std::string("workflow signal handler threw: ") + ex.what());
  }
  return run_until_blocked();
}

core::Status WorkflowState::apply_job(const historyv1::HistoryEvent& e) {
  auto activity = [&](int64_t scheduled) -> std::shared_ptr<Pending> {
    auto id = activity_id_by_scheduled_event_.find(scheduled);
    if (id == activity_id_by_scheduled_event_.end()) return nullptr;
    auto it = activities_by_id_.find(id->second);
    if (it == activities_by_id_.end()) return nullptr;
    auto p = it->second;
    activities_by_id_.erase(it);
    cancel_sent_activities_.erase(id->second);
    activity_id_by_scheduled_event_.erase(id);  // keeps the maps as small as the pending set
    return p;
  };
  auto with_activity = [&](Failure f, int64_t scheduled) {
    auto id = activity_id_by_scheduled_event_.find(scheduled);
    if (id != activity_id_by_scheduled_event_.end()) f.activity_id = id->second;
    return f;
  };
  switch (e.event_type()) {
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED: {
      const auto& a = e.activity_task_completed_event_attributes();
      if (auto p = activity(a.scheduled_event_id())) {
        Args out = decode_payloads(a.result());
        resolve(p, out.empty() ? Json(nullptr) : std::move(out[0]));
      }
      break;
    }
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_FAILED: {
      const auto& a = e.activity_task_failed_event_attributes();
      Failure f = with_activity(decode_failure(a.failure()), a.scheduled_event_id());
      if (auto p = activity(a.scheduled_event_id())) resolve(p, std::move(f));
      break;
    }
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: {
      const auto& a = e.activity_task_timed_out_event_attributes();
      Failure f = with_activity(decode_failure(a.failure()), a.scheduled_event_id());
      if (auto p = activity(a.scheduled_event_id())) resolve(p, std::move(f));
      break;
    }
    case enumsv1::EVENT_TYPE_ACTIVITY_TASK_CANCELED: {
      const auto& a = e.activity_task_canceled_event_attributes();
      Failure f;
      f.kind = FailureKind::kCanceled;
      f.code = core::Code::kCancelled;
      f.message = "activity cancelled";
      f = with_activity(std::move(f), a.scheduled_event_id());
      if (auto p = activity(a.scheduled_event_id())) resolve(p, std::move(f));
      break;
    }
    case enumsv1::EVENT_TYPE_TIMER_FIRED: {
      auto it = timers_.find(e.timer_fired_event_attributes().timer_id());
      if (it != timers_.end()) {
        auto p = it->second;
        timers_.erase(it);
        resolve(p, Json(nullptr));
      }
      break;
    }
    case enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: {
      const auto& a = e.workflow_execution_signaled_event_attributes();
      Args args = decode_payloads(a.input());
      auto h = signal_handlers_.find(a.signal_name());
      if (h != signal_handlers_.end()) {
        h->second(args);
      } else {
        buffered_signals_[a.signal_name()].push_back(std::move(args));
      }
      break;
    }
    case enumsv1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
      if (!cancel_requested_) {
        cancel_requested_ = true;
        cancel_everything_pending();
      }
      break;
    case enumsv1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED: {
      const auto& a = e.start_child_workflow_execution_failed_event_attributes();
      Failure f;
      f.kind = FailureKind::kServer;
      f.type = "ChildWorkflowAlreadyStarted";
      f.code = core::Code::kAlreadyExists;
      f.message =
          "child workflow " + a.workflow_id() + " (type " + a.workflow_type().name() +
          ") was not started: " + enumsv1::StartChildWorkflowExecutionFailedCause_Name(a.cause());
      resolve_child(a.initiated_event_id(), std::move(f));
      break;
    }
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED: {
      const auto& a = e.child_workflow_execution_started_event_attributes();
      auto seq = child_by_initiated_.find(a.initiated_event_id());
      if (seq == child_by_initiated_.end()) break;
      Child& child = children_[seq->second];
      child.run_id = a.workflow_execution().run_id();
      if (child.cancel_wanted && child.pending) request_cancel_child_execution(seq->second);
      break;
    }
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED: {
      const auto& a = e.child_workflow_execution_completed_event_attributes();
      Args out = decode_payloads(a.result());
      resolve_child(a.initiated_event_id(), out.empty() ? Json(nullptr) : std::move(out[0]));
      break;
    }
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED: {
      const auto& a = e.child_workflow_execution_failed_event_attributes();
      resolve_child(a.initiated_event_id(), decode_failure(a.failure()));
      break;
    }
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED: {
      const auto& a = e.child_workflow_execution_canceled_event_attributes();
      resolve_child(a.initiated_event_id(),
                    Failure::cancelled("child workflow " + a.workflow_execution().workflow_id() +
                                       " was cancelled"));
      break;
    }
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT: {
      const auto& a = e.child_workflow_execution_timed_out_event_attributes();
      Failure f;
      f.kind = FailureKind::kTimeout;
      f.code = core::Code::kDeadlineExceeded;
      f.timeout_type = "StartToClose";
      f.message = "child workflow " + a.workflow_execution().workflow_id() + " timed out";
      resolve_child(a.initiated_event_id(), std::move(f));
      break;
    }
    case enumsv1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED: {
      const auto& a = e.child_workflow_execution_terminated_event_attributes();
      Failure f;
      f.kind = FailureKind::kTerminated;
      f.code = core::Code::kAborted;
      f.message = "child workflow " + a.workflow_execution().workflow_id() + " was terminated";
      resolve_child(a.initiated_event_id(), std::move(f));
      break;
    }
    default:
      break;
  }
  return core::ok_status();
}

void WorkflowState::resolve_child(int64_t initiated_event_id, ActivityResult result) {
  auto seq = child_by_initiated_.find(initiated_event_id);
  if (seq == child_by_initiated_.end()) return;
  Child& child = children_[seq->second];
  if (!child.pending) return;
  auto p = std::move(child.pending);
  child.pending = nullptr;
  resolve(p, std::move(result));
}

void WorkflowState::cancel_everything_pending() {
  std::vector<std::string> activities;
  for (const auto& [id, _] : activities_by_id_) activities.push_back(id);
  for (const auto& [seq, _] : local_activities_) activities.push_back(std::to_string(seq));
  for (const auto& id : activities) cancel_activity(id);
  for (auto& [seq, child] : children_)
    if (child.pending) cancel_child(seq);
}

void WorkflowState::resolve(const std::shared_ptr<Pending>& p, ActivityResult result) {
  p->resolved = true;
  p->result.emplace(std::move(result));
  if (p->waiter) {
    ready_.push_back(p->waiter);
    p->waiter = {};
  }
}

core::Status WorkflowState::run_until_blocked() {
  try {
    for (;;) {
      while (!ready_.empty()) {
        auto h = ready_.front();
        ready_.pop_front();
        h.resume();
      }
      if (!finished_ && root_ && root_->done()) {
        finished_ = true;
        conditions_.clear();
        commandv1::Command cmd;
        try {
          Json result = root_->result();
          cmd.set_command_type(enumsv1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
          encode_payloads(
              Args{std::move(result)},
              cmd.mutable_complete_workflow_execution_command_attributes()->mutable_result());
        } catch (const ApplicationError& ex) {
          if (ex.failure().kind == FailureKind::kCanceled && cancel_requested_) {
            cmd.set_command_type(enumsv1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION);
            cmd.mutable_cancel_workflow_execution_command_attributes();
          } else {
            cmd.set_command_type(enumsv1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
            encode_failure(
                ex.failure(),
                cmd.mutable_fail_workflow_execution_command_attributes()->mutable_failure());
          }
        } catch (const ContinueAsNew& can) {
          cmd.set_command_type(enumsv1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
          auto* a = cmd.mutable_continue_as_new_workflow_execution_command_attributes();
          a->mutable_workflow_type()->set_name(info_.workflow_type);
          a->mutable_task_queue()->set_name(info_.task_queue);
          encode_payloads(can.args, a->mutable_input());
          if (memo_.fields_size() > 0) *a->mutable_memo() = memo_;
        } catch (const std::exception& ex) {
          return core::unknown_error(std::string("workflow ") + info_.workflow_type +
                                     " threw: " + ex.what());
        } catch (...) {
          return core::unknown_error("workflow " + info_.workflow_type +
                                     " threw a non-standard exception");
        }
        commands_.push_back(std::move(cmd));
      }
      if (finished_) break;
      bool woke = false;
      for (auto it = conditions_.begin(); it != conditions_.end(); ++it) {
        if (it->first()) {
          ready_.push_back(it->second);
          conditions_.erase(it);
          woke = true;
          break;
        }
      }
      if (!woke) break;
    }
  } catch (const std::exception& ex) {
    return core::unknown_error(std::string("workflow ") + info_.workflow_type +
                               " threw: " + ex.what());
  }
  return core::ok_status();
}

core::Result<Json> WorkflowState::query(const std::string& name, const Args& args) {
  CurrentScope scope(this);
  auto it = query_handlers_.find(name);
  if (it == query_handlers_.end()) {
    std::string known;
    for (const auto& [n, _] : query_handlers_) known += (known.empty() ? "" : ", ") + n;
    return core::not_found("workflow " + info_.workflow_type + " has no query handler '" + name +
                           "' (known: " + (known.empty() ? "none" : known) + ")");
  }
  try {
    return it->second(args);
  } catch (const std::exception& ex) {
    return core::unknown_error("query '" + name + "' failed: " + ex.what());
  }
}

std::pair<std::shared_ptr<Pending>, std::string> WorkflowState::schedule_activity(
    const std::string& name, Args args, const ActivityOptions& o) {
  auto p = std::make_shared<Pending>();
  int64_t seq = next_activity_seq_++;
  if (refused_without_timeout(*p, "activity", name, o.start_to_close_timeout,
                              o.schedule_to_close_timeout))
    return {p, ""};
  std::string id = o.activity_id.empty() ? std::to_string(seq) : o.activity_id;
  schedule_activity_command(id, name, args, o);
  activities_by_id_[id] = p;
  return {p, id};
}

std::pair<std::shared_ptr<Pending>, std::string> WorkflowState::schedule_local_activity(
    const std::string& name, Args args, const LocalActivityOptions& o) {
  auto p = std::make_shared<Pending>();
  // One sequence with activities, as the official SDKs count (their histories replay here).
  int64_t seq = next_activity_seq_++;
  if (refused_without_timeout(*p, "local activity", name, o.start_to_close_timeout,
                              o.schedule_to_close_timeout))
    return {p, ""};
  LocalActivity la;
  la.pending = p;
  la.request.seq = seq;
  la.request.name = name;
  la.request.args = std::move(args);
  la.request.options = o;
  la.request.scheduled = now_;
  local_activities_[seq] = std::move(la);
  unrequested_local_activities_.push_back(seq);
  return {p, std::to_string(seq)};
}

std::vector<LocalActivityRequest> WorkflowState::take_local_activity_requests() {
  std::vector<LocalActivityRequest> out;
  for (int64_t seq : unrequested_local_activities_) {
    auto it = local_activities_.find(seq);
    if (it != local_activities_.end()) out.push_back(it->second.request);
  }
  unrequested_local_activities_.clear();
  return out;
}

core::Status WorkflowState::resolve_local_activity(LocalActivityMarker outcome) {
  CurrentScope scope(this);
  auto it = local_activities_.find(outcome.seq);
  if (it == local_activities_.end()) return core::ok_status();
  LocalActivity la = std::move(it->second);
  local_activities_.erase(it);
  std::erase(unrequested_local_activities_, outcome.seq);
  const std::string id = std::to_string(outcome.seq);
  outcome.activity_id = id;
  outcome.activity_type = la.request.name;
  outcome.original_schedule_time = la.request.scheduled;
  if (outcome.complete_time == std::chrono::system_clock::time_point{})
    outcome.complete_time = now_;
  commands_.push_back(local_activity_marker_command(outcome));
  if (outcome.backoff && la.request.options.fall_back_to_activity) {
    // The remaining attempts, on the server: a normal activity under the same id.
    ActivityOptions o;
    o.start_to_close_timeout = la.request.options.start_to_close_timeout;
    o.schedule_to_close_timeout = la.request.options.schedule_to_close_timeout;
    o.retry_policy = la.request.options.retry_policy;
    schedule_activity_command(id, la.request.name, la.request.args, o);
    activities_by_id_[id] = la.pending;
  } else if (outcome.failure) {
    Failure f = std::move(*outcome.failure);
    f.activity_id = id;
    resolve(la.pending, std::move(f));
  } else {
    resolve(la.pending, outcome.result ? std::move(*outcome.result) : Json(nullptr));
  }
  return run_until_blocked();
}

void WorkflowState::schedule_activity_command(const std::string& id, const std::string& name,
                                              const Args& args, const ActivityOptions& o) {
  commandv1::Command cmd;
  cmd.set_command_type(enumsv1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  auto* a = cmd.mutable_schedule_activity_task_command_attributes();
  a->set_activity_id(id);
  a->mutable_activity_type()->set_name(name);
  a->mutable_task_queue()->set_name(o.task_queue.empty() ? info_.task_queue : o.task_queue);
  a->mutable_task_queue()->set_kind(enumsv1::TASK_QUEUE_KIND_NORMAL);
  encode_payloads(args, a->mutable_input());
  if (o.start_to_close_timeout.count() > 0)
    set_duration(o.start_to_close_timeout, a->mutable_start_to_close_timeout());
  if (o.schedule_to_close_timeout.count() > 0)
    set_duration(o.schedule_to_close_timeout, a->mutable_schedule_to_close_timeout());
  if (o.schedule_to_start_timeout.count() > 0)
    set_duration(o.schedule_to_start_timeout, a->mutable_schedule_to_start_timeout());
  if (o.heartbeat_timeout.count() > 0)
    set_duration(o.heartbeat_timeout, a->mutable_heartbeat_timeout());
  if (o.retry_policy) encode_retry_policy(*o.retry_policy, a->mutable_retry_policy());
  commands_.push_back(std::move(cmd));
}

void WorkflowState::cancel_activity(const std::string& activity_id) {
  // A local activity waiting for its outcome resolves as cancelled at once, with its marker.
  auto local = std::find_if(local_activities_.begin(), local_activities_.end(),
                            [&](const auto& l) { return std::to_string(l.first) == activity_id; });
  if (local != local_activities_.end()) {
    LocalActivity la = std::move(local->second);
    local_activities_.erase(local);
    std::erase(unrequested_local_activities_, la.request.seq);
    LocalActivityMarker m;
    m.seq = la.request.seq;
    m.activity_id = activity_id;
    m.activity_type = la.request.name;
    m.original_schedule_time = la.request.scheduled;
    m.complete_time = now_;
    Failure f = Failure::cancelled("local activity " + la.request.name + " cancelled");
    f.activity_id = activity_id;
    m.failure = f;
    commands_.push_back(local_activity_marker_command(m));
    resolve(la.pending, std::move(f));
    return;
  }
  auto it = activities_by_id_.find(activity_id);
  if (it == activities_by_id_.end()) return;  // already resolved
  for (const auto& [scheduled, id] : activity_id_by_scheduled_event_) {
    if (id != activity_id) continue;
    if (!cancel_sent_activities_.insert(activity_id).second) return;  // asked already
    commandv1::Command cmd;
    cmd.set_command_type(enumsv1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK);
    cmd.mutable_request_cancel_activity_task_command_attributes()->set_scheduled_event_id(
        scheduled);
    commands_.push_back(std::move(cmd));
    return;
  }
  // Not recorded yet: the schedule command is still in this activation; drop it.
  for (auto c = commands_.begin(); c != commands_.end(); ++c) {
    if (c->command_type() == enumsv1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK &&
        c->schedule_activity_task_command_attributes().activity_id() == activity_id) {
      commands_.erase(c);
      break;
    }
  }
  auto p = it->second;
  activities_by_id_.erase(it);
  Failure f;
  f.kind = FailureKind::kCanceled;
  f.code = core::Code::kCancelled;
  f.message = "activity cancelled before it was scheduled";
  f.activity_id = activity_id;
  resolve(p, std::move(f));
}

std::shared_ptr<Pending> WorkflowState::start_timer(std::chrono::milliseconds d,
                                                    std::string* timer_id) {
  auto p = std::make_shared<Pending>();
  if (d.count() <= 0) {
    p->resolved = true;
    p->result.emplace(Json(nullptr));
    return p;
  }
  std::string id = std::to_string(next_timer_seq_++);
  if (timer_id) *timer_id = id;
  commandv1::Command cmd;
  cmd.set_command_type(enumsv1::COMMAND_TYPE_START_TIMER);
  auto* a = cmd.mutable_start_timer_command_attributes();
  a->set_timer_id(id);
  set_duration(d, a->mutable_start_to_fire_timeout());
  commands_.push_back(std::move(cmd));
  timers_[id] = p;
  return p;
}

void WorkflowState::cancel_timer(const std::string& timer_id) {
  auto it = timers_.find(timer_id);
  if (it == timers_.end()) return;  // fired or cancelled already
  auto p = it->second;
  timers_.erase(it);
  resolve(p, Failure::cancelled("timer " + timer_id + " cancelled"));
  if (recorded_timers_.count(timer_id)) {
    commandv1::Command cmd;
    cmd.set_command_type(enumsv1::COMMAND_TYPE_CANCEL_TIMER);
    cmd.mutable_cancel_timer_command_attributes()->set_timer_id(timer_id);
    commands_.push_back(std::move(cmd));
    return;
  }
  // Started in this activation: never send it.
  for (auto c = commands_.begin(); c != commands_.end(); ++c) {
    if (c->command_type() == enumsv1::COMMAND_TYPE_START_TIMER &&
        c->start_timer_command_attributes().timer_id() == timer_id) {
      commands_.erase(c);
      return;
    }
  }
}

std::pair<std::shared_ptr<Pending>, int64_t> WorkflowState::start_child(
    const std::string& workflow_type, Args args, const ChildWorkflowOptions& o) {
  auto p = std::make_shared<Pending>();
  int64_t seq = next_child_seq_++;
  std::string id = o.workflow_id;
  if (id.empty()) {
    id = info_.workflow_id + "-child-" + std::to_string(seq);
    if (!original_run_id_.empty()) id += "-" + original_run_id_.substr(0, 8);
  }
  commandv1::Command cmd;
  cmd.set_command_type(enumsv1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  auto* a = cmd.mutable_start_child_workflow_execution_command_attributes();
  a->set_workflow_id(id);
  a->mutable_workflow_type()->set_name(workflow_type);
  a->mutable_task_queue()->set_name(o.task_queue.empty() ? info_.task_queue : o.task_queue);
  a->mutable_task_queue()->set_kind(enumsv1::TASK_QUEUE_KIND_NORMAL);
  encode_payloads(args, a->mutable_input());
  if (o.execution_timeout.count() > 0)
    set_duration(o.execution_timeout, a->mutable_workflow_execution_timeout());
  if (o.run_timeout.count() > 0) set_duration(o.run_timeout, a->mutable_workflow_run_timeout());
  if (o.task_timeout.count() > 0) set_duration(o.task_timeout, a->mutable_workflow_task_timeout());
  switch (o.parent_close_policy) {
    case ParentClosePolicy::kTerminate:
      a->set_parent_close_policy(enumsv1::PARENT_CLOSE_POLICY_TERMINATE);
      break;
    case ParentClosePolicy::kAbandon:
      a->set_parent_close_policy(enumsv1::PARENT_CLOSE_POLICY_ABANDON);
      break;
    case ParentClosePolicy::kRequestCancel:
      a->set_parent_close_policy(enumsv1::PARENT_CLOSE_POLICY_REQUEST_CANCEL);
      break;
  }
  if (o.retry_policy) encode_retry_policy(*o.retry_policy, a->mutable_retry_policy());
  commands_.push_back(std::move(cmd));
  Child child;
  child.pending = p;
  child.workflow_id = id;
  children_[seq] = std::move(child);
  return {p, seq};
}

void WorkflowState::cancel_child(int64_t seq) {
  auto it = children_.find(seq);
  if (it == children_.end() || !it->second.pending) return;  // resolved already
  Child& child = it->second;
  if (child.initiated_event_id == 0) {
    // The start command is still in this activation: never send it.
    for (auto c = commands_.begin(); c != commands_.end(); ++c) {
      if (c->command_type() == enumsv1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION &&
          c->start_child_workflow_execution_command_attributes().workflow_id() ==
              child.workflow_id) {
        commands_.erase(c);
        break;
      }
    }
    auto p = std::move(child.pending);
    child.pending = nullptr;
    resolve(p, Failure::cancelled("child workflow " + child.workflow_id +
                                  " cancelled before it was started"));
    return;
  }
  if (child.run_id.empty()) {
    child.cancel_wanted = true;  // sent when ChildWorkflowExecutionStarted arrives
    return;
  }
  request_cancel_child_execution(seq);
}

void WorkflowState::request_cancel_child_execution(int64_t seq) {
  Child& child = children_[seq];
  if (child.cancel_sent) return;
  child.cancel_sent = true;
  commandv1::Command cmd;
  cmd.set_command_type(enumsv1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
  auto* a = cmd.mutable_request_cancel_external_workflow_execution_command_attributes();
  a->set_workflow_id(child.workflow_id);
  a->set_run_id(child.run_id);
  a->set_child_workflow_only(true);
  commands_.push_back(std::move(cmd));
}

bool WorkflowState::patched(const std::string& patch_id, bool deprecated) {
  if (!deprecated) {
    if (auto m = patch_memo_.find(patch_id); m != patch_memo_.end()) return m->second;
  }
  // New code records the marker; a replayed task takes the new path only if it recorded it.
  bool use = !replaying_ || task_patches_.count(patch_id) > 0;
  if (deprecated) {
    if (!use || !deprecated_sent_.insert(patch_id).second) return true;
  } else {
    patch_memo_[patch_id] = use;
    if (!use) return false;
  }
  commandv1::Command cmd;
  cmd.set_command_type(enumsv1::COMMAND_TYPE_RECORD_MARKER);
  auto* a = cmd.mutable_record_marker_command_attributes();
  a->set_marker_name(kPatchMarker);
  encode_payloads(Args{Json{{"id", patch_id}, {"deprecated", deprecated}}},
                  &(*a->mutable_details())[kPatchDataKey]);
  commands_.push_back(std::move(cmd));
  return true;
}

void WorkflowState::add_condition(std::function<bool()> pred, std::coroutine_handle<> h) {
  conditions_.emplace_back(std::move(pred), h);
}

Json WorkflowState::side_effect(const std::function<Json()>& fn) {
  int64_t seq = next_marker_seq_++;
  Json value;
  auto it = recorded_side_effects_.find(seq);
  if (it != recorded_side_effects_.end()) {
    value = it->second;
  } else {
    value = fn();
  }
  commandv1::Command cmd;
  cmd.set_command_type(enumsv1::COMMAND_TYPE_RECORD_MARKER);
  auto* a = cmd.mutable_record_marker_command_attributes();
  a->set_marker_name(kSideEffectMarker);
  encode_payloads(Args{Json(seq)}, &(*a->mutable_details())["seq"]);
  encode_payloads(Args{value}, &(*a->mutable_details())["data"]);
  commands_.push_back(std::move(cmd));
  return value;
}

void WorkflowState::set_signal_handler(const std::string& name,
                                       std::function<void(const Args&)> handler) {
  auto& h = signal_handlers_[name];
  h = std::move(handler);
  auto it = buffered_signals_.find(name);
  if (it == buffered_signals_.end()) return;
  auto pending = std::move(it->second);
  buffered_signals_.erase(it);
  for (auto& args : pending) h(args);
}

void WorkflowState::set_query_handler(const std::string& name,
                                      std::function<Json(const Args&)> handler) {
  query_handlers_[name] = std::move(handler);
}

}  // namespace codeact::temporal::internal

namespace codeact::temporal {

using internal::g_current;

void ConditionAwaitable::await_suspend(std::coroutine_handle<> h) {
  state_->add_condition(pred_, h);
}

const WorkflowInfo& WorkflowContext::info() const { return state_->info(); }
ActivityAwaitable WorkflowContext::execute_activity(const std::string& name, Args args,
                                                    const ActivityOptions& options) {
  auto [pending, id] = state_->schedule_activity(name, std::move(args), options);
  return ActivityAwaitable(std::move(pending), state_, std::move(id));
}
ActivityAwaitable WorkflowContext::execute_local_activity(const std::string& name, Args args,
                                                          const LocalActivityOptions& options) {
  auto [pending, id] = state_->schedule_local_activity(name, std::move(args), options);
  return ActivityAwaitable(std::move(pending), state_, std::move(id));
}
ChildWorkflowAwaitable WorkflowContext::start_child_workflow(const std::string& workflow_type,
                                                             Args args,
                                                             const ChildWorkflowOptions& options) {
  auto [pending, seq] = state_->start_child(workflow_type, std::move(args), options);
  return ChildWorkflowAwaitable(std::move(pending), state_, seq);
}
void ChildWorkflowAwaitable::cancel() { state_->cancel_child(seq_); }
void ActivityAwaitable::cancel() {
  if (!activity_id_.empty()) state_->cancel_activity(activity_id_);
}
TimerAwaitable WorkflowContext::sleep(std::chrono::milliseconds duration) {
  std::string timer_id;
  auto pending = state_->start_timer(duration, &timer_id);
  return TimerAwaitable(std::move(pending), state_, std::move(timer_id));
}
void TimerAwaitable::cancel() {
  if (!timer_id_.empty()) state_->cancel_timer(timer_id_);
}
ConditionAwaitable WorkflowContext::wait_condition(std::function<bool()> pred) {
  return ConditionAwaitable(state_, std::move(pred));
}
Task<bool> WorkflowContext::wait_condition(std::function<bool()> pred,
                                           std::chrono::milliseconds timeout) {
  if (pred()) co_return true;
  std::string timer_id;
  auto timer = state_->start_timer(timeout, &timer_id);
  co_await ConditionAwaitable(state_, [&] { return timer->resolved || pred(); });
  bool satisfied = pred();
  if (!timer->resolved) state_->cancel_timer(timer_id);
  co_return satisfied;
}

std::chrono::system_clock::time_point WorkflowContext::now() const { return state_->now(); }
uint64_t WorkflowContext::random() { return state_->random(); }
std::string WorkflowContext::uuid() {
  uint64_t hi = state_->random();
  uint64_t lo = state_->random();
  return internal::format_uuid(hi, lo);
}
Json WorkflowContext::side_effect(const std::function<Json()>& fn) {
  return state_->side_effect(fn);
}
void WorkflowContext::set_signal_handler(const std::string& name,
                                         std::function<void(const Args&)> handler) {
  state_->set_signal_handler(name, std::move(handler));
}
void WorkflowContext::set_query_handler(const std::string& name,
                                        std::function<Json(const Args&)> handler) {
  state_->set_query_handler(name, std::move(handler));
}
bool WorkflowContext::cancel_requested() const { return state_->cancel_requested(); }
bool WorkflowContext::is_replaying() const { return state_->is_replaying(); }
ConditionAwaitable WorkflowContext::cancellation() {
  internal::WorkflowState* s = state_;
  return ConditionAwaitable(s, [s] { return s->cancel_requested(); });
}
bool WorkflowContext::patched(const std::string& patch_id) {
  return state_->patched(patch_id, false);
}
void WorkflowContext::deprecate_patch(const std::string& patch_id) {
  (void)state_->patched(patch_id, true);
}
int64_t WorkflowContext::history_length() const { return state_->history_length(); }
int64_t WorkflowContext::history_size_bytes() const { return state_->history_size_bytes(); }
bool WorkflowContext::continue_as_new_suggested() const {
  return state_->continue_as_new_suggested();
}

WorkflowContext& WorkflowContext::current() {
  if (!g_current) throw std::logic_error("WorkflowContext::current() called outside workflow code");
  return g_current->context();
}

}  // namespace codeact::temporal
