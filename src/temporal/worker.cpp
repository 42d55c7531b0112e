#include "codeact/temporal/worker.hpp"

#include <condition_variable>
#include <list>
#include <set>
#include <thread>

#include "codeact/core/log.hpp"
#include "codec.hpp"
#include "ids.hpp"
#include "local_activities.hpp"
#include "service_connection.hpp"
#include "workflow_state.hpp"

namespace codeact::temporal {

using internal::wsv1::WorkflowService;
namespace enumsv1 = ::temporal::api::enums::v1;
namespace historyv1 = ::temporal::api::history::v1;

struct Worker::Impl : std::enable_shared_from_this<Worker::Impl> {
  Impl(Client c, WorkerOptions o)
      : client(std::move(c)), conn(client.connection()), options(std::move(o)) {}

  Client client;
  std::shared_ptr<internal::ServiceConnection> conn;
  WorkerOptions options;
  std::map<std::string, WorkflowFunction> workflows;
  std::map<std::string, ActivityFunction> activities;
  std::string identity;

  std::atomic<bool> stopping{false};
  std::vector<std::thread> pollers;
  // This worker's sticky queue: the server sends the next workflow tasks of a run this worker
  // has cached there, with only the new events.
  std::string sticky_queue;
  // Unique per Worker; lets ShutdownWorker end this worker's outstanding polls server-side.
  std::string instance_key;

  std::mutex mu;
  std::condition_variable cv;
  std::set<grpc::ClientContext*> polls;                // GUARDED_BY(mu)
  std::set<std::shared_ptr<ActivityContext>> running;  // GUARDED_BY(mu)
  int activity_slots = 0;                              // GUARDED_BY(mu)
  int inflight_activities = 0;                         // GUARDED_BY(mu)
  // Workflow tasks completed on threads of their own (waiting for local activities).
  int inflight_workflow_tasks = 0;  // GUARDED_BY(mu)
  bool started = false;             // GUARDED_BY(mu)
  bool stopped = false;             // GUARDED_BY(mu)
  // Runs whose state is cached (by run id), and their order of use for eviction.
  std::map<std::string, std::unique_ptr<internal::WorkflowState>> cache;  // GUARDED_BY(mu)
  std::list<std::string> cache_order;                                     // GUARDED_BY(mu)

  std::unique_ptr<internal::WorkflowState> take_cached(const std::string& run_id) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(run_id);
    if (it == cache.end()) return nullptr;
    auto state = std::move(it->second);
    cache.erase(it);
    cache_order.remove(run_id);
    return state;
  }
  void put_cached(const std::string& run_id, std::unique_ptr<internal::WorkflowState> state) {
    std::lock_guard<std::mutex> lock(mu);
    cache[run_id] = std::move(state);
    cache_order.push_back(run_id);
    while (static_cast<int>(cache.size()) > std::max(0, options.max_cached_workflows)) {
      cache.erase(cache_order.front());
      cache_order.pop_front();
    }
  }
  core::Result<historyv1::History> full_history(
      const ::temporal::api::common::v1::WorkflowExecution& execution);

