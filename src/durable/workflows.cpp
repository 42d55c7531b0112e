// The workflow side of the durable agent: CodeActTaskWorkflow, CodeActChatWorkflow and the seed's
// SimpleAgentWorkflow. Deterministic code only: every effect is one of the codeact.* activities,
// reached through the durable wrappers (durable_agent.hpp) of the ONE bound agent, whose sandbox
// goes through the ONE lifecycle (codeact::SandboxRun). Inputs and results are read only through
// payloads.hpp: a malformed one fails the run with its message, nothing here throws otherwise.
//
// The activities each run schedules, in order (what tests/durable/histories holds): task —
// sandbox_start, agent_prepare, sandbox_files, (model_request, tool_call...)*, sandbox_files,
// sandbox_finish; chat — [sandbox_start,] agent_prepare, per message sandbox_files, (...)*,
// sandbox_files, then sandbox_finish. Model requests are local activities (a marker with the
// model's answer) in runs that recorded the "model-request-local" patch, normal ones before; a
// local one that ran on another host than the sandbox's is followed by a normal one on its host.
#include "codeact/durable/workflows.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "codeact/core/json_reader.hpp"
#include "codeact/core/log.hpp"
#include "codeact/core/time.hpp"
#include "codeact/durable/activities.hpp"
#include "codeact/durable/chat_fork.hpp"
#include "codeact/durable/durable_agent.hpp"
#include "codeact/durable/sandbox_host.hpp"
#include "codeact/temporal/workflow.hpp"

namespace codeact::durable {
namespace {

using core::Result;
using temporal::ApplicationError;
using temporal::WorkflowContext;

[[noreturn]] void fail_with(const core::Error& e) {
  throw ApplicationError(temporal::Failure::from_error(e));
}

[[noreturn]] void fail_cancelled(const std::string& message) {
  temporal::Failure f;
  f.kind = temporal::FailureKind::kCanceled;
  f.code = core::Code::kCancelled;
  f.message = message;
  throw ApplicationError(std::move(f));
}

// What the model reads as its answer to a message whose turn was cancelled (cancel_turn).
constexpr const char* kCancelledTurnNote =
    "(The user cancelled this request before it was finished. The cells that had finished kept "
    "their variables and files; the cell that was running was interrupted.)";

// Marks runs whose model requests are local activities (runs recorded before made them normal
// activities on the sandbox's host queue, and replay so).
constexpr const char* kLocalModelRequestPatch = "model-request-local";

// Marks runs that treat a ScheduleToStart timeout anywhere in the chain as a lost host.
constexpr const char* kHostLostAfterHeartbeatPatch = "host-lost-after-heartbeat";

// Whether an activity failed because no worker took it within its schedule-to-start timeout: its
// own failure or one of its causes (a retry after a heartbeat timeout fails as ScheduleToStart
// caused by Heartbeat).
bool not_taken_in_time(const temporal::Failure& failure) {
  for (const temporal::Failure* f = &failure; f != nullptr; f = f->cause.get()) {
    if (f->kind == temporal::FailureKind::kTimeout && f->timeout_type == "ScheduleToStart")
      return true;
  }
  return false;
}

// The workflow's way to the worker: activities with the policies' options, sent where the run's
// sandbox lives (SandboxHost), its cancel state and its deterministic clock.
//
// A chat cancels one turn without cancelling the workflow: cancel_turn() asks the activities in
// flight to cancel and makes cancel_requested() true until clear_turn_cancel(), so the agent loop
// ends the turn as cancelled at its next step.
class WorkflowActivityCaller final : public ActivityCaller {
 public:
  // `local_model_requests`: the run's choice (ActivityPolicies), fixed for the run.
  WorkflowActivityCaller(WorkflowContext& ctx, SandboxHost host, bool local_model_requests)
      : ctx_(ctx), host_(std::move(host)), local_model_requests_(local_model_requests) {}
  agent::Task<Result<Json>> call(std::string activity, Json input, ActivityPolicy policy) override {
    Result<temporal::ActivityOptions> o = activity_options(policy);
    if (!o.ok()) co_return std::move(o).error().with_context(activity);
    // A model request first runs as a local activity, in the worker that took the workflow
    // task, with only its answer in history (not the conversation it sends). Its instructions
    // read the sandbox, so a worker of another host refuses (kSandboxElsewhereType) and the
    // request goes to the sandbox's host queue like any other activity.
    if (activity == kModelRequestActivity && local_model_requests_ &&
        ctx_.patched(kLocalModelRequestPatch)) {
      temporal::LocalActivityOptions lo;
      lo.start_to_close_timeout = o->start_to_close_timeout;
      lo.retry_policy = o->retry_policy;
      if (!host_.host().empty() && input.is_object()) input["sandbox_host"] = host_.host();
      auto act = ctx_.execute_local_activity(activity, input, lo);
      in_flight_.insert(&act);
      temporal::ActivityResult r = co_await act;
      in_flight_.erase(&act);
      if (r.ok()) co_return std::move(r).value();
      if (r.failure().root_cause().type != kSandboxElsewhereType) co_return r.failure().to_error();
      input.erase("sandbox_host");  // the host queue's worker is the sandbox's host, or gone
    }
    // What a move starts again: the same sandbox, never a fork (its state is there already).
    if (activity == kSandboxStartActivity) start_again_with(input, policy);
    for (int moves = 0;; ++moves) {
      const std::string sent_to = host_.host();
      const ActivityRoute route = host_.route();
      o->task_queue = route.task_queue;
      o->schedule_to_start_timeout = route.schedule_to_start;
      auto act = ctx_.execute_activity(activity, input, *o);
      in_flight_.insert(&act);
      temporal::ActivityResult r = co_await act;
      in_flight_.erase(&act);
      if (r.ok()) {
        host_.learn(activity, r.value());
        Json out = std::move(r).value();
        if (activity == kToolCallActivity && !host_.move_note().empty() && out.is_object() &&
            out.contains("text") && out["text"].is_string()) {
          out["text"] = host_.move_note() + out["text"].get<std::string>();
          host_.take_move_note();
        }
        co_return out;
      }
      // Runs recorded before kHostLostAfterHeartbeatPatch looked at the root cause only.
      const temporal::Failure& root = r.failure().root_cause();
      const bool root_not_taken =
          root.kind == temporal::FailureKind::kTimeout && root.timeout_type == "ScheduleToStart";
      if (!root_not_taken &&
          !(not_taken_in_time(r.failure()) && ctx_.patched(kHostLostAfterHeartbeatPatch)))
        co_return r.failure().to_error();
      // Its host did not take it. On shared storage the sandbox moves to a live host (the start
      // again, on the run's queue), and the activity runs there; else the run fails saying why.
      if (moves >= kMaxMoves) co_return host_.lost(activity);
      if (moving_) {  // another activity of the run is moving the sandbox: wait, then go there
        co_await ctx_.wait_condition([this] { return !moving_; });
        continue;
      }
      if (host_.host() != sent_to) continue;  // moved since this one was sent: go there
      if (!host_.can_move() || last_start_.is_null()) co_return host_.lost(activity);
      moving_ = true;
      host_.move_away(activity);
      Result<Json> placed = co_await call(kSandboxStartActivity, last_start_, last_start_policy_);
      moving_ = false;
      if (!placed.ok()) host_.move_failed();
      if (!placed.ok() || activity == kSandboxStartActivity) co_return placed;
    }
  }
  // The start a move runs again when this run did not start the sandbox itself (a chat's run
  // after a continue-as-new): `input` of codeact.sandbox_start, sent with `policy`.
  void start_again_with(Json input, ActivityPolicy policy) {
    last_start_ = std::move(input);
    if (last_start_.is_object()) last_start_.erase("fork_from");
    last_start_policy_ = policy;
  }
  // Where the run's sandbox lives ("" until its start said, or for a run recorded before hosts).
  const std::string& host() const { return host_.host(); }
  // Whether its storage is shared (it may move to another host).
  bool shared() const { return host_.shared(); }
  bool cancel_requested() const override { return turn_cancelled_ || ctx_.cancel_requested(); }
  std::string now() override { return core::format_rfc3339(ctx_.now()); }