  // Registers a poll's context so shutdown can cancel it; false when stopping.
  bool begin_poll(grpc::ClientContext* ctx) {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return false;
    polls.insert(ctx);
    return true;
  }
  void end_poll(grpc::ClientContext* ctx) {
    std::lock_guard<std::mutex> lock(mu);
    polls.erase(ctx);
    cv.notify_all();
  }
  // After a failed poll: waits (until shutdown) longer each time in a row, from 200 ms to 5 s.
  // An unreachable server is said once per outage by the connection, not at each poll.
  void backoff(const core::Error& error, std::chrono::milliseconds& wait) {
    if (error.code() == core::Code::kUnavailable) {
      conn->report_unreachable(error);
    } else {
      core::log().warn("temporal worker: {}", error.to_string());
    }
    wait = internal::next_retry_wait(wait);
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, wait, [&] { return stopping.load(); });
  }
  bool is_stopping() const { return stopping.load(); }

  void workflow_poller(bool sticky);
  // Runs an activity task on its own thread. REQUIRES: the caller holds one activity slot,
  // which the thread gives back when done.
  void launch_activity(internal::wsv1::PollActivityTaskQueueResponse task);
  bool try_reserve_activity_slot() {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping || activity_slots <= 0) return false;
    --activity_slots;
    return true;
  }
  void release_activity_slots(int n) {
    if (n <= 0) return;
    std::lock_guard<std::mutex> lock(mu);
    activity_slots += n;
    cv.notify_all();
  }
  void activity_poller();
  void process_workflow_task(internal::wsv1::PollWorkflowTaskQueueResponse& task);
  // Completes a replayed workflow task: runs its local activities (renewing the task while they
  // run long), answers its queries, sends its commands, caches the run.
  void complete_workflow_task(internal::wsv1::PollWorkflowTaskQueueResponse task,
                              std::unique_ptr<internal::WorkflowState> owned,
                              WorkflowTaskStats stats,
                              std::chrono::steady_clock::time_point task_begin);
  void respond_workflow_task_failed(const std::string& task_token, const std::string& wid,
                                    const std::string& type, enumsv1::WorkflowTaskFailedCause cause,
                                    const std::string& message);
  void run_activity(const internal::wsv1::PollActivityTaskQueueResponse& task);
};

namespace {
constexpr std::chrono::milliseconds kPollTimeout{std::chrono::seconds(70)};
// How long a finished task's answer waits for an unreachable server: a workflow task's answer
// is worthless past its task timeout (10 s by default); an activity's result is worth keeping
// longer (otherwise the activity is run again, after its heartbeat or start-to-close timeout).
constexpr std::chrono::milliseconds kRespondPatience{std::chrono::seconds(10)};
constexpr std::chrono::milliseconds kActivityResultPatience{std::chrono::minutes(2)};
// While local activities run, the shortest time between two completions of a workflow task made
// to answer the queries it carries. Each costs the history a workflow task (three events), so a
// run watched without pause renews its task about this often instead of every 8 s.
constexpr std::chrono::milliseconds kQueryAnswerDelay{std::chrono::seconds(2)};
}  // namespace

void Worker::Impl::workflow_poller(bool sticky) {
  std::chrono::milliseconds wait{0};
  while (!stopping) {
    grpc::ClientContext ctx;
    if (!begin_poll(&ctx)) break;
    internal::wsv1::PollWorkflowTaskQueueRequest req;
    req.set_namespace_(conn->ns());
    if (sticky) {
      req.mutable_task_queue()->set_name(sticky_queue);
      req.mutable_task_queue()->set_kind(enumsv1::TASK_QUEUE_KIND_STICKY);
      req.mutable_task_queue()->set_normal_name(options.task_queue);
    } else {
      req.mutable_task_queue()->set_name(options.task_queue);
      req.mutable_task_queue()->set_kind(enumsv1::TASK_QUEUE_KIND_NORMAL);
    }
    req.set_identity(identity);
    req.set_worker_instance_key(instance_key);
    auto r =
        conn->call(&WorkflowService::Stub::PollWorkflowTaskQueue, req,
                   "poll workflow task queue '" + options.task_queue + "'", kPollTimeout, &ctx);
    end_poll(&ctx);
    if (!r.ok()) {
      if (stopping) break;
      if (r.error().code() == core::Code::kDeadlineExceeded) continue;
      backoff(r.error(), wait);
      continue;
    }
    wait = std::chrono::milliseconds(0);
    if (r->task_token().empty()) continue;
    process_workflow_task(*r);
  }
}

core::Result<historyv1::History> Worker::Impl::full_history(
    const ::temporal::api::common::v1::WorkflowExecution& execution) {
  historyv1::History history;
  std::string token;
  do {
    internal::wsv1::GetWorkflowExecutionHistoryRequest req;
    req.set_namespace_(conn->ns());
    *req.mutable_execution() = execution;
    req.set_next_page_token(token);
    CODEACT_TRY(auto page, conn->call(&WorkflowService::Stub::GetWorkflowExecutionHistory, req,
                                      "history of workflow " + execution.workflow_id()));
    for (auto& e : *page.mutable_history()->mutable_events()) *history.add_events() = std::move(e);
    token = page.next_page_token();
  } while (!token.empty());
  return history;
}