  void cancel_turn() {
    turn_cancelled_ = true;
    for (auto* act : in_flight_) act->cancel();
  }
  bool turn_cancelled() const { return turn_cancelled_; }
  void clear_turn_cancel() { turn_cancelled_ = false; }

 private:
  // How many times one activity moves the sandbox before the run gives up (each move is a host
  // lost after the host timeout).
  static constexpr int kMaxMoves = 3;

  WorkflowContext& ctx_;
  SandboxHost host_;
  const bool local_model_requests_;
  Json last_start_;  // the input of the last codeact.sandbox_start (null before one)
  ActivityPolicy last_start_policy_;
  bool moving_ = false;  // a call() is starting the sandbox on another host
  std::set<temporal::ActivityAwaitable*> in_flight_;  // awaited by call() frames that are alive
  bool turn_cancelled_ = false;
};

// What the queries read; owned by the query handlers (a query may come after the frame is gone).
struct RunView {
  std::vector<Json> events;  // agent events (agent::to_json), and "sandbox" / "files" events
  std::string status = "starting";
  std::string sandbox_id;
  std::string run_id;  // this workflow run: `next` restarts at 0 after a continue-as-new

  ProgressReply progress(const temporal::Args& args) const {
    int64_t since = 0;
    if (!args.empty() && args[0].is_object()) since = core::json_int(args[0], "since");
    if (!args.empty() && args[0].is_number_integer()) since = args[0].get<int64_t>();
    ProgressReply out;
    for (size_t i = static_cast<size_t>(std::max<int64_t>(since, 0)); i < events.size(); ++i)
      out.events.push_back(events[i]);
    out.next = static_cast<int64_t>(events.size());
    out.status = status;
    out.sandbox_id = sandbox_id;
    out.run_id = run_id;
    return out;
  }

  // Ends the run as cancelled with `message`. The message is also the last progress event: a
  // cancelled workflow's result carries no message, the live view (and a final query) does.
  [[noreturn]] void cancelled(const std::string& message) {
    events.push_back(Json{{"event_kind", "cancelled"}, {"message", message}});
    fail_cancelled(message);
  }

  // Fails the run with `e`, which is also the last progress event ("run_failed").
  [[noreturn]] void failed(const core::Error& e) {
    status = "failed";
    events.push_back(Json{{"event_kind", "run_failed"}, {"error", e.message()}});
    fail_with(e);
  }

  // A message the agent is about to answer (a task run's task is its turn 1).
  void user_message(const std::string& task, size_t turn) {
    events.push_back(Json{{"event_kind", "user_message"}, {"task", task}, {"turn", turn}});
  }