void Worker::Impl::respond_workflow_task_failed(const std::string& task_token,
                                                const std::string& wid, const std::string& type,
                                                enumsv1::WorkflowTaskFailedCause cause,
                                                const std::string& message) {
  core::log().warn("temporal worker: workflow task of {} ({}) failed: {}", wid, type, message);
  internal::wsv1::RespondWorkflowTaskFailedRequest req;
  req.set_namespace_(conn->ns());
  req.set_task_token(task_token);
  req.set_cause(cause);
  req.set_identity(identity);
  internal::encode_failure(Failure::application("WorkflowTaskFailure", message),
                           req.mutable_failure());
  auto r = conn->call(&WorkflowService::Stub::RespondWorkflowTaskFailed, req,
                      "fail workflow task of " + wid);
  if (!r.ok()) core::log().warn("temporal worker: {}", r.error().to_string());
}

void Worker::Impl::process_workflow_task(internal::wsv1::PollWorkflowTaskQueueResponse& task) {
  auto task_begin = std::chrono::steady_clock::now();
  const std::string wid = task.workflow_execution().workflow_id();
  const std::string run_id = task.workflow_execution().run_id();
  const std::string type = task.workflow_type().name();
  historyv1::History history = std::move(*task.mutable_history());
  std::string token = task.next_page_token();
  while (!token.empty()) {
    internal::wsv1::GetWorkflowExecutionHistoryRequest req;
    req.set_namespace_(conn->ns());
    *req.mutable_execution() = task.workflow_execution();
    req.set_next_page_token(token);
    auto page = conn->call(&WorkflowService::Stub::GetWorkflowExecutionHistory, req,
                           "history page of workflow " + wid);
    if (!page.ok()) {
      core::log().warn("temporal worker: {}; the workflow task will time out and be retried",
                       page.error().to_string());
      return;
    }
    for (auto& e : *page->mutable_history()->mutable_events()) *history.add_events() = std::move(e);
    token = page->next_page_token();
  }
  const bool from_start = history.events_size() > 0 && history.events(0).event_id() == 1;
  core::log().debug("temporal worker: workflow task for {} ({} events from {}, query: {})", wid,
                    history.events_size(), history.events_size() ? history.events(0).event_id() : 0,
                    task.has_query());

  auto respond_failed = [&](enumsv1::WorkflowTaskFailedCause cause, const std::string& message) {
    respond_workflow_task_failed(task.task_token(), wid, type, cause, message);
  };
  auto respond_query = [&](const core::Result<Json>& answer) {
    internal::wsv1::RespondQueryTaskCompletedRequest req;
    req.set_namespace_(conn->ns());
    req.set_task_token(task.task_token());
    if (answer.ok()) {
      req.set_completed_type(enumsv1::QUERY_RESULT_TYPE_ANSWERED);
      internal::encode_payloads(Args{answer.value()}, req.mutable_query_result());
    } else {
      req.set_completed_type(enumsv1::QUERY_RESULT_TYPE_FAILED);
      req.set_error_message(answer.error().message());
      internal::encode_failure(Failure::from_error(answer.error()), req.mutable_failure());
    }
    auto r = conn->call(&WorkflowService::Stub::RespondQueryTaskCompleted, req,
                        "answer query on " + wid);
    if (!r.ok()) core::log().warn("temporal worker: {}", r.error().to_string());
  };

  auto fn = workflows.find(type);
  if (fn == workflows.end()) {
    std::string msg =
        "workflow type '" + type + "' is not registered on task queue '" + options.task_queue + "'";
    if (task.has_query()) {
      respond_query(core::not_found(msg));
    } else {
      respond_failed(enumsv1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE, msg);
    }
    return;
  }
  if (task.has_query()) {  // a query on a run with no workflow task in flight: replay afresh
    if (!from_start) {
      auto full = full_history(task.workflow_execution());
      if (!full.ok()) {
        respond_query(full.error());
        return;
      }
      history = std::move(full).value();
    }
    internal::WorkflowState fresh(fn->second, conn->ns(), options.task_queue);
    fresh.set_execution(wid, run_id);
    auto st = fresh.replay(history.events(), 0);
    if (!st.ok()) {
      respond_query(st.error());
      return;
    }
    respond_query(fresh.query(task.query().query_type(),
                              internal::decode_payloads(task.query().query_args())));
    return;
  }

  // A cached run continues with the new events; anything else replays from event 1.
  std::unique_ptr<internal::WorkflowState> cached = take_cached(run_id);
  if (cached && (from_start || history.events_size() == 0 ||
                 history.events(0).event_id() != cached->last_event_id() + 1))
    cached.reset();
  if (!cached && !from_start) {
    auto full = full_history(task.workflow_execution());
    if (!full.ok()) {
      core::log().warn("temporal worker: {}; the workflow task will time out and be retried",
                       full.error().to_string());
      return;
    }
    history = std::move(full).value();
  }
  const bool cache_hit = cached != nullptr;
  std::unique_ptr<internal::WorkflowState> owned =
      cached
          ? std::move(cached)
          : std::make_unique<internal::WorkflowState>(fn->second, conn->ns(), options.task_queue);
  internal::WorkflowState& state = *owned;
  state.set_execution(wid, run_id);
  WorkflowTaskStats stats;
  stats.workflow_id = wid;
  stats.run_id = run_id;
  stats.history_length = task.started_event_id();
  stats.events_fed = history.events_size();
  stats.cache_hit = cache_hit;

  auto st = state.replay(history.events(), task.started_event_id());
  if (!st.ok()) {
    respond_failed(state.nondeterministic()
                       ? enumsv1::WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
                       : enumsv1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
                   st.error().message());
    return;
  }
  // A task whose local activities run is completed on a thread of its own, so this poller
  // goes on taking other runs' tasks meanwhile.
  if (!state.has_waiting_local_activities()) {
    complete_workflow_task(std::move(task), std::move(owned), stats, task_begin);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    ++inflight_workflow_tasks;
  }
  std::thread([self = shared_from_this(), task = std::move(task), owned = std::move(owned), stats,
               task_begin]() mutable {
    self->complete_workflow_task(std::move(task), std::move(owned), stats, task_begin);
    std::lock_guard<std::mutex> lock(self->mu);
    --self->inflight_workflow_tasks;
    self->cv.notify_all();
  }).detach();
}

void Worker::Impl::complete_workflow_task(internal::wsv1::PollWorkflowTaskQueueResponse task,
                                          std::unique_ptr<internal::WorkflowState> owned,
                                          WorkflowTaskStats stats,
                                          std::chrono::steady_clock::time_point task_begin) {
  internal::WorkflowState& state = *owned;
  const std::string wid = task.workflow_execution().workflow_id();
  const std::string run_id = task.workflow_execution().run_id();
  const std::string type = task.workflow_type().name();
  auto respond_failed = [&](enumsv1::WorkflowTaskFailedCause cause, const std::string& message) {
    respond_workflow_task_failed(task.task_token(), wid, type, cause, message);
  };
  core::Status st;
  // Local activities run here, inside the task. While one runs past most of the task's timeout,
  // the task is completed asking for a new one at once (returned in the answer), which goes on
  // waiting: a heartbeat of the workflow task.
  ActivityInfo base;
  base.workflow_id = wid;
  base.run_id = run_id;
  base.workflow_type = type;
  base.workflow_namespace = conn->ns();
  base.task_queue = options.task_queue;
  internal::LocalActivities local(base);
  auto start_local = [&] {
    for (auto& request : state.take_local_activity_requests()) {
      auto fn = activities.find(request.name);
      local.start(std::move(request), fn == activities.end() ? nullptr : &fn->second);
    }
  };
  auto task_deadline = [&] {
    return std::chrono::steady_clock::now() + state.workflow_task_timeout() * 4 / 5;
  };
  auto deadline = task_begin + state.workflow_task_timeout() * 4 / 5;
  // Queries the server held for this run while its task was busy come with the next task, and
  // are answered only when that one completes: a task that carries some is completed (as a
  // heartbeat) at once, not at 4/5 of its timeout, but at most once every kQueryAnswerDelay.
  auto last_query_answer = std::chrono::steady_clock::now() - kQueryAnswerDelay;
  auto queries_due = [&] {
    return !task.queries().empty() &&
           std::chrono::steady_clock::now() - last_query_answer >= kQueryAnswerDelay;
  };
  for (;;) {
    start_local();
    while (state.has_waiting_local_activities() && !is_stopping() && !queries_due()) {
      for (int64_t seq : local.running())
        if (!state.local_activity_waiting(seq)) local.cancel(seq);  // cancelled by the workflow
      auto outcome = local.next(
          std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200)));
      if (!outcome) {
        if (std::chrono::steady_clock::now() >= deadline) break;
        continue;
      }
      st = state.resolve_local_activity(std::move(*outcome));
      if (!st.ok()) {
        respond_failed(enumsv1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
                       st.error().message());
        return;
      }
      start_local();
    }
    if (is_stopping()) return;  // the task times out; another worker replays the run
    const bool heartbeat = state.has_waiting_local_activities() && !state.finished();
    internal::wsv1::RespondWorkflowTaskCompletedRequest req;
    req.set_namespace_(conn->ns());
    req.set_task_token(task.task_token());
    req.set_identity(identity);
    req.set_worker_instance_key(instance_key);
    for (auto& c : state.take_commands()) *req.add_commands() = std::move(c);
    if (!task.queries().empty()) last_query_answer = std::chrono::steady_clock::now();
    for (const auto& [id, q] : task.queries()) {
      auto answer = state.query(q.query_type(), internal::decode_payloads(q.query_args()));
      auto& out = (*req.mutable_query_results())[id];
      if (answer.ok()) {
        out.set_result_type(enumsv1::QUERY_RESULT_TYPE_ANSWERED);
        internal::encode_payloads(Args{answer.value()}, out.mutable_answer());
      } else {
        out.set_result_type(enumsv1::QUERY_RESULT_TYPE_FAILED);
        out.set_error_message(answer.error().message());
      }
    }
    if (heartbeat) {
      req.set_force_create_new_workflow_task(true);
      req.set_return_new_workflow_task(true);
    }
    const bool cache_it = options.max_cached_workflows > 0 && !state.finished();
    core::log().debug("temporal worker: completing workflow task for {} with {} commands{}", wid,
                      req.commands_size(), heartbeat ? " (local activities still running)" : "");
    if (cache_it) {
      auto* sticky = req.mutable_sticky_attributes();
      sticky->mutable_worker_task_queue()->set_name(sticky_queue);
      sticky->mutable_worker_task_queue()->set_kind(enumsv1::TASK_QUEUE_KIND_STICKY);
      sticky->mutable_worker_task_queue()->set_normal_name(options.task_queue);
      internal::set_duration(std::chrono::seconds(5), sticky->mutable_schedule_to_start_timeout());
    }
    // Eager activities: the server hands activities this worker can run back in its answer,
    // saving a trip through the activity task queue. One free slot is reserved for each.
    int reserved = 0;
    for (auto& c : *req.mutable_commands()) {
      if (c.command_type() != enumsv1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK) continue;
      auto* a = c.mutable_schedule_activity_task_command_attributes();
      if (a->task_queue().name() != options.task_queue ||
          !activities.count(a->activity_type().name()))
        continue;
      if (!try_reserve_activity_slot()) break;
      a->set_request_eager_execution(true);
      ++reserved;
    }
    stats.processing_time = std::chrono::steady_clock::now() - task_begin;
    // Through a short outage: past the workflow task's timeout the server hands the task out
    // again anyway.
    auto r = conn->call_retrying(&WorkflowService::Stub::RespondWorkflowTaskCompleted, req,
                                 "complete workflow task of " + wid, kRespondPatience,
                                 [this] { return is_stopping(); });
    if (r.ok() && options.on_workflow_task) options.on_workflow_task(stats);
    if (!r.ok()) {
      release_activity_slots(reserved);
      core::log().warn("temporal worker: {}", r.error().to_string());
      return;  // the state is dropped: the next task replays from the start
    }
    int launched = 0;
    for (auto& t : *r->mutable_activity_tasks()) {
      if (launched == reserved) break;  // never more than asked for
      launch_activity(std::move(t));
      ++launched;
    }
    release_activity_slots(reserved - launched);
    if (launched > 0)
      core::log().debug("temporal worker: {} eager activities for {}", launched, wid);
    if (!heartbeat) {
      if (cache_it) put_cached(run_id, std::move(owned));
      return;
    }
    // The next task of this run, handed back with only its new events: go on with it here.
    // Anything else (no task, a full history) is left to time out and be replayed elsewhere.
    if (!r->has_workflow_task() || r->workflow_task().task_token().empty()) return;
    task = std::move(*r->mutable_workflow_task());
    const auto& events = task.history().events();
    if (events.empty() || events.begin()->event_id() != state.last_event_id() + 1 ||
        !task.next_page_token().empty()) {
      core::log().warn(
          "temporal worker: the workflow task returned for {} does not continue its "
          "history; it will time out and be replayed",
          wid);
      return;
    }
    task_begin = std::chrono::steady_clock::now();
    deadline = task_deadline();
    stats.history_length = task.started_event_id();
    stats.events_fed = events.size();
    stats.cache_hit = true;
    st = state.replay(events, task.started_event_id());
    if (!st.ok()) {
      respond_failed(state.nondeterministic()
                         ? enumsv1::WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
                         : enumsv1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
                     st.error().message());
      return;
    }
  }
}