  // The sandbox's lifecycle as the live view shows it.
  void on(const codeact::SandboxRunEvent& e) {
    using Kind = codeact::SandboxRunEvent::Kind;
    switch (e.kind) {
      case Kind::kStarted: {
        Json ev{{"event_kind", "sandbox"},
                {"sandbox_id", e.sandbox_id},
                {"resumed", e.started.resumed}};
        if (!e.started.host.empty()) ev["host"] = e.started.host;
        events.push_back(std::move(ev));
        status = "running";
        break;
      }
      case Kind::kFiles:
        events.push_back(Json{{"event_kind", "files"}, {"files", e.files}});
        break;
      case Kind::kClosing:
        status = e.end == codeact::SandboxEnd::kRemove ? "cleaning up" : "finishing";
        break;
      case Kind::kStarting:
      case Kind::kClosed:
        break;
    }
  }
};

// Where the run's sandbox lives: the input's host, or the one its start reports.
SandboxHost sandbox_host(WorkflowContext& ctx, const TaskInput& in) {
  return SandboxHost(
      ctx.info().task_queue, in.host,
      std::chrono::milliseconds(static_cast<int64_t>(in.activities.host_timeout_seconds * 1000)),
      in.shared_storage);
}

AgentTarget target_of(const TaskInput& in) {
  AgentTarget t;
  t.agent = in.agent;
  t.bind.model = in.model;
  t.bind.tools = in.tools;
  t.bind.mcp_servers = in.mcp_servers;
  return t;
}

codeact::SandboxPlan plan_of(const TaskInput& in, const std::string& sandbox_id) {
  codeact::SandboxPlan p;
  p.sandbox_id = sandbox_id;
  p.python_packages = in.python_packages;
  p.system_packages = in.system_packages;
  p.network = in.network;
  p.disk = in.disk;
  p.keep_sandbox = in.keep_sandbox;
  p.remove_volume = in.remove_volume;
  p.fork_from = in.fork_from;
  return p;
}

// What closing a run's sandbox did (or failed to do), as the user is told it: "its sandbox "x"
// was removed (volume kept)". `closed` is the close's status.
std::string sandbox_fate(const codeact::SandboxPlan& plan, bool success,
                         const core::Status& closed) {
  const std::string sandbox = "its sandbox \"" + plan.sandbox_id + "\"";
  switch (plan.end(success)) {
    case codeact::SandboxEnd::kKeep:
      return sandbox + " was left running (keep_sandbox; volume kept" +
             (plan.remove_volume ? ", remove_volume does not apply to a kept sandbox)" : ")");
    case codeact::SandboxEnd::kStop:
      if (!closed.ok()) return "stopping " + sandbox + " failed: " + closed.error().message();
      return sandbox + " was stopped (volume kept)";
    case codeact::SandboxEnd::kRemove:
      if (!closed.ok()) {
        return "removing " + sandbox + (plan.remove_volume ? " and its volume" : "") +
               " failed: " + closed.error().message();
      }
      return sandbox + (plan.remove_volume ? " was removed with its volume (remove_volume)"
                                           : " was removed (volume kept)");
  }
  return sandbox;
}

agent::RunOptions run_options(const TaskInput& in, std::vector<llm::ModelMessage> history,
                              const std::string& sandbox_id, std::string run_id, RunView& view) {
  agent::RunOptions ro;
  ro.message_history = std::move(history);
  ro.deps = Json{{"sandbox_id", sandbox_id}};
  ro.usage_limits = in.usage_limits;
  ro.run_id = std::move(run_id);
  ro.on_event = [&view](const agent::AgentEvent& e) { view.events.push_back(agent::to_json(e)); };
  return ro;
}

Json usage_json(const agent::AgentRunResult& run) {
  Json usage = llm::to_json(run.usage);
  usage["tool_calls"] = run.tool_calls;
  return usage;
}

std::string run_id_of(WorkflowContext& ctx) {
  const auto& info = ctx.info();
  // The whole run id: ids of runs started close together share a prefix (UUIDv7 starts with a
  // timestamp), and a reused workflow id must never replay another run's cells.
  return info.workflow_id + "/" + info.first_execution_run_id;
}

// ---------------------------------------------------------------------------------------------

temporal::Task<Json> task_workflow(WorkflowContext& ctx, temporal::Args args) {
  if (args.empty()) {
    throw ApplicationError(
        "InvalidArgument",
        std::string(kTaskWorkflow) + " takes one argument: a task or a TaskInput object", true);
  }
  auto parsed = TaskInput::from_json(args[0]);
  if (!parsed.ok()) fail_with(parsed.error());
  const TaskInput in = std::move(*parsed);
  if (in.task.empty()) throw ApplicationError("InvalidArgument", "the task is empty", true);
  const std::string sandbox_id = in.sandbox_id.empty() ? ctx.info().workflow_id : in.sandbox_id;

  auto shared_view = std::make_shared<RunView>();
  RunView& view = *shared_view;
  view.sandbox_id = sandbox_id;
  view.run_id = ctx.info().run_id;
  ctx.set_query_handler(kProgressQuery, [shared_view](const temporal::Args& a) {
    return shared_view->progress(a).to_json();
  });

  view.user_message(in.task, 1);

  WorkflowActivityCaller caller(ctx, sandbox_host(ctx, in), in.activities.local_model_requests);
  ActivityRunSteps steps(caller, target_of(in), in.activities);
  codeact::SandboxRun run(steps, plan_of(in, sandbox_id),
                          [&view](const codeact::SandboxRunEvent& e) { view.on(e); });
  auto task = codeact::run_task_in_sandbox(
      run, in.task, run_options(in, in.message_history, sandbox_id, run_id_of(ctx), view),
      [&ctx] { return ctx.cancel_requested(); });
  codeact::TaskRunOutcome out = co_await task;

  if (!out.opened) view.failed(out.run.error());  // the start's error, and its cleanup's
  if (out.cancelled) {
    view.status = "cancelled";
    view.cancelled("the run was cancelled; " +
                   sandbox_fate(plan_of(in, sandbox_id), /*success=*/false, out.closed));
  }
  if (!out.run.ok()) view.failed(codeact::with_cleanup(out.run.error(), out.closed));
  view.status = "completed";

  TaskOutput result;
  result.output = out.run->output_text();
  result.workflow_id = ctx.info().workflow_id;
  result.sandbox_id = sandbox_id;
  result.files = out.files;
  result.usage = usage_json(*out.run);
  result.model = out.model_name;
  result.agent = in.agent;
  result.run_id = out.run->run_id;
  // The answer stands even if stopping the sandbox failed; the user is told.
  if (!out.closed.ok())
    result.warning =
        "stopping sandbox \"" + sandbox_id + "\" failed: " + out.closed.error().message();
  co_return result.to_json();
}

// The seed's SimpleAgentWorkflow.run(user_task: str) -> str.
temporal::Task<Json> simple_agent_workflow(WorkflowContext& ctx, temporal::Args args) {
  auto inner = task_workflow(ctx, std::move(args));
  Json out = co_await inner;
  co_return Json(core::json_string(out, "output"));
}

// ---------------------------------------------------------------------------------------------

temporal::Task<Json> chat_workflow(WorkflowContext& ctx, temporal::Args args) {
  auto parsed = ChatInput::from_json(args.empty() ? Json::object() : args[0]);
  if (!parsed.ok()) fail_with(parsed.error());
  // Signal and query handlers own what they touch: a query may come after the frame is gone.
  auto shared_chat = std::make_shared<ChatInput>(std::move(*parsed));
  ChatInput& chat = *shared_chat;
  const TaskInput& in = chat.base;
  const std::string sandbox_id = in.sandbox_id.empty() ? ctx.info().workflow_id : in.sandbox_id;

  struct ChatState {
    RunView view;
    bool stop = false;
    bool busy = false;
    std::vector<RejectedMessage> rejected;   // send_user_task signals of this run, not messages
    std::vector<llm::ModelMessage> history;  // the conversation the model reads
  };
  auto st = std::make_shared<ChatState>();
  std::vector<llm::ModelMessage>& history = st->history;
  history = in.message_history;
  RunView& view = st->view;
  view.sandbox_id = sandbox_id;
  view.run_id = ctx.info().run_id;
  // A malformed message must not fail the workflow task (the server would retry it without end):
  // it is logged and shown in "progress" and "agent_output", and the chat goes on.
  ctx.set_signal_handler(kSendUserTask, [shared_chat, st, &ctx](const temporal::Args& a) {
    auto message = a.empty() ? Result<ChatMessage>(core::invalid_argument(
                                   "the signal carried no message (a string or {\"task\": ...})"))
                             : ChatMessage::from_json(a[0]);
    // Before messages had ids, one with an "id" was refused (an unknown key) and ran no turn:
    // a run recorded then by an older worker replays so.
    if (message.ok() && !message->id.empty() && !ctx.patched(kChatMessageIdPatch))
      message = core::invalid_argument("a chat message: unknown key \"id\"");
    if (message.ok()) {
      shared_chat->pending.push_back(std::move(*message));
      return;
    }
    RejectedMessage m;
    m.sent = a.empty() ? "" : core::json_preview(a[0]);
    m.error = message.error().message();
    if (!ctx.is_replaying()) {
      core::log().warn("chat {}: a {} signal was not a message and is ignored: {} (sent: {})",
                       ctx.info().workflow_id, kSendUserTask, m.error, m.sent);
    }
    st->view.events.push_back(Json{{"event_kind", "message_rejected"},
                                   {"signal", kSendUserTask},
                                   {"sent", m.sent},
                                   {"error", m.error}});
    st->rejected.push_back(std::move(m));
  });
  ctx.set_signal_handler(kStopChat, [st](const temporal::Args&) { st->stop = true; });
  // Cancels the turn that runs (nothing when none does): its activities are asked to cancel, the
  // turn ends as cancelled, and the chat waits for the next message. Runs recorded before this
  // signal existed never carry it, so they replay as they ran.
  auto caller = std::make_shared<WorkflowActivityCaller>(ctx, sandbox_host(ctx, in),
                                                         in.activities.local_model_requests);
  ctx.set_signal_handler(kCancelTurn, [st, caller](const temporal::Args&) {
    if (st->busy) caller->cancel_turn();
  });
  ctx.set_query_handler(kProgressQuery,
                        [st](const temporal::Args& a) { return st->view.progress(a).to_json(); });
  ctx.set_query_handler(kAgentOutputQuery, [shared_chat, st, sandbox_id](const temporal::Args&) {
    AgentOutputReply reply;
    reply.turns = shared_chat->turns;
    reply.pending = static_cast<int64_t>(shared_chat->pending.size());
    reply.status = st->busy ? "running" : st->view.status;
    reply.sandbox_id = sandbox_id;
    reply.rejected = st->rejected;
    return reply.to_json();
  });
  ctx.set_query_handler(
      kConversationQuery, [shared_chat, st, caller, sandbox_id](const temporal::Args&) {
        ConversationReply reply;
        reply.base = shared_chat->base;
        reply.base.sandbox_id = sandbox_id;
        reply.base.host = caller->host();  // a fork starts beside its source's sandbox
        reply.base.message_history.clear();
        reply.turns = shared_chat->turns;
        reply.messages = st->history;
        return reply.to_json();
      });
  bool& stop = st->stop;
  bool& busy = st->busy;

  ActivityRunSteps steps(*caller, target_of(in), in.activities);
  codeact::SandboxRun run(steps, plan_of(in, sandbox_id),
                          [&view](const codeact::SandboxRunEvent& e) { view.on(e); });
  if (!chat.sandbox_started) {
    auto open_task = run.open();
    Result<codeact::SandboxStarted> opened = co_await open_task;
    if (!opened.ok()) view.failed(opened.error());  // the start's error, and its cleanup's
    chat.sandbox_started = true;
  } else {
    // The run before this one started it; a move starts it again as that run would have.
    caller->start_again_with(SandboxStartInput{plan_of(in, sandbox_id)}.to_json(),
                             in.activities.sandbox);
  }
  auto prepare_task = run.prepare();
  Result<codeact::PreparedAgent> prepared = co_await prepare_task;
  if (!prepared.ok()) {
    view.status = "failed";
    auto close_task = run.close(false);
    core::Status closed = co_await close_task;
    view.failed(codeact::with_cleanup(prepared.error(), closed));
  }

  view.status = "idle";
  std::string reason;
  int turns_this_run = 0;
  const auto idle =
      std::chrono::milliseconds(static_cast<int64_t>(chat.idle_timeout_seconds * 1000));
  while (true) {
    auto wait = ctx.wait_condition(
        [&] { return stop || !chat.pending.empty() || ctx.cancel_requested(); }, idle);
    bool woke = co_await wait;
    if (ctx.cancel_requested()) {
      reason = "cancelled";
      break;
    }
    if (stop) {
      reason = "stopped";
      break;
    }
    if (!woke) {
      reason = "idle";
      break;
    }
    const ChatMessage message = chat.pending.front();
    chat.pending.erase(chat.pending.begin());
    const std::string& task = message.task;
    busy = true;
    view.user_message(task, chat.turns.size() + 1);
    const std::string run_id = run_id_of(ctx) + "/" + std::to_string(chat.turns.size() + 1);
    auto turn_task = run.turn(*prepared, task, run_options(in, history, sandbox_id, run_id, view));
    codeact::TurnResult turn = co_await turn_task;
    busy = false;
    const bool turn_cancelled =
        caller->turn_cancelled() && !turn.run.ok() && !ctx.cancel_requested();
    caller->clear_turn_cancel();
    ChatTurn done;
    done.task = task;
    done.message_id = message.id;
    if (turn_cancelled) {
      // What the turn did is left out of the conversation (its cells are not undone: the
      // sandbox goes on); the model is told the message was cancelled, so the next one reads
      // in context.
      done.error = kCancelledTurnError;
      history.push_back(llm::ModelRequest::user_prompt(task));
      llm::ModelResponse note;
      note.parts.push_back(llm::TextPart{kCancelledTurnNote});
      note.timestamp = caller->now();
      history.push_back(std::move(note));
      view.events.push_back(Json{{"event_kind", "turn_cancelled"},
                                 {"turn", chat.turns.size() + 1},
                                 {"message", *done.error}});
    } else if (turn.run.ok()) {
      done.checkpoint = last_checkpoint(turn.run->messages, sandbox_id);
      if (!done.checkpoint && !chat.turns.empty()) done.checkpoint = chat.turns.back().checkpoint;
      history = turn.run->messages;
      done.output = turn.run->output_text();
      done.files = turn.files;
      done.usage = usage_json(*turn.run);
    } else {
      if (turn.run.error().code() == core::Code::kCancelled) {
        reason = "cancelled";
        break;
      }
      done.error = turn.run.error().message();
      view.events.push_back(Json{
          {"event_kind", "turn_failed"}, {"turn", chat.turns.size() + 1}, {"error", *done.error}});
    }
    chat.turns.push_back(std::move(done));
    if (++turns_this_run >= chat.max_turns_per_run || ctx.continue_as_new_suggested()) {
      ChatInput next = chat;
      next.runs = chat.runs + 1;
      next.base.message_history = history;
      next.base.sandbox_id = sandbox_id;
      next.base.host = caller->host();
      next.base.shared_storage = caller->shared();
      ctx.continue_as_new(temporal::Args{next.to_json()});
    }
  }

  view.status = "finishing";
  auto close_task = run.close(reason != "cancelled");
  core::Status closed = co_await close_task;
  view.status = reason;
  if (reason == "cancelled") {
    view.cancelled("the chat was cancelled; " +
                   sandbox_fate(plan_of(in, sandbox_id), /*success=*/false, closed));
  }
  ChatOutput result;
  result.turns = chat.turns;
  result.sandbox_id = sandbox_id;
  result.reason = reason;
  result.runs = chat.runs;
  if (!closed.ok())
    result.warning = "stopping sandbox \"" + sandbox_id + "\" failed: " + closed.error().message();
  co_return result.to_json();
}

}  // namespace

core::Result<temporal::ActivityOptions> activity_options(const ActivityPolicy& p) {
  using std::chrono::milliseconds;
  auto millis = [](const char* key, double seconds) -> Result<milliseconds> {
    // Checked before the cast: a NaN or out-of-range double cast to an integer is undefined.
    if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxPolicySeconds) {
      return core::invalid_argument(
          fmt::format("activity option {} must be between 0 and {} seconds, not {}", key,
                      kMaxPolicySeconds, seconds));
    }
    return milliseconds(static_cast<int64_t>(seconds * 1000));
  };
  temporal::ActivityOptions o;
  CODEACT_TRY(o.start_to_close_timeout, millis("start_to_close_seconds", p.start_to_close_seconds));
  CODEACT_TRY(auto heartbeat, millis("heartbeat_seconds", p.heartbeat_seconds));
  if (heartbeat.count() > 0) o.heartbeat_timeout = heartbeat;
  temporal::RetryPolicy retry;
  CODEACT_TRY(retry.initial_interval, millis("initial_retry_seconds", p.initial_retry_seconds));
  retry.maximum_interval = std::max(retry.initial_interval, milliseconds(30000));
  retry.maximum_attempts = p.max_attempts;
  o.retry_policy = retry;
  return o;
}

std::vector<std::pair<std::string, temporal::WorkflowFunction>> workflow_functions() {
  return {{kTaskWorkflow, task_workflow},
          {kChatWorkflow, chat_workflow},
          {kSimpleAgentWorkflow, simple_agent_workflow}};
}

void register_codeact_workflows(temporal::Replayer& replayer) {
  for (auto& [name, fn] : workflow_functions()) replayer.register_workflow(name, fn);
}

}  // namespace codeact::durable