void Worker::Impl::activity_poller() {
  std::chrono::milliseconds wait{0};
  while (!stopping) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stopping || activity_slots > 0; });
      if (stopping) break;
      --activity_slots;
    }
    auto release = [&] {
      std::lock_guard<std::mutex> lock(mu);
      ++activity_slots;
      cv.notify_all();
    };
    grpc::ClientContext ctx;
    if (!begin_poll(&ctx)) {
      release();
      break;
    }
    internal::wsv1::PollActivityTaskQueueRequest req;
    req.set_namespace_(conn->ns());
    req.mutable_task_queue()->set_name(options.task_queue);
    req.mutable_task_queue()->set_kind(enumsv1::TASK_QUEUE_KIND_NORMAL);
    req.set_identity(identity);
    req.set_worker_instance_key(instance_key);
    auto r =
        conn->call(&WorkflowService::Stub::PollActivityTaskQueue, req,
                   "poll activity task queue '" + options.task_queue + "'", kPollTimeout, &ctx);
    end_poll(&ctx);
    if (!r.ok() || r->task_token().empty()) {
      release();
      if (!r.ok() && !stopping && r.error().code() != core::Code::kDeadlineExceeded)
        backoff(r.error(), wait);
      continue;
    }
    wait = std::chrono::milliseconds(0);
    launch_activity(std::move(r).value());
  }
}

void Worker::Impl::launch_activity(internal::wsv1::PollActivityTaskQueueResponse task) {
  {
    std::lock_guard<std::mutex> lock(mu);
    ++inflight_activities;
  }
  auto self = shared_from_this();
  std::thread([self, task = std::move(task)] {
    self->run_activity(task);
    std::lock_guard<std::mutex> lock(self->mu);
    ++self->activity_slots;
    --self->inflight_activities;
    self->cv.notify_all();
  }).detach();
}

void Worker::Impl::run_activity(const internal::wsv1::PollActivityTaskQueueResponse& task) {
  ActivityInfo info;
  info.activity_id = task.activity_id();
  info.activity_type = task.activity_type().name();
  info.workflow_id = task.workflow_execution().workflow_id();
  info.run_id = task.workflow_execution().run_id();
  info.workflow_type = task.workflow_type().name();
  info.workflow_namespace = task.workflow_namespace();
  info.task_queue = options.task_queue;
  info.attempt = task.attempt();
  info.heartbeat_timeout = internal::to_millis(task.heartbeat_timeout());
  info.start_to_close_timeout = internal::to_millis(task.start_to_close_timeout());
  info.task_token = task.task_token();
  core::log().debug("temporal worker: activity task {} id {} of {}", info.activity_type,
                    info.activity_id, info.workflow_id);
  auto ctx = std::make_shared<ActivityContext>(
      info, internal::decode_payloads(task.heartbeat_details()), conn);
  {
    std::lock_guard<std::mutex> lock(mu);
    running.insert(ctx);
  }
  std::string what = "activity " + info.activity_type + " (id " + info.activity_id + ", workflow " +
                     info.workflow_id + ", attempt " + std::to_string(info.attempt) + ")";

  std::optional<Json> result;
  std::optional<Failure> failure;
  bool cancelled = false;
  auto fn = activities.find(info.activity_type);
  if (fn == activities.end()) {
    failure = Failure::application("NotFound", "activity type '" + info.activity_type +
                                                   "' is not registered on task queue '" +
                                                   options.task_queue + "'");
  } else {
    try {
      auto r = fn->second(*ctx, internal::decode_payloads(task.input()));
      if (r.ok()) {
        result = std::move(r).value();
      } else if (r.error().code() == core::Code::kCancelled && ctx->cancelled()) {
        cancelled = true;
      } else {
        failure = Failure::from_error(r.error());
      }
    } catch (const ApplicationError& ex) {
      failure = ex.failure();
    } catch (const std::exception& ex) {
      failure = Failure::application("Exception", ex.what());
    } catch (...) {
      failure = Failure::application("Exception", "non-standard exception");
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    running.erase(ctx);
  }

  core::Status st;
  if (result) {
    internal::wsv1::RespondActivityTaskCompletedRequest req;
    req.set_namespace_(conn->ns());
    req.set_task_token(task.task_token());
    req.set_identity(identity);
    internal::encode_payloads(Args{*result}, req.mutable_result());
    auto r = conn->call_retrying(&WorkflowService::Stub::RespondActivityTaskCompleted, req,
                                 "complete " + what, kActivityResultPatience,
                                 [this] { return is_stopping(); });
    if (!r.ok()) st = r.error();
  } else if (cancelled) {
    internal::wsv1::RespondActivityTaskCanceledRequest req;
    req.set_namespace_(conn->ns());
    req.set_task_token(task.task_token());
    req.set_identity(identity);
    auto r = conn->call_retrying(&WorkflowService::Stub::RespondActivityTaskCanceled, req,
                                 "cancel " + what, kActivityResultPatience,
                                 [this] { return is_stopping(); });
    if (!r.ok()) st = r.error();
  } else {
    internal::wsv1::RespondActivityTaskFailedRequest req;
    req.set_namespace_(conn->ns());
    req.set_task_token(task.task_token());
    req.set_identity(identity);
    internal::encode_failure(*failure, req.mutable_failure());
    if (auto d = ctx->last_details(); d && !d->empty())
      internal::encode_payloads(*d, req.mutable_last_heartbeat_details());
    auto r =
        conn->call_retrying(&WorkflowService::Stub::RespondActivityTaskFailed, req, "fail " + what,
                            kActivityResultPatience, [this] { return is_stopping(); });
    if (!r.ok()) st = r.error();
  }
  if (!st.ok()) core::log().warn("temporal worker: {}", st.error().to_string());
}

Worker::Worker(Client client, WorkerOptions options)
    : impl_(std::make_shared<Impl>(std::move(client), std::move(options))) {
  impl_->identity =
      impl_->options.identity.empty() ? impl_->conn->identity() : impl_->options.identity;
  impl_->instance_key = internal::random_uuid();
  impl_->sticky_queue = impl_->identity + "-sticky-" + impl_->instance_key;
}

Worker::~Worker() { shutdown(); }

void Worker::register_workflow(const std::string& name, WorkflowFunction fn) {
  impl_->workflows[name] = std::move(fn);
}

void Worker::register_activity(const std::string& name, ActivityFunction fn) {
  impl_->activities[name] = std::move(fn);
}

core::Status Worker::start() {
  auto& s = *impl_;
  if (s.options.task_queue.empty())
    return core::invalid_argument("temporal worker: no task queue given");
  if (s.workflows.empty() && s.activities.empty())
    return core::invalid_argument("temporal worker on '" + s.options.task_queue +
                                  "': nothing registered");
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.started)
    return core::failed_precondition("temporal worker on '" + s.options.task_queue +
                                     "': already started");
  s.started = true;
  s.activity_slots = std::max(1, s.options.max_concurrent_activities);
  if (!s.workflows.empty()) {
    // With a cache, every other poller serves the sticky queue.
    int n = std::max(s.options.max_cached_workflows > 0 ? 2 : 1, s.options.workflow_task_pollers);
    for (int i = 0; i < n; ++i) {
      bool sticky = s.options.max_cached_workflows > 0 && i % 2 == 1;
      s.pollers.emplace_back([p = impl_, sticky] { p->workflow_poller(sticky); });
    }
  }
  if (!s.activities.empty())
    for (int i = 0; i < std::max(1, s.options.activity_task_pollers); ++i)
      s.pollers.emplace_back([p = impl_] { p->activity_poller(); });
  return core::ok_status();
}

void Worker::wait() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->stopped || impl_->stopping.load(); });
}

void Worker::shutdown(std::chrono::milliseconds deadline) {
  auto& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.started || s.stopped || s.stopping) return;
    s.stopping = true;
    s.cv.notify_all();
  }
  // Ask the server to end this worker's outstanding polls (and to send its sticky tasks to the
  // normal queue). Cancelling a poll only on our side can lose a task the server has just
  // matched to it until the task times out.
  internal::wsv1::ShutdownWorkerRequest req;
  req.set_namespace_(s.conn->ns());
  if (!s.workflows.empty() && s.options.max_cached_workflows > 0)
    req.set_sticky_task_queue(s.sticky_queue);
  req.set_identity(s.identity);
  req.set_reason("graceful shutdown");
  req.set_worker_instance_key(s.instance_key);
  req.set_task_queue(s.options.task_queue);
  if (!s.workflows.empty()) req.add_task_queue_types(enumsv1::TASK_QUEUE_TYPE_WORKFLOW);
  if (!s.activities.empty()) req.add_task_queue_types(enumsv1::TASK_QUEUE_TYPE_ACTIVITY);
  auto r = s.conn->call(&WorkflowService::Stub::ShutdownWorker, req, "shutdown worker",
                        std::chrono::seconds(2));
  if (!r.ok()) core::log().debug("temporal worker: {}", r.error().to_string());
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait_for(lock, std::chrono::seconds(r.ok() ? 1 : 0), [&] { return s.polls.empty(); });
    for (auto* ctx : s.polls) ctx->TryCancel();
  }
  for (auto& t : s.pollers) t.join();
  s.pollers.clear();
  std::unique_lock<std::mutex> lock(s.mu);
  // Tasks waiting for local activities see `stopping` within 200 ms and leave them.
  s.cv.wait_for(lock, deadline, [&] { return s.inflight_workflow_tasks == 0; });
  if (!s.cv.wait_for(lock, deadline, [&] { return s.inflight_activities == 0; })) {
    core::log().warn(
        "temporal worker: {} activities still running after the shutdown deadline; cancelling them",
        s.inflight_activities);
    for (const auto& ctx : s.running) ctx->request_cancel();
    s.cv.wait_for(lock, deadline, [&] { return s.inflight_activities == 0; });
  }
  s.stopped = true;
  s.cv.notify_all();
}

void Replayer::register_workflow(const std::string& name, WorkflowFunction fn) {
  workflows_[name] = std::move(fn);
}

core::Status Replayer::replay(const History& history) const {
  historyv1::History h;
  if (!h.ParseFromString(history.serialized))
    return core::invalid_argument("replay: history of " + history.workflow_id +
                                  " is not a serialized History");
  if (h.events_size() == 0 || !h.events(0).has_workflow_execution_started_event_attributes())
    return core::invalid_argument("replay: history of " + history.workflow_id +
                                  " does not start with WorkflowExecutionStarted");
  const auto& started = h.events(0).workflow_execution_started_event_attributes();
  auto fn = workflows_.find(started.workflow_type().name());
  if (fn == workflows_.end())
    return core::not_found("replay: workflow type '" + started.workflow_type().name() +
                           "' is not registered");
  internal::WorkflowState state(fn->second, "", started.task_queue().name());
  state.set_execution(history.workflow_id, history.run_id);
  return state.replay(h.events(), 0);
}

core::Status Replayer::replay_file(const std::string& path) const {
  CODEACT_TRY(auto history, History::load_json_file(path));
  auto st = replay(history);
  if (!st.ok()) return st.error().with_context(path);
  return st;
}

}  // namespace codeact::temporal
